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
	req.SetBasicAuth(i.User, i.Password)
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
