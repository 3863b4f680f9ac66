// Package buildinfo says which refretry this is: its version, the commit it was built
// from and when. A release build has them stamped in by the linker:
//
//	go build -ldflags "-X github.com/refretry/refretry/internal/buildinfo.version=v1.2.3
//	  -X github.com/refretry/refretry/internal/buildinfo.commit=<full hash>
//	  -X github.com/refretry/refretry/internal/buildinfo.date=<RFC 3339 time>"
//
// (.goreleaser.yaml does this). Anything not stamped comes from the build information
// the Go toolchain embeds: the module version for `go install …@v1.2.3`, the
// revision encoded in a pseudo-version, and the vcs.* settings of a build in a checkout.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"sync"
)

// Set by the linker (-X); empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Devel is the version of a build that has neither a stamped version nor a module
// version, as the Go toolchain itself calls it.
const Devel = "(devel)"

// Info is what is known about this build. Empty strings mean unknown.
type Info struct {
	Version  string // v1.2.3, a pseudo-version, or Devel
	Commit   string // the revision: the full hash, or the 12-digit prefix a pseudo-version holds
	Date     string // the commit's or the build's time, as it was given (RFC 3339 from Go and GoReleaser)
	Modified bool   // built from a checkout with uncommitted changes
}

// Stamp is the set of values the linker may have set.
type Stamp struct {
	Version, Commit, Date string
}

// Read returns this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(Stamp{version, commit, date}, bi)
}

// FromBuildInfo combines stamped values with the toolchain's build information (bi
// may be nil, as debug.ReadBuildInfo returns for a binary built without modules). A
// stamped value wins over what bi says; what is not stamped is filled from bi.
func FromBuildInfo(s Stamp, bi *debug.BuildInfo) Info {
	info := Info{Version: s.Version, Commit: s.Commit, Date: s.Date}
	var modVersion, revision, vcsTime string
	if bi != nil {
		modVersion = bi.Main.Version
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				revision = kv.Value
			case "vcs.time":
				vcsTime = kv.Value
			case "vcs.modified":
				info.Modified = kv.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = modVersion
	}
	if info.Version == "" {
		info.Version = Devel
	}
	if info.Commit == "" {
		info.Commit = revision
	}
	if info.Date == "" {
		info.Date = vcsTime
	}
	// `go install …@<pseudo-version>` records no vcs.* settings, but the version holds
	// the commit's time and the first 12 digits of its hash.
	if info.Commit == "" || info.Date == "" {
		if t, rev, ok := pseudoParts(modVersion); ok {
			if info.Commit == "" {
				info.Commit = rev
			}
			if info.Date == "" {
				info.Date = t
			}
		}
	}
	return info
}

// pseudo matches the tail every pseudo-version form ends with: a UTC time
// yyyymmddhhmmss and a 12-digit revision prefix, maybe followed by +incompatible or
// the +dirty that Go 1.24 and later add for a build in a modified checkout. It is
// compiled on first use: only `refretry version` reads it, and every other process
// would pay for it at start-up.
var pseudo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[-.](\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})-([0-9a-f]{12})(\+incompatible)?(\+dirty)?$`)
})

// pseudoParts returns the time (RFC 3339) and revision prefix of a pseudo-version.
func pseudoParts(v string) (date, rev string, ok bool) {
	m := pseudo().FindStringSubmatch(v)
	if m == nil {
		return "", "", false
	}
	return m[1] + "-" + m[2] + "-" + m[3] + "T" + m[4] + ":" + m[5] + ":" + m[6] + "Z", m[7], true
}
