package forgeapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// client calls a fake forge's API with one token.
type client struct {
	t      testing.TB
	base   string
	header string // the header carrying the token
	value  string // its value
}

// github is a client of s's REST API (and GraphQL) with Authorization: Bearer token
// ("" for none).
func github(t testing.TB, s *forgeapi.Server, token string) *client {
	return &client{t: t, base: s.APIURL(), header: "Authorization", value: "Bearer " + token}
}

// gitlab is a client of s's API with token in header (PRIVATE-TOKEN, JOB-TOKEN).
func gitlab(t testing.TB, s *forgeapi.Server, header, token string) *client {
	return &client{t: t, base: s.APIURL(), header: header, value: token}
}

// reply is an answer.
type reply struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

// do sends body (marshalled to JSON unless it is a string) to path. A request that
// gets no answer fails the test (with Errorf: do runs on other goroutines too) and
// returns status 0.
func (c *client) do(method, path string, body any) reply {
	c.t.Helper()
	var in io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		in = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		in = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, in)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return reply{}
	}
	if c.value != "Bearer " && c.value != "" {
		req.Header.Set(c.header, c.value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return reply{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Errorf("%s %s: reading the answer: %v", method, path, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	json.Unmarshal(b, &r.json)
	return r
}

// graphql posts a GraphQL document with variables to the fake GitHub.
func (c *client) graphql(query string, vars map[string]any) reply {
	c.t.Helper()
	return c.do("POST", "/graphql", map[string]any{"query": query, "variables": vars})
}

// commit makes a commit of tree on parent through the REST API.
func (c *client) commit(message, tree, parent string) reply {
	c.t.Helper()
	return c.do("POST", "/repos/acme/widgets/git/commits", map[string]any{"message": message, "tree": tree, "parents": []string{parent}})
}

// tip is branch's commit on s and its tree.
func tip(s *forgeapi.Server, branch string) (head, tree string) {
	head = s.Head(branch)
	return head, s.Git("rev-parse", head+"^{tree}")
}

// race runs send(0) to send(n-1) at once, each on a goroutine of its own released
// together, and returns their replies in order.
func race(n int, send func(i int) reply) []reply { return testutil.Together(n, send) }

// get is the value at keys (object keys, or list indexes as ints) in r's JSON, nil
// when there is none.
func (r reply) get(keys ...any) any {
	var v any = r.json
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// str is get as a string.
func (r reply) str(keys ...any) string { s, _ := r.get(keys...).(string); return s }

// want fails the test unless r has status and its message (GitHub's and GitLab's
// "message") is message.
func (r reply) want(t testing.TB, status int, message string) {
	t.Helper()
	if r.status != status || r.str("message") != message {
		t.Errorf("answer %d %s\nwant %d with message %q", r.status, r.body, status, message)
	}
}

// work is a client's repository whose origin is a fake forge's repository.
type work struct {
	t   testing.TB
	git string
	dir string
	env []string
}

// clone clones s's repository.
func clone(t testing.TB, s *forgeapi.Server) *work {
	t.Helper()
	root := t.TempDir()
	w := &work{t: t, git: testutil.NewGit(t).Path, dir: filepath.Join(root, "w"), env: testutil.NoMaintenanceEnv(t, root)}
	cmd := exec.Command(w.git, "clone", "-q", s.CloneURL(), w.dir)
	cmd.Env = w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	w.run("config", "user.name", "Job")
	w.run("config", "user.email", "job@example.invalid")
	return w
}

// run runs git in the work tree; a failure fails the test.
func (w *work) run(args ...string) string {
	w.t.Helper()
	out, err := w.try(args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs git in the work tree and returns its trimmed output, stderr included.
func (w *work) try(args ...string) (string, error) {
	cmd := exec.Command(w.git, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// commitAll writes files (path to content; a content starting with "#!" is an
// executable) and symbolic links (path to target), and commits the work tree.
func (w *work) commitAll(msg string, files, links map[string]string) {
	w.t.Helper()
	testutil.WriteFiles(w.t, w.dir, files, links)
	w.run("add", "-A")
	w.run("commit", "-q", "-m", msg)
}

// verify runs git verify-commit on oid in w, s's key trusted (its config and
// environment), and returns its error with its output.
func (w *work) verify(s *forgeapi.Server, oid string) error {
	cmd := exec.Command(w.git, append(s.Signer().ConfigArgs(), "verify-commit", oid)...)
	cmd.Dir, cmd.Env = w.dir, append(w.env[:len(w.env):len(w.env)], s.Signer().Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git verify-commit %s: %w\n%s", oid, err, out)
	}
	return nil
}
