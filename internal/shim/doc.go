// Package shim lets refretry stand in for git itself: installed under the name git in a
// directory early on PATH, it handles `git update-ref` and `git fetch` the way
// `refretry update-ref` and `refretry fetch` do, runs `git push` in refretry's push
// engine with git's semantics, runs the external git-<name> programs git would run
// with itself still first on PATH, and hands every other command to the real git
// unchanged.
//
// The package holds the parts that do not depend on refretry's command line:
//
//   - Parse reads git's global options (the ones before the subcommand) exactly as
//     git 2.55's handle_options does, and says whether the call is an update-ref, a
//     fetch or a push that refretry can run with the same meaning;
//   - Find locates the real git: REFRETRY_GIT, else the next git on PATH that is not
//     this executable (compared by file identity, so a directory listed twice or
//     reached through a symbolic link cannot make the shim call itself);
//   - Exec hands a call to the real git: in place on Unix (same process id, same
//     standard streams, the exit code is git's), as a child whose exit code is passed
//     on where exec in place does not exist (Windows);
//   - LookExternal says whether git would run the call as an external git-<name>
//     program and gives its path, arguments, directory and git's environment for it,
//     with the shim's directory first on PATH; RunExternal runs it as git would, so
//     that the git that program runs is the shim again (Unix only);
//   - Install and Uninstall manage the git entry in a directory.
//
// Deciding costs no process and no configuration read: Parse is a loop over the
// arguments and Find stats a few files. A command that is not one of git's builtins
// (builtins.go) costs a few stats more, and `git --exec-path` when GIT_EXEC_PATH does
// not name git's exec path.
package shim
