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
		{"nothing", nil, Text},
		{"github", map[string]string{"GITHUB_ACTIONS": "true"}, GitHub},
		{"gitlab", map[string]string{"GITLAB_CI": "true"}, GitLab},
		{"both: github first", map[string]string{"GITHUB_ACTIONS": "true", "GITLAB_CI": "true"}, GitHub},
		{"github false", map[string]string{"GITHUB_ACTIONS": "false"}, Text},
		{"github empty", map[string]string{"GITHUB_ACTIONS": ""}, Text},
		{"github TRUE is not true", map[string]string{"GITHUB_ACTIONS": "TRUE"}, Text},
		{"gitlab 1 is not true", map[string]string{"GITLAB_CI": "1"}, Text},
		{"generic CI only", map[string]string{"CI": "true"}, Text},
		{"github false, gitlab true", map[string]string{"GITHUB_ACTIONS": "false", "GITLAB_CI": "true"}, GitLab},
		{"other CI systems", map[string]string{"CI": "true", "JENKINS_URL": "http://ci", "BUILDKITE": "true"}, Text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tt.env[k] }
			if got := Detect(getenv); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
			if got := Auto.Resolve(getenv); got != tt.want {
				t.Errorf("Auto.Resolve = %q, want %q", got, tt.want)
			}
			if got := JSON.Resolve(getenv); got != JSON {
				t.Errorf("JSON.Resolve = %q: an explicit format must not be overridden", got)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"auto": Auto, "text": Text, "JSON": JSON, " github ": GitHub, "GitLab": GitLab} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yaml", "git-hub", "logfmt"} {
		if _, err := ParseFormat(in); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("ParseFormat(%q) error %v, want ErrUnknownFormat", in, err)
		}
	}
}
