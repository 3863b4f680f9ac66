// Command fakegit stands in for git in refretry's script tests (testdata/script) and in
// the retry tests of transaction, push and fetch (through package fakegittest). Put
// first on PATH under the name "git", or named as a Runner's git, it makes one
// subcommand (`git update-ref` unless told otherwise) fail the way real git failed, a
// chosen number of times, and otherwise is the real git.
//
// Every invocation of that subcommand is counted. The first REFRETRY_FAKEGIT_TIMES of
// them replay REFRETRY_FAKEGIT_FIXTURE, a capture of real git's output (testdata/stderr,
// testdata/fetch, or one a test made): its stdout and stderr bytes and its exit code.
// Every later invocation, and every invocation of another subcommand (rev-parse,
// config, …), execs the real git with the same arguments, standard input and
// environment.
//
// A replay reads standard input as git would have before failing: all of it for
// `--stdin` (a batch fails when it is committed, at the end of the input), up to the
// failing command for a failure at an interactive `prepare` or `commit` (answering the
// commands before it with the captured "<verb>: ok" lines as they arrive), and none of
// it otherwise. An update-ref capture says which of these it is in its "form" header;
// a capture of another subcommand without one reads no input.
//
// The update-ref captures were made in a repository at /tmp/refretry-fixtures/r (the
// fetch captures under /tmp/refretry-fetch-fixtures: REFRETRY_FAKEGIT_CAPTURE_REPO
// says which); when REFRETRY_FAKEGIT_REPO is set, that path is replaced by it in the
// replayed bytes, so that lock paths name the repository under test. Nothing else is
// changed.
//
// Environment:
//
//	REFRETRY_FAKEGIT_REAL          the real git (required)
//	REFRETRY_FAKEGIT_STATE         counter file: one byte is appended per faked invocation
//	REFRETRY_FAKEGIT_LOG           if set, one line per invocation: its subcommand
//	REFRETRY_FAKEGIT_COMMAND       the subcommand faked and counted (default update-ref)
//	REFRETRY_FAKEGIT_FIXTURE       the capture to replay (a .txtar file); unset: none
//	REFRETRY_FAKEGIT_TIMES         how many invocations replay it (default 0)
//	REFRETRY_FAKEGIT_CAPTURE_REPO  where the capture was made (default /tmp/refretry-fixtures/r)
//	REFRETRY_FAKEGIT_REPO          replaces the capture repository's path in replayed bytes
//	REFRETRY_FAKEGIT_INPUT         if set, a directory: replay N writes the input it read to N
//	REFRETRY_FAKEGIT_HELP_EXIT     if set (to 0), a faked invocation that the real git
//	                               answers with its usage on stdout and exit 129 (the
//	                               answer to -h up to git 2.55) exits with it instead:
//	                               git 2.56's parse-options (git commit cdaf12f762,
//	                               "parse-options: exit 0 on -h") exits 0 there
//
// The counter is lock-free and crash-safe: each faked invocation appends one byte with
// O_APPEND, which the kernel serialises, and the file offset just after that byte is
// the invocation's ordinal. A fake that dies afterwards still counted its attempt.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/refretry/refretry/internal/harness/capture"
)

// captureRepo is where scripts/capture-fixtures.sh made every capture.
const captureRepo = "/tmp/refretry-fixtures/r"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "fakegit: %v\n", err)
		os.Exit(2) // no git failure exits 2: a broken test set-up cannot pass for one
	}
}

func run(args []string) error {
	gitPath := os.Getenv("REFRETRY_FAKEGIT_REAL")
	if gitPath == "" {
		return fmt.Errorf("REFRETRY_FAKEGIT_REAL is not set")
	}
	sub, rest := subcommand(args)
	if err := logCall(sub); err != nil {
		return err
	}
	faked := os.Getenv("REFRETRY_FAKEGIT_COMMAND")
	if faked == "" {
		faked = "update-ref"
	}
	if sub == faked {
		n, err := count()
		if err != nil {
			return err
		}
		times, _ := strconv.Atoi(os.Getenv("REFRETRY_FAKEGIT_TIMES"))
		if fixture := os.Getenv("REFRETRY_FAKEGIT_FIXTURE"); fixture != "" && n <= int64(times) {
			code, err := replay(fixture, sub, rest, n)
			if err != nil {
				return err
			}
			os.Exit(code)
		}
		if v := os.Getenv("REFRETRY_FAKEGIT_HELP_EXIT"); v != "" {
			code, err := helpExit(gitPath, args, v)
			if err != nil {
				return err
			}
			os.Exit(code)
		}
	}
	return syscall.Exec(gitPath, append([]string{gitPath}, args...), os.Environ())
}

// helpExit runs the real git with the caller's streams, its stdout held until it
// exits: usage on stdout and exit 129 (parse-options' answer to -h up to git 2.55)
// exits with the code exit names instead, as git 2.56 exits 0; anything else is
// passed on as git ended.
func helpExit(gitPath string, args []string, exit string) (int, error) {
	want, err := strconv.Atoi(exit)
	if err != nil {
		return 0, fmt.Errorf("REFRETRY_FAKEGIT_HELP_EXIT=%q: not a number", exit)
	}
	cmd := exec.Command(gitPath, args...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, &out, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 0, err
		}
		code = ee.ExitCode()
	}
	if code == 129 && bytes.HasPrefix(out.Bytes(), []byte("usage: ")) {
		code = want
	}
	if _, err := os.Stdout.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return code, nil
}

// subcommand finds git's subcommand after its global options, and the arguments after it.
func subcommand(args []string) (string, []string) {
	withValue := map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true,
		"--namespace": true, "--config-env": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		if withValue[a] {
			i++
		}
	}
	return "", nil
}

func logCall(sub string) error {
	path := os.Getenv("REFRETRY_FAKEGIT_LOG")
	if path == "" {
		return nil
	}
	return appendTo(path, []byte(sub+"\n"))
}

// count appends this invocation's byte to the counter file and returns its ordinal,
// starting at 1.
func count() (int64, error) {
	path := os.Getenv("REFRETRY_FAKEGIT_STATE")
	if path == "" {
		return 0, fmt.Errorf("REFRETRY_FAKEGIT_STATE is not set")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Write([]byte{'.'}); err != nil {
		return 0, err
	}
	// After an O_APPEND write the offset is just past the byte written, whatever
	// other processes appended before or after it.
	return f.Seek(0, io.SeekCurrent)
}

func appendTo(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// recorded is one fixture: git's output and exit code, and how it was invoked.
type recorded struct {
	form           string // single, delete, stdin, prepare, commit, batch, usage
	exit           int
	stdout, stderr []byte
}

// load reads the capture at path, of an invocation of sub.
func load(path, sub string) (*recorded, error) {
	cp, err := capture.Read(path)
	if err != nil {
		return nil, err
	}
	c := &recorded{form: cp.Meta["form"], stdout: cp.Stdout, stderr: cp.Stderr}
	if c.form == "" && sub != "update-ref" {
		c.form = "single"
	}
	if c.exit, err = strconv.Atoi(cp.Meta["exit"]); err != nil || c.form == "" {
		return nil, fmt.Errorf("%s: header lacks form or exit", path)
	}
	if repo := os.Getenv("REFRETRY_FAKEGIT_REPO"); repo != "" {
		made := os.Getenv("REFRETRY_FAKEGIT_CAPTURE_REPO")
		if made == "" {
			made = captureRepo
		}
		from, to := []byte(made+"/"), []byte(repo+"/")
		c.stdout = bytes.ReplaceAll(c.stdout, from, to)
		c.stderr = bytes.ReplaceAll(c.stderr, from, to)
	}
	return c, nil
}

// replay behaves as the captured git did, given the arguments after the subcommand
// sub, as the nth faked invocation, and returns its exit code.
func replay(path, sub string, args []string, n int64) (int, error) {
	c, err := load(path, sub)
	if err != nil {
		return 0, err
	}
	in := newInput(os.Stdin, n)
	code, err := behave(c, path, sub, args, in)
	if err == nil {
		err = in.save()
	}
	return code, err
}

// behave writes c's output, having read c's input from in as git would have.
func behave(c *recorded, path, sub string, args []string, in *input) (int, error) {
	stdin, nul := false, false
	for _, a := range args {
		switch a {
		case "--stdin":
			stdin = true
		case "-z":
			nul = true
		}
	}
	readsStdin := c.form == "stdin" || c.form == "prepare" || c.form == "commit" || c.form == "batch"
	if readsStdin != stdin && c.form != "usage" {
		return 0, fmt.Errorf("%s captures a %s failure, but %s was run with %q", path, c.form, sub, args)
	}
	out := bufio.NewWriter(os.Stdout)
	switch {
	case c.form == "prepare" || c.form == "commit":
		sep := byte('\n')
		if nul {
			sep = 0
		}
		if err := converse(in, out, sep, c.form, c.stdout); err != nil {
			return 0, err
		}
	case stdin:
		if err := in.drain(); err != nil {
			return 0, err
		}
		out.Write(c.stdout)
	default:
		out.Write(c.stdout)
	}
	if err := out.Flush(); err != nil {
		return 0, err
	}
	if _, err := os.Stderr.Write(c.stderr); err != nil {
		return 0, err
	}
	return c.exit, nil
}

// converse reads the interactive protocol's commands until failVerb, answering each
// command that the capture answered with the captured line as soon as it is read, as
// git does. Whatever the capture printed after that is written when failVerb arrives
// (or the input ends), just before git's error.
func converse(in commandReader, out *bufio.Writer, sep byte, failVerb string, answers []byte) error {
	pending := strings.SplitAfter(string(answers), "\n")
	if pending[len(pending)-1] == "" {
		pending = pending[:len(pending)-1]
	}
	for {
		cmd, err := in.ReadString(sep)
		cmd = strings.TrimSuffix(cmd, string(sep))
		verb, _, _ := strings.Cut(cmd, " ")
		if verb == failVerb || err != nil {
			if err != nil && err != io.EOF {
				return err
			}
			break
		}
		if len(pending) > 0 && verb != "" && strings.HasPrefix(pending[0], verb+": ") {
			out.WriteString(pending[0])
			pending = pending[1:]
			if err := out.Flush(); err != nil {
				return err
			}
		}
	}
	for _, line := range pending {
		out.WriteString(line)
	}
	return nil
}

// commandReader reads input up to a separator, as *bufio.Reader does.
type commandReader interface {
	ReadString(sep byte) (string, error)
}

// input is a replay's standard input. It keeps what the replay took in (the commands
// up to the failing one, or all of it), when REFRETRY_FAKEGIT_INPUT asks for a record:
// not what was read ahead, which depends on how the writer's bytes arrived.
type input struct {
	br   *bufio.Reader
	path string // where the record goes; "" for none
	took bytes.Buffer
}

// newInput is r as the nth faked invocation's input.
func newInput(r io.Reader, n int64) *input {
	in := &input{br: bufio.NewReader(r)}
	if dir := os.Getenv("REFRETRY_FAKEGIT_INPUT"); dir != "" {
		in.path = filepath.Join(dir, strconv.FormatInt(n, 10))
	}
	return in
}

// ReadString reads up to and including sep, and keeps what it read.
func (in *input) ReadString(sep byte) (string, error) {
	s, err := in.br.ReadString(sep)
	if in.path != "" {
		in.took.WriteString(s)
	}
	return s, err
}

// drain reads all of the input, and keeps it.
func (in *input) drain() error {
	var w io.Writer = io.Discard
	if in.path != "" {
		w = &in.took
	}
	_, err := io.Copy(w, in.br)
	return err
}

// save writes the record, if one was asked for.
func (in *input) save() error {
	if in.path == "" {
		return nil
	}
	return os.WriteFile(in.path, in.took.Bytes(), 0o644)
}
