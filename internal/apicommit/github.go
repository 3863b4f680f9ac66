package apicommit

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/replay"
)

// githubREST makes each commit with POST /repos/{o}/{r}/git/commits from the tree the
// caller pushed (modes, symbolic links, submodules and merges kept), then moves the
// branch with PATCH /repos/{o}/{r}/git/refs/heads/{branch}, force false: GitHub
// refuses an update that is not a fast-forward of the branch as it is ("Update is
// not a fast forward"), and the first commit's parent is Base, so the branch moves
// only from Base. With an App token no author or committer is given, so that GitHub
// signs the commits (its web-flow key); a person's token gives the commits' own.
type githubREST struct{}

func (githubREST) land(ctx context.Context, p *Plan, now time.Time) (string, error) {
	e, repo := p.e, "/repos/"+p.e.Repo+"/git/"
	parent := p.l.Base
	for _, c := range p.l.Commits {
		in := map[string]any{"message": string(c.Message), "tree": c.Tree, "parents": []string{parent}}
		if !e.app() {
			in["author"], in["committer"] = person(c.Author), person(c.Committer)
		}
		var out struct {
			SHA string `json:"sha"`
		}
		a, err := e.call(ctx, http.MethodPost, repo+"commits", in, &out)
		if err != nil {
			return "", err
		}
		if a.status != http.StatusCreated || out.SHA == "" {
			return "", classifyGitHub(a, now)
		}
		parent = out.SHA
	}
	a, err := e.call(ctx, http.MethodPatch, repo+"refs/heads/"+p.l.Branch, map[string]any{"sha": parent, "force": false}, nil)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusOK {
		return "", classifyGitHub(a, now)
	}
	return parent, nil
}

// person is an author or committer as GitHub's git data API takes it.
func person(id replay.Ident) map[string]string {
	p := map[string]string{"name": id.Name, "email": id.Email}
	if d := gitDate(id.Date); d != "" {
		p["date"] = d
	}
	return p
}

// graphQLFiles is what createCommitOnBranch writes: every addition as a regular file.
var graphQLFiles = fileAPI{name: "GitHub's createCommitOnBranch"}

// githubGraphQL makes one commit with GraphQL's createCommitOnBranch, which GitHub
// signs whatever the token: the changes from Base to the tip, with expectedHeadOid
// Base. A lost race is HTTP 200 with a STALE_DATA error.
type githubGraphQL struct{}

const commitOnBranch = `mutation($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) { commit { oid } }
}`

func (githubGraphQL) land(ctx context.Context, p *Plan, now time.Time) (string, error) {
	content, err := blobs(ctx, p.l.Repo, newBlobs(p.list))
	if err != nil {
		return "", err
	}
	additions, deletions := []map[string]string{}, []map[string]string{}
	for _, c := range p.list {
		if c.NewMode == "" {
			deletions = append(deletions, map[string]string{"path": c.Path})
			continue
		}
		additions = append(additions, map[string]string{"path": c.Path, "contents": base64.StdEncoding.EncodeToString(content[c.NewOID])})
	}
	headline, body, _ := strings.Cut(strings.TrimRight(string(p.l.tip().Message), "\n"), "\n")
	input := map[string]any{
		"branch":          map[string]string{"repositoryNameWithOwner": p.e.Repo, "branchName": p.l.Branch},
		"message":         map[string]string{"headline": headline, "body": strings.TrimLeft(body, "\n")},
		"expectedHeadOid": p.l.Base,
		"fileChanges":     map[string]any{"additions": additions, "deletions": deletions},
	}
	var out graphQLAnswer
	a, err := p.e.call(ctx, http.MethodPost, graphQLURL(p.e.API), map[string]any{"query": commitOnBranch, "variables": map[string]any{"input": input}}, &out)
	if err != nil {
		return "", err
	}
	if f := classifyGraphQL(a, out, now); f != nil {
		return "", f
	}
	return out.Data.CreateCommitOnBranch.Commit.OID, nil
}

// graphQLURL is the GraphQL endpoint beside a REST root: /graphql on api.github.com,
// /api/graphql beside a GitHub Enterprise Server's /api/v3.
func graphQLURL(api string) string {
	if root, ok := strings.CutSuffix(api, "/api/v3"); ok {
		return root + "/api/graphql"
	}
	return api + "/graphql"
}

// graphQLAnswer is createCommitOnBranch's answer.
type graphQLAnswer struct {
	Data struct {
		CreateCommitOnBranch struct {
			Commit struct {
				OID string `json:"oid"`
			} `json:"commit"`
		} `json:"createCommitOnBranch"`
	} `json:"data"`
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

// classifyGitHub is what a REST answer other than the one expected means:
//
//   - 422 "Update is not a fast forward": the branch moved (behind: replayed);
//   - 422 "Repository rule violations found" and the rules, or a protected branch:
//     declined, the rules kept as the failure's Policy;
//   - 403 or 429 with Retry-After, or no requests left until x-ratelimit-reset, or
//     the secondary limit's words: a limit (transport, waited for);
//   - 401, and 403 "Resource not accessible by integration" (a token without
//     contents: write): auth; 404: not found; 5xx: the outcome is unknown;
//   - any other 4xx (422 validation, 409): rejected.
func classifyGitHub(a answer, now time.Time) *failure.Error {
	switch {
	case a.status == http.StatusUnprocessableEntity && strings.Contains(a.message, "not a fast forward"):
		return a.fail(failure.Behind)
	case strings.Contains(a.message, "Repository rule violations") || strings.Contains(a.message, "Protected branch"):
		f := a.fail(failure.Declined)
		f.Policy = policyLines(a.message)
		return f
	}
	return a.rest(now)
}

// classifyGraphQL is what a createCommitOnBranch answer means, nil for a commit made.
// GraphQL answers 200 to what it understood, with what failed in errors: STALE_DATA
// (expectedHeadOid is not the branch's head: behind), RATE_LIMITED (with
// x-ratelimit-reset: waited for), FORBIDDEN (auth), NOT_FOUND; a rule's refusal
// (declined); anything else is rejected. A status other than 200 is read as REST's.
func classifyGraphQL(a answer, out graphQLAnswer, now time.Time) *failure.Error {
	if a.status != http.StatusOK {
		return classifyGitHub(a, now)
	}
	if len(out.Errors) == 0 {
		if out.Data.CreateCommitOnBranch.Commit.OID == "" {
			a.message = "no commit in the answer"
			return a.fail(failure.Other)
		}
		return nil
	}
	e := out.Errors[0]
	a.message = e.Type + ": " + e.Message
	switch {
	case e.Type == "STALE_DATA":
		return a.fail(failure.Behind)
	case e.Type == "RATE_LIMITED":
		a.status = http.StatusTooManyRequests // its headers say how long
		return a.common(now)
	case e.Type == "FORBIDDEN":
		return a.fail(failure.Auth)
	case e.Type == "NOT_FOUND":
		return a.fail(failure.NotFound)
	case strings.Contains(e.Message, "Repository rule violations") || strings.Contains(e.Message, "Protected branch"):
		f := a.fail(failure.Declined)
		f.Policy = policyLines(e.Message)
		return f
	}
	return a.fail(failure.Rejected)
}

// policyLines are a rule's refusal's lines, without blank ones.
func policyLines(msg string) []string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
