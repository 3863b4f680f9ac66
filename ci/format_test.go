package ci

import (
	"errors"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want Format
	}{
		{"nothing", nil, formatText},
		{"github", map[string]string{"GITHUB_ACTIONS": "true"}, formatGitHub},
		{"gitlab", map[string]string{"GITLAB_CI": "true"}, formatGitLab},
		{"both: github first", map[string]string{"GITHUB_ACTIONS": "true", "GITLAB_CI": "true"}, formatGitHub},
		{"github false", map[string]string{"GITHUB_ACTIONS": "false"}, formatText},
		{"github empty", map[string]string{"GITHUB_ACTIONS": ""}, formatText},
		{"github TRUE is not true", map[string]string{"GITHUB_ACTIONS": "TRUE"}, formatText},
		{"gitlab 1 is not true", map[string]string{"GITLAB_CI": "1"}, formatText},
		{"generic CI only", map[string]string{"CI": "true"}, formatText},
		{"github false, gitlab true", map[string]string{"GITHUB_ACTIONS": "false", "GITLAB_CI": "true"}, formatGitLab},
		{"other CI systems", map[string]string{"CI": "true", "JENKINS_URL": "http://ci", "BUILDKITE": "true"}, formatText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tt.env[k] }
			if got := Detect(getenv); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
			if got := formatAuto.Resolve(getenv); got != tt.want {
				t.Errorf("Format(\"auto\").Resolve = %q, want %q", got, tt.want)
			}
			if got := formatJSON.Resolve(getenv); got != formatJSON {
				t.Errorf("Format(\"json\").Resolve = %q: an explicit format must not be overridden", got)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"auto": formatAuto, "text": formatText, "JSON": formatJSON, " github ": formatGitHub, "GitLab": formatGitLab} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yaml", "git-hub", "logfmt"} {
		if _, err := ParseFormat(in); !errors.Is(err, errUnknownFormat) {
			t.Errorf("ParseFormat(%q) error %v, want errUnknownFormat", in, err)
		}
	}
}
