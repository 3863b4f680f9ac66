// Package runners runs the GitHub Action (action.yml) and the GitLab component
// (templates/refretry.yml) inside real CI runners on this machine, offline: act (host
// mode) for GitHub Actions and gitlab-ci-local (shell executor) for GitLab CI/CD, with
// the project's own git server (package gitserver) as the remote. It holds tests only;
// they run with REFRETRY_RUNNERS=1 and skip otherwise, as they take minutes. With
// RUNNERS_DEBUG=<dir> the runners' whole logs are kept in dir.
package runners
