package apicommit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/replay"
)

// Landing is one landing through a forge's API: Commits, made locally on Base, made
// again by the forge on the remote branch Branch, which the caller last saw at Base.
type Landing struct {
	Repo   replay.Repo // where the commits are (their trees and blobs)
	Branch string      // "main"
	// Base is the branch's value on the remote that Commits were replayed onto:
	// GitHub's compare-and-swap holds the branch to it; Gitea's and GitLab's checks
	// per file hold each file the commit writes to its content there.
	Base string
	// Commits are a line of commits on Base, oldest first, as replay.ReadCommits
	// reads them (ID, Tree, Message, Author). A route that makes one commit a request
	// (GitHub's git data) makes each; the file-level ones make one commit of the last
	// one's tree, with its message and author.
	Commits []replay.Commit
}

func (l Landing) tip() replay.Commit { return l.Commits[len(l.Commits)-1] }

// route is how a forge makes a landing's commits.
type route interface {
	land(ctx context.Context, p *Plan, now time.Time) (string, error)
}

// Plan is a landing checked and ready to send through the route its forge takes.
type Plan struct {
	e     Endpoint
	l     Landing
	list  []Change // the changes from Base to the tip, for a file-level route
	route route
	// Objects is set when the route makes commits of trees the remote must already
	// have: the caller pushes the tip's objects (to a staging ref) first.
	Objects bool
	// Route names the route, for notes: "GitHub's git data API", ….
	Route string
	// Signing says whether the forge signs the commits it makes on this route, for
	// notes: GitHub does with an App token, or through GraphQL; Gitea when its instance
	// is configured to; GitLab never.
	Signing string
}

// Plan checks l against the route e's forge takes for it, and refuses (a
// *failure.Error of class Rejected) what that route cannot write, before anything is
// sent. GitHub takes its git data API (modes, symbolic links and submodules kept,
// each commit made), unless the token is a person's and the changes are regular
// files: then GraphQL's createCommitOnBranch, which GitHub signs for any token.
// Gitea and GitLab take their file-level APIs, one commit for the whole line.
func (e Endpoint) Plan(ctx context.Context, l Landing) (*Plan, error) {
	if len(l.Commits) == 0 {
		return nil, fmt.Errorf("apicommit: a landing of no commits")
	}
	p := &Plan{e: e, l: l}
	if e.Kind == GitHub && e.app() {
		p.route, p.Objects, p.Route, p.Signing = githubREST{}, true, "GitHub's git data API", signings[GitHub]
		return p, nil
	}
	list, err := changes(ctx, l.Repo, l.Base, l.tip().ID)
	if err != nil {
		return nil, err
	}
	p.list = list
	if e.Kind == GitHub && (len(list) == 0 || graphQLFiles.refuse(list) != "") {
		// A person's token: GitHub signs no git data commit of it, but that API keeps
		// what GraphQL cannot write, and makes a commit that changes nothing.
		p.route, p.Objects, p.Route, p.Signing = githubREST{}, true, "GitHub's git data API", "not signed by GitHub: the token is a person's"
		return p, nil
	}
	api := map[Kind]fileAPI{GitHub: graphQLFiles, Gitea: giteaFiles, GitLab: gitlabFiles}[e.Kind]
	p.route, p.Route, p.Signing = map[Kind]route{GitHub: githubGraphQL{}, Gitea: gitea{}, GitLab: gitlab{}}[e.Kind], api.name, signings[e.Kind]
	switch {
	case len(list) == 0:
		return nil, refusal(api.name + " cannot make a commit that changes nothing")
	case api.refuse(list) != "":
		return nil, refusal(api.refuse(list))
	case e.Kind == Gitea:
		return p, p.refuseLFS(ctx)
	}
	return p, nil
}

// signings are what each forge does about signing the commits its API makes.
var signings = map[Kind]string{
	GitHub: "signed by GitHub",
	Gitea:  "signed by Gitea where its instance signs API commits",
	GitLab: "not signed: GitLab signs no API commit",
}

// Land makes the plan's commits on the branch and returns the commit the forge made
// last, which the branch then holds. Every failure is a *failure.Error in the
// forge's words (classify.go); now is the clock a rate limit's reset is read on.
func (p *Plan) Land(ctx context.Context, now time.Time) (string, error) {
	return p.route.land(ctx, p, now)
}

// app reports whether e's token is a GitHub App's (an installation token, as a job's
// GITHUB_TOKEN is), which GitHub signs git data commits for; a token of another
// kind is a person's (classic, fine-grained, OAuth, an App acting for a user).
func (e Endpoint) app() bool {
	for _, person := range []string{"ghp_", "github_pat_", "gho_", "ghu_"} {
		if strings.HasPrefix(e.Token, person) {
			return false
		}
	}
	return true
}

// gitDate is a commit's date ("<seconds> <zone>") as RFC 3339, "" when it does not
// read.
func gitDate(d string) string {
	secs, zone, ok := strings.Cut(d, " ")
	t, err := time.Parse("-0700", zone)
	var s int64
	if _, serr := fmt.Sscan(secs, &s); !ok || err != nil || serr != nil {
		return ""
	}
	return time.Unix(s, 0).In(t.Location()).Format(time.RFC3339)
}
