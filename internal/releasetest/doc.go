// Package releasetest holds the tests of what a release ships: the archives that
// GoReleaser builds (.goreleaser.yaml), `refretry version` of each kind of build, the
// install script shared by the GitHub Action and the GitLab component
// (scripts/action-install.sh), the Action's setup step, and the GitLab component
// (templates/refretry.yml). It has no code of its own.
//
// Most tests need a snapshot release: scripts/release-check.sh builds one with
// GoReleaser and runs them with REFRETRY_RELEASE_DIST set to its directory; without
// it they skip, and only the checks that need no release run (under go test ./...).
package releasetest
