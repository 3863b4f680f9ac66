package apicommit

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/replay"
)

// Kind is a forge whose API can make a commit.
type Kind string

const (
	GitHub Kind = "github"
	Gitea  Kind = "gitea" // Forgejo too: the same contents API
	GitLab Kind = "gitlab"
)

// Kinds are the forges, as --forge takes them.
var Kinds = []Kind{GitHub, Gitea, GitLab}

// Want is what the caller said about the forge; each field empty is found (Resolve).
// Its fields are forge.API's, in the same order, so that one converts to the other.
type Want struct {
	Forge  string // "github", "gitea", "gitlab"
	URL    string // the API's root
	Token  string
	Client *http.Client
}

// Endpoint is one repository's API on a forge, and the token it is called with.
type Endpoint struct {
	Kind Kind
	// API is the API's root: https://api.github.com (or https://<host>/api/v3),
	// https://<host>/api/v1 (Gitea), https://<host>/api/v4 (GitLab).
	API string
	// Repo is the repository: "owner/name", or GitLab's project id or path.
	Repo string
	// Token is sent with every request and never written anywhere else (not in an
	// error, a note or a log); From names where it came from, for messages.
	Token, From string
	// Job marks GitLab's CI_JOB_TOKEN, which travels in JOB-TOKEN.
	Job  bool
	HTTP *http.Client

	requests *atomic.Int64
	self     *account // the token's account, once asked (Gitea)
}

// account is the account a token stands for, as its commits name it.
type account struct {
	mu          sync.Mutex
	asked       bool   // the forge was asked (and answered)
	name, email string // "" when it would not say
}

// Requests is how many requests the endpoint has sent.
func (e Endpoint) Requests() int {
	if e.requests == nil {
		return 0
	}
	return int(e.requests.Load())
}

// ConfigError is a forge, API or token that could not be found: nothing was sent.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// ForRemote finds the endpoint of the repository git pushes remote to: it reads the
// remote's URL with r's git (git ls-remote --get-url) and resolves it (Resolve). It
// returns that URL too. A remote without a URL is a *ConfigError, as is whatever
// Resolve cannot find; git's failure to run at all is returned as it is.
func ForRemote(ctx context.Context, r replay.Repo, env []string, remote string, w Want) (Endpoint, string, error) {
	c, err := gitexec.Capture(r.Command(ctx, env, "ls-remote", "--get-url", remote))
	if err != nil {
		return Endpoint{}, "", err
	}
	raw := strings.TrimSpace(string(c.Stdout))
	if c.Code != 0 || raw == "" {
		return Endpoint{}, "", &ConfigError{"cannot read the URL of the remote " + remote}
	}
	e, err := Resolve(raw, env, w)
	return e, raw, err
}

// Resolve finds the endpoint of the repository at remoteURL (as git ls-remote
// --get-url prints it) from w, then the environment env, then the URL:
//
//   - the forge: w.Forge; else Gitea's or GitHub's Actions (GITEA_ACTIONS,
//     GITHUB_ACTIONS) or GitLab CI (GITLAB_CI); else the URL's host (github.com,
//     a host naming gitlab, gitea, forgejo or codeberg);
//   - the API: w.URL, else REFRETRY_API_URL, else the CI's own (GITHUB_API_URL in
//     GitHub's and Gitea's Actions, CI_API_V4_URL in GitLab CI), else made from the
//     URL (api.github.com for github.com, /api/v3, /api/v1 or /api/v4 on its host);
//   - the repository: the URL's path (owner/name; GitLab: the project's path), or
//     GitLab CI's CI_PROJECT_ID when CI_PROJECT_PATH is that path;
//   - the token: w.Token, else REFRETRY_API_TOKEN, else the CI's own: GITHUB_TOKEN
//     (GitHub), GITEA_TOKEN then GITHUB_TOKEN (Gitea), CI_JOB_TOKEN (GitLab).
//
// An ssh remote stands for its host's https address (webURL).
func Resolve(remoteURL string, env []string, w Want) (Endpoint, error) {
	u, ok := webURL(remoteURL)
	if !ok {
		return Endpoint{}, &ConfigError{fmt.Sprintf("the remote %s is not an http(s) or ssh URL: push --api finds the forge's API from it", Anonymous(remoteURL))}
	}
	get := func(k string) string { return gitexec.Getenv(env, k) }
	kind, err := forgeOf(Kind(w.Forge), u.Hostname(), get)
	if err != nil {
		return Endpoint{}, err
	}
	path := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	if !strings.Contains(path, "/") {
		return Endpoint{}, &ConfigError{fmt.Sprintf("the remote %s names no repository (owner/name)", Anonymous(remoteURL))}
	}
	e := Endpoint{Kind: kind, HTTP: w.Client, requests: new(atomic.Int64), self: new(account)}
	if e.HTTP == nil {
		e.HTTP = http.DefaultClient
	}
	e.API, e.Repo = apiOf(kind, u, path, w.URL, get)
	e.Token, e.From, e.Job = tokenOf(kind, w.Token, get)
	if e.Token == "" {
		return Endpoint{}, &ConfigError{fmt.Sprintf("no token for %s's API: set REFRETRY_API_TOKEN (or the CI's own, %s)", kind, tokenNames[kind])}
	}
	return e, nil
}

// webURL is the forge's web address of the repository at remote: an http(s) URL as
// it is; an ssh one (ssh://[user@]host[:port]/path, or scp-like [user@]host:path) as
// https://host/path, since a forge serves its API on its web host, not on the port of
// its ssh server. Other remotes (a path, file://, git://) name no forge.
func webURL(remote string) (*url.URL, bool) {
	if !strings.Contains(remote, "://") {
		// scp-like: a colon before any slash (git's rule), and a host before it that
		// is not a drive letter (C:/ or C:\ is a path).
		i := strings.Index(remote, ":")
		if i <= 0 || strings.Contains(remote[:i], "/") || (i == 1 && len(remote) > 2 && strings.ContainsRune(`/\`, rune(remote[2]))) {
			return nil, false
		}
		host := remote[strings.LastIndex(remote[:i], "@")+1 : i]
		remote = "ssh://" + host + "/" + strings.TrimPrefix(remote[i+1:], "/")
	}
	u, err := url.Parse(remote)
	if err != nil || u.Host == "" {
		return nil, false
	}
	switch u.Scheme {
	case "https", "http":
		return u, true
	case "ssh", "git+ssh", "ssh+git":
		return &url.URL{Scheme: "https", Host: u.Hostname(), Path: u.Path}, true
	}
	return nil, false
}

// tokenNames are the CI's own token variables of each forge, in the order they are read.
var tokenNames = map[Kind]string{GitHub: "GITHUB_TOKEN", Gitea: "GITEA_TOKEN, GITHUB_TOKEN", GitLab: "CI_JOB_TOKEN"}

// forgeOf is the forge: the caller's, the CI's, or the host's.
func forgeOf(k Kind, host string, get func(string) string) (Kind, error) {
	switch {
	case k != "":
		for _, known := range Kinds {
			if k == known {
				return k, nil
			}
		}
		return "", &ConfigError{fmt.Sprintf("--forge %s: not github, gitea or gitlab", k)}
	case get("GITEA_ACTIONS") == "true":
		return Gitea, nil
	case get("GITHUB_ACTIONS") == "true":
		return GitHub, nil
	case get("GITLAB_CI") == "true":
		return GitLab, nil
	case host == "github.com" || strings.HasPrefix(host, "github."):
		return GitHub, nil
	case strings.Contains(host, "gitlab"):
		return GitLab, nil
	case strings.Contains(host, "gitea") || strings.Contains(host, "forgejo") || strings.Contains(host, "codeberg"):
		return Gitea, nil
	}
	return "", &ConfigError{fmt.Sprintf("cannot tell which forge %s is: give --forge github, gitea or gitlab", host)}
}

// apiOf is the API's root and the repository's name in it.
func apiOf(k Kind, u *url.URL, path, given string, get func(string) string) (api, repo string) {
	root := u.Scheme + "://" + u.Host
	segs := strings.Split(path, "/")
	prefix := strings.Join(segs[:len(segs)-2], "/")
	if prefix != "" {
		prefix = "/" + prefix
	}
	repo = strings.Join(segs[len(segs)-2:], "/")
	api = firstOf(given, get("REFRETRY_API_URL"))
	switch k {
	case GitHub:
		if api == "" && get("GITHUB_ACTIONS") == "true" {
			api = get("GITHUB_API_URL")
		}
		if api == "" && u.Hostname() == "github.com" {
			api = "https://api.github.com"
		} else if api == "" {
			api = root + prefix + "/api/v3"
		}
	case Gitea:
		if api == "" && get("GITEA_ACTIONS") == "true" {
			api = get("GITHUB_API_URL")
		}
		if api == "" {
			api = root + prefix + "/api/v1"
		}
	case GitLab:
		repo = url.PathEscape(path)
		if get("GITLAB_CI") == "true" && get("CI_PROJECT_PATH") == path && get("CI_PROJECT_ID") != "" {
			repo = get("CI_PROJECT_ID")
		}
		api = firstOf(api, get("CI_API_V4_URL"), root+"/api/v4")
	}
	return strings.TrimRight(api, "/"), repo
}

// tokenOf is the token, where it came from, and whether it is GitLab's job token.
func tokenOf(k Kind, given string, get func(string) string) (token, from string, job bool) {
	if given != "" {
		return given, "the caller", false
	}
	names := []string{"REFRETRY_API_TOKEN"}
	switch k {
	case GitHub:
		names = append(names, "GITHUB_TOKEN")
	case Gitea:
		names = append(names, "GITEA_TOKEN", "GITHUB_TOKEN")
	case GitLab:
		names = append(names, "CI_JOB_TOKEN")
	}
	for _, n := range names {
		if v := get(n); v != "" {
			return v, n, n == "CI_JOB_TOKEN"
		}
	}
	return "", "", false
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// Anonymous is raw, a remote's URL, without the user and password it may carry, as
// git prints a remote. A remote that is not a URL (scp-like user@host:path, a path)
// carries no password and is raw itself.
func Anonymous(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if !strings.Contains(raw, "://") {
			return raw
		}
		return "(a URL that does not parse)"
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
