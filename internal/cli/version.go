package cli

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with
// -ldflags "-X github.com/refretry/refretry/internal/cli.version=…"; otherwise the
// module version from the build information is used.
var version = ""

// VersionCmd prints refretry's version.
type VersionCmd struct{}

// Run prints the version.
func (VersionCmd) Run(in *invocation) error {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	_, err := fmt.Fprintf(in.s.Stdout, "refretry version %s\n", v)
	return err
}
