package buildinfo

import (
	"runtime/debug"
	"testing"
)

func settings(kv ...string) []debug.BuildSetting {
	var s []debug.BuildSetting
	for i := 0; i+1 < len(kv); i += 2 {
		s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
	}
	return s
}

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	const rev = "4257cc9c0d2e1f3a5b6c7d8e9f00112233445566"
	checkout := &debug.BuildInfo{
		Main:     debug.Module{Path: "github.com/refretry/refretry", Version: Devel},
		Settings: settings("-trimpath", "true", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-30T10:00:00Z", "vcs.modified", "false"),
	}
	tests := []struct {
		name  string
		stamp Stamp
		bi    *debug.BuildInfo
		want  Info
	}{{
		name:  "release build: everything stamped",
		stamp: Stamp{Version: "v1.2.3", Commit: rev, Date: "2026-12-01T08:00:00Z"},
		bi:    &debug.BuildInfo{Main: debug.Module{Version: Devel}},
		want:  Info{Version: "v1.2.3", Commit: rev, Date: "2026-12-01T08:00:00Z"},
	}, {
		name:  "stamped values win over the checkout's",
		stamp: Stamp{Version: "v1.2.3", Commit: "abc", Date: "yesterday"},
		bi:    checkout,
		want:  Info{Version: "v1.2.3", Commit: "abc", Date: "yesterday"},
	}, {
		name:  "only the version stamped: the rest from vcs",
		stamp: Stamp{Version: "v1.2.3"},
		bi:    checkout,
		want:  Info{Version: "v1.2.3", Commit: rev, Date: "2026-11-30T10:00:00Z"},
	}, {
		name: "go install @tag: the module version, no vcs",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
		want: Info{Version: "v1.4.0"},
	}, {
		name: "go install @commit: the pseudo-version's time and revision",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130100000-4257cc9c0d2e"}},
		want: Info{Version: "v0.0.0-20261130100000-4257cc9c0d2e", Commit: "4257cc9c0d2e", Date: "2026-11-30T10:00:00Z"},
	}, {
		name: "pseudo-version after a tag",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.4.1-0.20261130100000-4257cc9c0d2e"}},
		want: Info{Version: "v1.4.1-0.20261130100000-4257cc9c0d2e", Commit: "4257cc9c0d2e", Date: "2026-11-30T10:00:00Z"},
	}, {
		name: "pseudo-version after a pre-release",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.5.0-rc.1.0.20261130100000-4257cc9c0d2e"}},
		want: Info{Version: "v1.5.0-rc.1.0.20261130100000-4257cc9c0d2e", Commit: "4257cc9c0d2e", Date: "2026-11-30T10:00:00Z"},
	}, {
		name: "a pre-release tag is not a pseudo-version",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.5.0-rc.1"}},
		want: Info{Version: "v1.5.0-rc.1"},
	}, {
		name: "go build in a checkout, Go before 1.24",
		bi:   checkout,
		want: Info{Version: Devel, Commit: rev, Date: "2026-11-30T10:00:00Z"},
	}, {
		name: "go build in a modified checkout, Go 1.24 and later",
		bi: &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261130100000-4257cc9c0d2e+dirty"},
			Settings: settings("vcs.revision", rev, "vcs.time", "2026-11-30T10:00:00Z", "vcs.modified", "true"),
		},
		want: Info{Version: "v0.0.0-20261130100000-4257cc9c0d2e+dirty", Commit: rev, Date: "2026-11-30T10:00:00Z", Modified: true},
	}, {
		name: "go build with -buildvcs=false",
		bi:   &debug.BuildInfo{Main: debug.Module{Version: Devel}},
		want: Info{Version: Devel},
	}, {
		name: "no build information at all",
		want: Info{Version: Devel},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := FromBuildInfo(tt.stamp, tt.bi); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestReadUnstamped: a test binary has no stamped values, and its main module is
// the test's, so Read must report at least a version.
func TestReadUnstamped(t *testing.T) {
	t.Parallel()
	if version != "" || commit != "" || date != "" {
		t.Skip("built with stamped values")
	}
	if got := Read(); got.Version == "" {
		t.Errorf("Read() = %+v: no version", got)
	}
}
