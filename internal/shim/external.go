//go:build unix

package shim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/platform"
)

// External is a git-<name> program that git would run for a call, found where git
// finds it, with the environment git would give it, except that the shim's directory
// comes first on PATH: the `git` the program runs is the shim again.
type External struct {
	Path string   // the file to run
	Args []string // its argv: git-<name>, then the call's arguments
	Dir  string   // its working directory when a -C moved it, else ""
	Env  []string
}

// envFlag is the one environment variable, and its value, that is the whole effect of
// one of git's global options on an external command (git.c handle_options and
// commit_pager_choice, 2.39 and 2.55); "" for any other option. (A switch, not a map:
// a package-level map is built at the start of every refretry process.)
func envFlag(option string) (name, value string) {
	switch option {
	case "--no-replace-objects":
		return "GIT_NO_REPLACE_OBJECTS", "1"
	case "--literal-pathspecs":
		return "GIT_LITERAL_PATHSPECS", "1"
	case "--no-literal-pathspecs":
		return "GIT_LITERAL_PATHSPECS", "0"
	case "--glob-pathspecs":
		return "GIT_GLOB_PATHSPECS", "1"
	case "--noglob-pathspecs":
		return "GIT_NOGLOB_PATHSPECS", "1"
	case "--icase-pathspecs":
		return "GIT_ICASE_PATHSPECS", "1"
	case "--no-optional-locks":
		return "GIT_OPTIONAL_LOCKS", "0"
	case "-P", "--no-pager":
		return "GIT_PAGER", "cat"
	}
	return "", ""
}

// envValue is the variable a global option puts its value into, in either spelling
// (--git-dir x, --git-dir=x); "" for any other option.
func envValue(option string) (name string) {
	switch option {
	case "--git-dir":
		return "GIT_DIR"
	case "--work-tree":
		return "GIT_WORK_TREE"
	case "--namespace":
		return "GIT_NAMESPACE"
	}
	return ""
}

// LookExternal reports whether git would run the call as an external command, and
// returns it ready to run with the shim kept on PATH. It never costs a process for a
// builtin (the list in builtins.go) and stats a few files otherwise; only when neither
// the environment nor an --exec-path option names git's exec path does it ask the real
// git (realGit --exec-path, run with env).
//
// ok is false, and the call must go to the real git unchanged, when:
//   - the command is a builtin, an option (-h, --version), a name with a slash, or is
//     followed by --help (git turns that into `git help <name>`);
//   - a global option's effect is more than a variable the shim can set exactly: -c and
//     --config-env (git quotes them into GIT_CONFIG_PARAMETERS), -p (a pager between git
//     and the command), and the options git 2.39 does not know (--attr-source,
//     --no-lazy-fetch, --no-advice: that git prints its usage);
//   - stdout is a terminal and no -P was given: git may start the pager a
//     pager.<name> setting asks for, which only git reads;
//   - a -C directory is not one (git prints the error);
//   - no git-<name> is found in the exec path or on PATH: an alias, a typo, or a
//     builtin of a newer git, which git handles (aliases, help.autoCorrect, its message);
//   - the program found is git itself (a builtin of a newer git, linked into the exec
//     path);
//   - the shim is not on PATH (no directory to put first).
func LookExternal(c Call, env []string, realGit, self string) (x External, ok bool) {
	name := c.Command
	if name == "" || builtin(name) || strings.HasPrefix(name, "-") || strings.ContainsRune(name, '/') ||
		len(c.Args) > 0 && c.Args[0] == "--help" {
		return x, false
	}
	shimDir := selfDir(func(k string) string { return gitexec.Getenv(env, k) }, self)
	if shimDir == "" || paged(c.Options) && platform.IsTerminal(os.Stdout) {
		return x, false
	}
	cwd, err := os.Getwd()
	if err != nil {
		return x, false
	}
	dir, ok := chdir(cwd, c.Dirs)
	if !ok {
		return x, false
	}
	env, execPath, ok := optionsEnv(c.Options, env, dir)
	if !ok {
		return x, false
	}
	prog, path, execPath, ok := locate(realGit, env, dir, execPath, "git-"+name)
	if !ok {
		return x, false
	}
	env = gitexec.Setenv(env, "GIT_EXEC_PATH", execPath)
	env = gitexec.Setenv(env, "PATH", shimDir+":"+path)
	if dir == cwd {
		dir = "" // no -C moved it: stay where the shim is
	}
	return External{Path: prog, Args: append([]string{"git-" + name}, c.Args...), Dir: dir, Env: env}, true
}

// paged reports whether git may start a pager for the call: no -P or --no-pager among
// its global options.
func paged(options []string) bool {
	return !slices.ContainsFunc(options, func(o string) bool { return o == "-P" || o == "--no-pager" })
}

// chdir is the directory the -C options dirs lead to from cwd; ok is false when one is
// not a directory (git prints the error).
func chdir(cwd string, dirs []string) (dir string, ok bool) {
	dir = cwd
	for _, d := range dirs {
		if d == "" {
			continue // git ignores an empty -C
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", false
		}
		dir = d
	}
	return dir, true
}

// optionsEnv is the environment git builds from its global options (handle_options,
// in the order it reads them), the shim's hand-off variable removed, in the directory
// dir; and the exec path an --exec-path=<path> names. ok is false for an option whose
// effect is more than a variable.
func optionsEnv(options, env []string, dir string) (out []string, execPath string, ok bool) {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, HandoffVar+"=") })
	for i := 0; i < len(options); i++ {
		o := options[i]
		k, v, glued := strings.Cut(o, "=")
		flagVar, flagValue := envFlag(o)
		switch {
		case envValue(k) != "":
			if !glued {
				i++
				v = options[i]
			}
			env = gitexec.Setenv(env, envValue(k), v)
		case flagVar != "":
			env = gitexec.Setenv(env, flagVar, flagValue)
		case o == "--bare":
			// git sets GIT_DIR to the directory it is in, unless it is set already.
			if gitexec.Getenv(env, "GIT_DIR") == "" {
				real, err := filepath.EvalSymlinks(dir) // getcwd's answer
				if err != nil {
					return nil, "", false
				}
				env = gitexec.Setenv(env, "GIT_DIR", real)
			}
			env = gitexec.Setenv(env, "GIT_IMPLICIT_WORK_TREE", "0")
		case k == "--exec-path" && glued && v != "":
			execPath = v // (an empty one leaves git without an exec path: git decides)
		case o == "--shallow-file":
			i++ // only git's own process reads it
		default:
			return nil, "", false
		}
	}
	return env, execPath, true
}

// locate finds the program file as git's setup_path and locate_in_PATH would: the exec
// path (execPath, else GIT_EXEC_PATH, else realGit --exec-path) first on PATH. It
// returns the program, that PATH and the exec path; ok is false when there is none, or
// it is git itself (a builtin of a newer git, linked into the exec path).
func locate(realGit string, env []string, dir, execPath, file string) (prog, path, exec string, ok bool) {
	if execPath == "" {
		execPath = gitexec.Getenv(env, "GIT_EXEC_PATH")
	}
	if execPath == "" {
		if execPath, ok = askExecPath(realGit, env, dir); !ok {
			return "", "", "", false
		}
	}
	path = gitexec.Getenv(env, "PATH")
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		path = "/usr/bin:/bin" // git's _PATH_DEFPATH when PATH is unset
	}
	absExec := execPath
	if !filepath.IsAbs(absExec) {
		absExec = filepath.Join(dir, absExec)
	}
	path = absExec + ":" + path
	prog = findDashed(path, dir, file)
	if prog == "" || sameFile(prog, realGit) || sameFile(prog, filepath.Join(absExec, "git")) {
		return "", "", "", false
	}
	return prog, path, execPath, true
}

// askExecPath is the real git's exec path (git --exec-path), run with env in dir.
func askExecPath(realGit string, env []string, dir string) (string, bool) {
	q := exec.Command(realGit, "--exec-path")
	q.Env, q.Dir = env, dir
	out, err := q.Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(string(out), "\n"), true
}

// findDashed looks file up in path as git's locate_in_PATH does: every entry in order,
// an empty one meaning the working directory dir; the first regular file with an
// execute bit wins. "" when there is none.
func findDashed(path, dir, file string) string {
	for _, d := range strings.Split(path, ":") {
		p := filepath.Join(d, file)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) {
			return p
		}
	}
	return ""
}

// selfDir is the first directory on PATH whose git entry is the shim at self, "" if
// there is none.
func selfDir(getenv func(string) string, self string) string {
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if filepath.IsAbs(d) && sameFile(filepath.Join(d, EntryName), self) {
			return d
		}
	}
	return ""
}

// RunExternal runs x as git's execv_dashed_external does: a child with the shim's
// standard streams and the shim's exit code its exit code. A child killed by a signal
// gives 128 plus the signal's number and, for signals other than SIGINT, SIGQUIT and
// SIGPIPE, git's line "error: git-<name> died of signal N" on stderr. SIGINT, SIGTERM,
// SIGHUP and SIGQUIT sent to the shim are passed on to the child, which the shim waits
// for (git kills its child with the signal it got and waits too; git then dies of the
// signal, the shim exits with the child's code). started is false when the program
// could not be started: nothing ran, and the call can go to the real git, which
// reports it the way it does.
func RunExternal(x External) (code int, started bool) {
	cmd := &exec.Cmd{Path: x.Path, Args: x.Args, Dir: x.Dir, Env: x.Env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, false
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, true
	case !errors.As(err, &ee):
		return 128, true
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		if sig != syscall.SIGINT && sig != syscall.SIGQUIT && sig != syscall.SIGPIPE {
			fmt.Fprintf(os.Stderr, "error: %s died of signal %d\n", x.Args[0], int(sig))
		}
		return 128 + int(sig), true
	}
	return ee.ExitCode(), true
}
