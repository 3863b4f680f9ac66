package gitea

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// APIError is an answer of Gitea's API with an unexpected status.
type APIError struct {
	Method, Path string
	Status       int
	Body         string // the start of the answer's body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gitea: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Body)
}

// API calls Gitea's API directly (through its socket, not the proxy) as the admin: method on
// path (below /api/v1, e.g. "/user/repos") with in as its JSON body (nil: none).
// A status other than 2xx is an *APIError; out, when not nil, receives the JSON
// answer.
func (i *Instance) API(method, path string, in, out any) error {
	return i.apiAs(i.User, i.Password, method, path, in, out)
}

// apiAs is API with user's credentials.
func (i *Instance) apiAs(user, password, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("gitea: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+giteaHost+"/api/v1"+path, body)
	if err != nil {
		return fmt.Errorf("gitea: %s %s: %w", method, path, err)
	}
	req.SetBasicAuth(user, password)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := i.client.Do(req)
	if err != nil {
		return fmt.Errorf("gitea: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: string(b)}
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("gitea: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}

// CreateRepo creates the admin's repository name with one commit on main (Gitea's
// README), as POST /user/repos with auto_init.
func (i *Instance) CreateRepo(name string) error {
	return i.API(http.MethodPost, "/user/repos", map[string]any{
		"name": name, "auto_init": true, "default_branch": "main",
	}, nil)
}

// ProtectBranch protects branch of the admin's repository repo from every push
// (enable_push false), the admin's included.
func (i *Instance) ProtectBranch(repo, branch string) error {
	return i.API(http.MethodPost, "/repos/"+url.PathEscape(i.User)+"/"+url.PathEscape(repo)+"/branch_protections",
		map[string]any{"branch_name": branch, "enable_push": false}, nil)
}

// Branch returns the commit the admin's repository repo has on branch, as the API
// tells it.
func (i *Instance) Branch(repo, branch string) (string, error) {
	var b struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	err := i.API(http.MethodGet, "/repos/"+url.PathEscape(i.User)+"/"+url.PathEscape(repo)+"/branches/"+url.PathEscape(branch), nil, &b)
	return b.Commit.ID, err
}

// ServerVersion is the version Gitea's API reports.
func (i *Instance) ServerVersion() (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	err := i.API(http.MethodGet, "/version", nil, &v)
	return v.Version, err
}

// Bot makes a user who is not an admin, name, with write access to the admin's
// repository repo, and returns a token of theirs with scopes (e.g.
// "write:repository"): what a CI job's bot account holds. Gitea withholds the message
// of a 500 from such a user.
func (i *Instance) Bot(name, repo string, scopes ...string) (token string, err error) {
	password := "bot-password-" + name
	if err := i.API(http.MethodPost, "/admin/users", map[string]any{
		"username": name, "email": name + "@example.invalid", "password": password, "must_change_password": false,
	}, nil); err != nil {
		return "", err
	}
	if err := i.API(http.MethodPut, "/repos/"+url.PathEscape(i.User)+"/"+url.PathEscape(repo)+"/collaborators/"+url.PathEscape(name),
		map[string]any{"permission": "write"}, nil); err != nil {
		return "", err
	}
	var t struct {
		SHA1 string `json:"sha1"`
	}
	err = i.apiAs(name, password, http.MethodPost, "/users/"+url.PathEscape(name)+"/tokens", map[string]any{"name": "ci", "scopes": scopes}, &t)
	return t.SHA1, err
}
