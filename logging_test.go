package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// logEnv is the repository's environment without any CI or log setting the test
// process itself may have, plus extra.
func logEnv(r *testutil.Repo, extra ...string) []string {
	var env []string
	for _, kv := range envFor(r) {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "GITLAB_") || k == "CI" ||
			strings.HasPrefix(k, "REFRETRY_LOG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runLogged runs refretry (binary) in r with env and args.
func runLogged(t *testing.T, r *testutil.Repo, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = r.Dir, env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errOut.String(), code}
}

// jsonLines parses every line of s as a JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// runContended runs refretry like runLogged while ref's lock is held, and releases
// the lock once refretry has reported the first attempt's lock-contention failure, so
// that exactly the second attempt succeeds however slow the machine is.
func runContended(t *testing.T, r *testutil.Repo, env []string, ref string, args ...string) result {
	t.Helper()
	release := r.Hold(r.LockPath(ref))
	defer release()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = r.Dir, env
	var out strings.Builder
	var errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(errOut.String(), "lock-contention") {
			break
		}
	}
	release()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errOut.String(), code}
}

// TestLogPlainIsDropIn: with no CI detected and no log option, nothing is added to
// git's output; "auto" without a CI is the same; a bad format is a usage error.
func TestLogPlainIsDropIn(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	for _, args := range [][]string{
		{"refs/heads/plain", r.Commit},
		{"--log-format", "auto", "refs/heads/auto", r.Commit},
	} {
		res := runLogged(t, r, logEnv(r), "", args...)
		if res.code != 0 || res.stdout != "" || res.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want git's silence", args, res.code, res.stdout, res.stderr)
		}
	}
	res := runLogged(t, r, logEnv(r, "REFRETRY_LOG_FORMAT=yaml"), "", "refs/heads/bad", r.Commit)
	if res.code != 129 || !strings.Contains(res.stderr, "REFRETRY_LOG_FORMAT") {
		t.Errorf("bad format: exit %d, stderr %q; want 129 naming the variable", res.code, res.stderr)
	}
	if refs := r.Refs("refs/heads/bad"); len(refs) != 0 {
		t.Errorf("a usage error must not run git: %v", refs)
	}
}

// TestLogFormats runs one contended update in each format against real git and checks
// the shape of what each writes.
func TestLogFormats(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	uuidRE := regexp.MustCompile(`operation ([0-9a-f-]{36})`)
	for _, format := range []string{"text", "json", "github", "gitlab"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, "reftable")
			ref := "refs/heads/" + format
			res := runContended(t, r, logEnv(r), ref, "--log-format="+format, ref, r.Commit)
			if res.code != 0 || res.stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
			}
			switch format {
			case "json":
				recs := jsonLines(t, res.stderr)
				last := recs[len(recs)-1]
				if last["msg"] != "summary" || last["result"] != "success" || last["attempts"] != 2.0 ||
					last["git_version"] != "2.55.0" || last["ref_backend"] != "reftable" || last["updates"] != 1.0 {
					t.Errorf("summary %v", last)
				}
				if recs[0]["class"] != "lock-contention" || recs[0]["delay_ms"] == nil || recs[0]["operation_id"] != last["operation_id"] {
					t.Errorf("first attempt %v", recs[0])
				}
			case "text":
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				if len(lines) != 2 || !strings.HasPrefix(lines[0], "refretry: attempt 1 failed (lock-contention") ||
					!strings.HasPrefix(lines[1], "refretry: update-ref succeeded after 2 attempts") || !uuidRE.MatchString(lines[1]) {
					t.Errorf("stderr %q", res.stderr)
				}
			case "github":
				if strings.Count(res.stderr, "::group::") != 1 || strings.Count(res.stderr, "::endgroup::") != 1 ||
					strings.Count(res.stderr, "::warning ") != 1 || strings.Contains(res.stderr, "::error") {
					t.Errorf("stderr %q", res.stderr)
				}
			case "gitlab":
				m := uuidRE.FindStringSubmatch(res.stderr)
				if m == nil {
					t.Fatalf("no operation id in %q", res.stderr)
				}
				name := "refretry_" + strings.ReplaceAll(m[1], "-", "")
				if !regexp.MustCompile(`\x1b\[0Ksection_start:\d+:`+name+`\[collapsed=true\]\r\x1b\[0K`).MatchString(res.stderr) ||
					!regexp.MustCompile(`\x1b\[0Ksection_end:\d+:`+name+`\r\x1b\[0K\n`).MatchString(res.stderr) {
					t.Errorf("stderr %q: want one section named %s", res.stderr, name)
				}
			}
		})
	}
}

// TestLogGitHubActions runs refretry as a workflow step would (GITHUB_ACTIONS=true,
// temp GITHUB_OUTPUT and GITHUB_STEP_SUMMARY): a retried success, a conflict and a bad
// ref name full of workflow-command lookalikes, and checks the step's files.
func TestLogGitHubActions(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	dir := t.TempDir()
	output, summary := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	env := logEnv(r, "GITHUB_ACTIONS=true", "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary)
	step := func(stdin string, args ...string) (result, map[string]string) {
		os.Remove(output)
		res := runLogged(t, r, env, stdin, args...)
		data, err := os.ReadFile(output)
		if err != nil {
			t.Fatalf("no step outputs: %v; stderr %q", err, res.stderr)
		}
		return res, parseStepOutputs(t, string(data))
	}

	ref := "refs/heads/gh"
	os.Remove(output)
	res := runContended(t, r, env, ref, ref, r.Commit)
	data, err := os.ReadFile(output)
	if err != nil {
		t.Fatalf("no step outputs: %v; stderr %q", err, res.stderr)
	}
	outs := parseStepOutputs(t, string(data))
	if res.code != 0 || outs["result"] != "success" || outs["attempts"] != "2" || outs["updated-refs"] != ref {
		t.Errorf("retried success: exit %d, outputs %v, stderr %q", res.code, outs, res.stderr)
	}
	if !strings.Contains(res.stderr, "::warning title=refretry%3A update-ref retried::") ||
		!strings.Contains(res.stderr, "operation "+outs["operation-id"]) || strings.Count(res.stderr, "::group::") != 1 {
		t.Errorf("stderr %q: want one group and a warning naming operation %s", res.stderr, outs["operation-id"])
	}

	res, outs = step("", ref, r.Commit, strings.Repeat("0", 40)) // ref is not at the zero oid
	if res.code != 128 || outs["result"] != "failed" || outs["attempts"] != "1" || outs["updated-refs"] != "" {
		t.Errorf("conflict: exit %d, outputs %v, stderr %q", res.code, outs, res.stderr)
	}
	if !strings.Contains(res.stderr, "::error title=refretry%3A update-ref failed::") {
		t.Errorf("conflict stderr %q: want an error annotation", res.stderr)
	}

	bad := "refs/heads/x::error::pwned%0A::endgroup::"
	res, outs = step("create "+bad+" "+r.Commit+"\n", "--stdin")
	if res.code != 128 || outs["result"] != "failed" {
		t.Errorf("bad name: exit %d, outputs %v, stderr %q", res.code, outs, res.stderr)
	}
	checkCommands(t, res.stderr, []string{"group", "endgroup", "stop-commands", "error"})

	data, _ = os.ReadFile(summary)
	rows := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| refretry operation") {
			rows++
		}
	}
	if strings.Count(string(data), "| refretry operation |") != 1 || rows != 3 || strings.Contains(string(data), "x::error") {
		t.Errorf("step summary: want one header and 3 rows, the bad ref escaped:\n%s", data)
	}
}

// checkCommands wants the workflow commands outside stop-commands windows to be
// exactly want, in order.
func checkCommands(t *testing.T, stderr string, want []string) {
	t.Helper()
	var got []string
	token := ""
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case token != "":
			if l == "::"+token+"::" {
				token = ""
			}
		case strings.HasPrefix(l, "::"):
			name, rest, _ := strings.Cut(l[2:], "::")
			name, _, _ = strings.Cut(name, " ")
			if name == "stop-commands" {
				token = rest
			}
			got = append(got, name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("workflow commands %q, want %q; stderr:\n%s", got, want, stderr)
	}
}

func parseStepOutputs(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] == "" {
			continue
		}
		name, delim, ok := strings.Cut(lines[i], "<<")
		if !ok {
			t.Fatalf("output line %q", lines[i])
		}
		var value []string
		for i++; i < len(lines) && lines[i] != delim; i++ {
			value = append(value, lines[i])
		}
		out[name] = strings.Join(value, "\n")
	}
	return out
}

// TestLogFileConcurrentProcesses: 300 refretry processes (30 unless the tests run at
// stress size, testutil.Scale) on one reftable repository append to one --log-file;
// every line is JSON and every operation has its summary.
func TestLogFileConcurrentProcesses(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	logFile := filepath.Join(t.TempDir(), "refretry.jsonl")
	n := testutil.Scale(t, 30, 300)
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runLogged(t, r, logEnv(r), "", "--log-file", logFile, fmt.Sprintf("refs/heads/l/%d", i), r.Commit)
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 0 {
			t.Errorf("writer %d: exit %d, stderr %q", i, res.code, res.stderr)
		}
		for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
			if l != "" && !strings.HasPrefix(l, "refretry: attempt ") {
				t.Errorf("writer %d: stderr line %q; --log-file alone keeps stderr plain", i, l)
			}
		}
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	ops, summaries := map[string]bool{}, map[string]int{}
	refs := map[string]bool{}
	for _, rec := range jsonLines(t, string(data)) {
		id, _ := rec["operation_id"].(string)
		ops[id] = true
		if rec["msg"] == "summary" {
			summaries[id]++
			if rec["result"] != "success" {
				t.Errorf("summary %v", rec)
			}
			for _, ref := range rec["refs"].([]any) {
				refs[ref.(string)] = true
			}
		}
	}
	if len(ops) != n || len(summaries) != n || len(refs) != n {
		t.Errorf("%d operation ids, %d with a summary, %d refs; want %d each", len(ops), len(summaries), len(refs), n)
	}
	for id, c := range summaries {
		if c != 1 {
			t.Errorf("operation %s has %d summaries", id, c)
		}
	}
}

// TestLogStdinAndConfig: --stdin updates are counted and named; refretry.logFormat in
// git config applies once git config is read, which is after contention.
func TestLogStdinAndConfig(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	stdin := fmt.Sprintf("create refs/heads/s1 %s\ncreate refs/heads/s2 %s\nverify refs/heads/main %s\n", r.Commit, r.Commit, r.Commit)
	res := runLogged(t, r, logEnv(r), stdin, "--log-format", "json", "--stdin")
	recs := jsonLines(t, res.stderr)
	last := recs[len(recs)-1]
	if res.code != 0 || last["updates"] != 2.0 || fmt.Sprint(last["refs"]) != "[refs/heads/s1 refs/heads/s2]" {
		t.Errorf("exit %d, summary %v", res.code, last)
	}

	r.Run("config", "refretry.logFormat", "json")
	res = runLogged(t, r, logEnv(r), "", "refs/heads/c1", r.Commit)
	if res.code != 0 || res.stderr != "" {
		t.Errorf("no contention: exit %d, stderr %q; git config is not read, so nothing is logged", res.code, res.stderr)
	}
	res = runContended(t, r, logEnv(r), "refs/heads/c2", "refs/heads/c2", r.Commit)
	recs = jsonLines(t, res.stderr)
	if res.code != 0 || len(recs) != 3 || recs[2]["result"] != "success" {
		t.Errorf("after contention: exit %d, records %v", res.code, recs)
	}
}

// TestLogOutcomes checks the JSON summary of each way an operation ends, against real
// git: first-try success, give-up when the budget runs out, stale lock, conflict.
func TestLogOutcomes(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			summary := func(res result) map[string]any {
				t.Helper()
				recs := jsonLines(t, extractJSON(res.stderr))
				if len(recs) == 0 || recs[len(recs)-1]["msg"] != "summary" {
					t.Fatalf("no summary in %q", res.stderr)
				}
				for _, rec := range recs {
					if rec["operation_id"] != recs[0]["operation_id"] || rec["schema"] != 1.0 {
						t.Errorf("record %v: want schema 1 and one operation id", rec)
					}
				}
				return recs[len(recs)-1]
			}

			s := summary(runLogged(t, r, logEnv(r), "", "--log-format=json", "refs/heads/first", r.Commit))
			if s["result"] != "success" || s["attempts"] != 1.0 || s["ref_backend"] != backend {
				t.Errorf("first try: %v", s)
			}

			lock := r.LockPath("refs/heads/busy")
			release := r.Hold(lock)
			s = summary(runLogged(t, r, logEnv(r), "", "--log-format=json", "--timeout=1s", "refs/heads/busy", r.Commit))
			release()
			if s["result"] != "gave-up" || s["reason"] != "deadline" || s["class"] != "lock-contention" || s["lock"] != lock || s["exit_code"] != 128.0 {
				t.Errorf("give-up: %v", s)
			}

			r.Hold(lock)
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(lock, old, old); err != nil {
				t.Fatal(err)
			}
			s = summary(runLogged(t, r, logEnv(r), "", "--log-format=json", "refs/heads/busy", r.Commit))
			if s["result"] != "stale-lock" || s["attempts"] != 1.0 || !strings.Contains(fmt.Sprint(s["advice"]), "rm -f '"+lock+"'") {
				t.Errorf("stale lock: %v", s)
			}
			os.Remove(lock)

			s = summary(runLogged(t, r, logEnv(r), "", "--log-format=json", "refs/heads/first", r.Commit, strings.Repeat("0", 40)))
			if s["result"] != "failed" || s["class"] != "conflict" || s["attempts"] != 1.0 {
				t.Errorf("conflict: %v", s)
			}
		})
	}
}

// extractJSON keeps the lines of stderr that are refretry's JSON records (git's own
// stderr is passed through between them).
func extractJSON(stderr string) string {
	var b strings.Builder
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "{") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// notes returns the note records among recs, after checking that every record of the
// operation carries its operation id.
func notes(t *testing.T, recs []map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range recs {
		if rec["operation_id"] != recs[0]["operation_id"] {
			t.Errorf("record %v: not of operation %v", rec, recs[0]["operation_id"])
		}
		if rec["msg"] == "note" {
			out = append(out, rec)
		}
	}
	return out
}

// TestLogNoteStaleLockRemoved: an update-ref with --break-stale-locks that removes a
// stale lock says so in its JSON log with a note record naming the lock (on stderr
// the record replaces the plain line), then retries and succeeds.
func TestLogNoteStaleLockRemoved(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			ref := "refs/heads/broken"
			lock := r.LockPath(ref)
			r.Hold(lock)
			old := time.Now().Add(-time.Hour) // far past the default stale-after limit (2m)
			if err := os.Chtimes(lock, old, old); err != nil {
				t.Fatal(err)
			}
			res := runLogged(t, r, logEnv(r), "", "--log-format=json", "--break-stale-locks", "--timeout=60s", ref, r.Commit)
			if res.code != 0 || res.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
			}
			recs := jsonLines(t, res.stderr) // nothing but records: no plain line
			ns := notes(t, recs)
			if len(ns) != 1 {
				t.Fatalf("%d note records, want 1:\n%s", len(ns), res.stderr)
			}
			text, _ := ns[0]["text"].(string)
			if ns[0]["kind"] != "stale-lock-removed" || !strings.HasPrefix(text, "removed stale lock '"+lock+"' (age 1h0m") ||
				!strings.HasSuffix(text, "): it is older than the stale-after limit of 2m0s; retrying") {
				t.Errorf("note %v; want kind stale-lock-removed and a text naming %s, its age and why", ns[0], lock)
			}
			if last := recs[len(recs)-1]; last["msg"] != "summary" || last["result"] != "success" || last["attempts"] != 2.0 {
				t.Errorf("summary %v; want a success at the second attempt", last)
			}
			if got := r.Refs(ref)[ref]; got != r.Commit {
				t.Errorf("%s = %q, want %s", ref, got, r.Commit)
			}
		})
	}
}

// TestLogNoteRebase: a refretry push --rebase whose branch is behind the remote
// rebases it and pushes again; its JSON log has a note record saying what was rebased
// onto which remote tip.
func TestLogNoteRebase(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			s := newPushSetup(t, g, backend)
			theirs := s.client.Run("--git-dir="+s.remote, "rev-parse", "main")
			res := pushRun(t, s.client, nil, "refretry", "--log-format=json", "push", "--rebase", "origin", "main")
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			recs := jsonLines(t, extractJSON(res.stderr))
			ns := notes(t, recs)
			if len(ns) != 1 {
				t.Fatalf("%d note records, want 1:\n%s", len(ns), res.stderr)
			}
			if want := "rebased main onto the remote tip " + theirs[:12]; ns[0]["kind"] != "rebase" || ns[0]["text"] != want {
				t.Errorf("note %v; want kind rebase and text %q", ns[0], want)
			}
			if last := recs[len(recs)-1]; last["msg"] != "summary" || last["command"] != "push" || last["result"] != "success" {
				t.Errorf("summary %v; want push's success", last)
			}
			mine := s.client.Run("rev-parse", "HEAD")
			if parent := s.client.Run("rev-parse", "HEAD^"); parent != theirs {
				t.Errorf("HEAD's parent is %s, want the remote tip %s", parent, theirs)
			}
			if got := s.client.Run("--git-dir="+s.remote, "rev-parse", "main"); got != mine {
				t.Errorf("the remote's main is %s, want the rebased %s", got, mine)
			}
		})
	}
}
