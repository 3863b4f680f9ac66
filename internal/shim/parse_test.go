package shim

import (
	"slices"
	"testing"
)

func TestShimParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		ok      bool
		command string
		rest    []string
		dirs    []string
		options []string
		gitDir  string
	}{
		{name: "plain", args: []string{"update-ref", "refs/heads/x", "HEAD"}, ok: true,
			command: "update-ref", rest: []string{"refs/heads/x", "HEAD"}},
		{name: "no command", args: nil, ok: true},
		{name: "other command", args: []string{"status", "-s"}, ok: true, command: "status", rest: []string{"-s"}},
		{name: "-C twice and empty", args: []string{"-C", "a", "-C", "", "update-ref", "-d", "r"}, ok: true,
			command: "update-ref", rest: []string{"-d", "r"}, dirs: []string{"a", ""}},
		{name: "-C glued is unknown to git", args: []string{"-Ca", "update-ref"}},
		{name: "-c and --config-env", args: []string{"-c", "a.b=c", "--config-env", "x.y=V", "--config-env=p.q=W", "update-ref", "r", "o"},
			ok: true, command: "update-ref", rest: []string{"r", "o"},
			options: []string{"-c", "a.b=c", "--config-env", "x.y=V", "--config-env=p.q=W"}},
		{name: "git-dir both spellings, last wins", args: []string{"--git-dir", "one", "--git-dir=two", "update-ref", "r", "o"},
			ok: true, command: "update-ref", rest: []string{"r", "o"},
			options: []string{"--git-dir", "one", "--git-dir=two"}, gitDir: "two"},
		{name: "work-tree namespace attr-source", args: []string{"--work-tree", "w", "--namespace=n", "--attr-source", "HEAD", "--work-tree=v", "--namespace", "m", "--attr-source=x", "update-ref"},
			ok: true, command: "update-ref",
			options: []string{"--work-tree", "w", "--namespace=n", "--attr-source", "HEAD", "--work-tree=v", "--namespace", "m", "--attr-source=x"}},
		{name: "flags", args: []string{"-p", "--paginate", "-P", "--no-pager", "--no-lazy-fetch", "--no-replace-objects",
			"--literal-pathspecs", "--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
			"--no-optional-locks", "--no-advice", "--exec-path=/x", "--shallow-file", "s", "update-ref"},
			ok: true, command: "update-ref",
			options: []string{"-p", "--paginate", "-P", "--no-pager", "--no-lazy-fetch", "--no-replace-objects",
				"--literal-pathspecs", "--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
				"--no-optional-locks", "--no-advice", "--exec-path=/x", "--shallow-file", "s"}},
		{name: "bare then -C is left to git", args: []string{"--bare", "-C", "x", "update-ref"}},
		{name: "-C then bare", args: []string{"-C", "x", "--bare", "update-ref"}, ok: true, command: "update-ref",
			dirs: []string{"x"}, options: []string{"--bare"}},
		{name: "version ends the options", args: []string{"-c", "a=b", "--version", "update-ref"}, ok: true,
			command: "--version", rest: []string{"update-ref"}, options: []string{"-c", "a=b"}},
		{name: "-h", args: []string{"-h"}, ok: true, command: "-h", rest: []string{}},
		{name: "-v", args: []string{"-v", "x"}, ok: true, command: "-v", rest: []string{"x"}},
		{name: "help", args: []string{"--help", "update-ref"}, ok: true, command: "--help", rest: []string{"update-ref"}},
		{name: "missing -C value", args: []string{"-C"}},
		{name: "missing -c value", args: []string{"-c"}},
		{name: "missing git-dir value", args: []string{"--git-dir"}},
		{name: "exec-path query", args: []string{"--exec-path", "update-ref"}},
		{name: "exec-path prefix query", args: []string{"--exec-pathx", "update-ref"}},
		{name: "html-path", args: []string{"--html-path"}},
		{name: "man-path", args: []string{"--man-path"}},
		{name: "info-path", args: []string{"--info-path"}},
		{name: "list-cmds", args: []string{"--list-cmds=builtins"}},
		{name: "unknown", args: []string{"--frobnicate", "update-ref"}},
		{name: "no abbreviations", args: []string{"--git-d=x", "update-ref"}},
		{name: "super-prefix is gone in 2.55", args: []string{"--super-prefix=x/", "update-ref"}},
		{name: "double dash is unknown", args: []string{"--", "update-ref"}},
		{name: "value that looks like an option", args: []string{"-c", "--git-dir=x", "-C", "-p", "update-ref"}, ok: true,
			command: "update-ref", dirs: []string{"-p"}, options: []string{"-c", "--git-dir=x"}},
		{name: "update-ref later is an argument", args: []string{"log", "update-ref"}, ok: true, command: "log", rest: []string{"update-ref"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok := Parse(tc.args)
			if ok != tc.ok {
				t.Fatalf("Parse(%q) ok = %v, want %v", tc.args, ok, tc.ok)
			}
			if !ok {
				if c.UpdateRef() {
					t.Errorf("an unsure parse says update-ref")
				}
				return
			}
			if c.Command != tc.command || !slices.Equal(c.Args, tc.rest) && len(c.Args)+len(tc.rest) > 0 {
				t.Errorf("command %q %q, want %q %q", c.Command, c.Args, tc.command, tc.rest)
			}
			if !slices.Equal(c.Dirs, tc.dirs) {
				t.Errorf("dirs %q, want %q", c.Dirs, tc.dirs)
			}
			if !slices.Equal(c.Options, tc.options) {
				t.Errorf("options %q, want %q", c.Options, tc.options)
			}
			if c.GitDir != tc.gitDir || c.HasGitDir != (tc.gitDir != "") {
				t.Errorf("git dir %q (%v), want %q", c.GitDir, c.HasGitDir, tc.gitDir)
			}
			if c.UpdateRef() != (tc.command == "update-ref") {
				t.Errorf("UpdateRef() = %v", c.UpdateRef())
			}
		})
	}
}

func TestShimInvoked(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"git": true, "/usr/local/bin/git": true, "git.exe": true, "GIT.EXE": true, "./git": true,
		"refretry": false, "gitk": false, "git-update-ref": false, "/usr/bin/git/x": false, "": false,
	} {
		if got := Invoked(name); got != want {
			t.Errorf("Invoked(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzShimParse(f *testing.F) {
	f.Add("-C\x00a\x00-c\x00k=v\x00update-ref\x00r\x00o")
	f.Add("--git-dir=x\x00--bare\x00status")
	f.Fuzz(func(t *testing.T, s string) {
		args := splitNUL(s)
		c, ok := Parse(args)
		if !ok {
			return
		}
		// What Parse took apart adds back up to the arguments, in some order.
		n := 2*len(c.Dirs) + len(c.Options) + len(c.Args)
		if c.Args != nil { // there was a command, possibly an empty argument
			n++
		}
		if n != len(args) {
			t.Fatalf("Parse(%q) = %+v: %d arguments accounted for, want %d", args, c, n, len(args))
		}
	})
}

func splitNUL(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// TestPush: which pushes the shim runs in refretry's push engine; git's help forms go
// to the real git.
func TestPush(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"push"}, true},
		{[]string{"push", "origin", "main"}, true},
		{[]string{"-C", "x", "-c", "k=v", "push", "--porcelain", "origin"}, true},
		{[]string{"push", "origin", "--", "--help"}, true}, // a refspec named --help
		{[]string{"push", "--help"}, false},
		{[]string{"push", "origin", "-h"}, false},
		{[]string{"push", "--help-all"}, false},
		{[]string{"fetch", "origin"}, false},
		{[]string{"pushx"}, false},
		{[]string{"-c", "alias.p=push", "p"}, false}, // an alias is git's
	}
	for _, tc := range tests {
		c, ok := Parse(tc.args)
		if !ok {
			t.Fatalf("Parse(%q) failed", tc.args)
		}
		if got := c.Push(); got != tc.want {
			t.Errorf("Parse(%q).Push() = %v, want %v", tc.args, got, tc.want)
		}
	}
}
