// Package releasetest tests what a release ships: the archives that GoReleaser builds
// (.goreleaser.yaml), `refretry version` of each kind of build, the install script
// shared by the GitHub Action and the GitLab component (scripts/action-install.sh),
// and the GitLab component (templates/refretry.yml). Its code (Release) loads a
// snapshot release and serves it as GitHub serves releases, for these tests and for
// the Action's (action_test.go at the repository's root).
//
// Most tests need a snapshot release: scripts/release-check.sh builds one with
// GoReleaser and runs them with REFRETRY_RELEASE_DIST set to its directory; without
// it they skip, and only the checks that need no release run (under go test ./...).
package releasetest
