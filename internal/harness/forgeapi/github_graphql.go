package forgeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// graphql answers POST /graphql: a query of the repository, its refs and their
// commits, or the mutation createCommitOnBranch. Like GitHub's, it answers 200 to
// everything it understood, with what failed in errors.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query         string
		Variables     map[string]any
		OperationName string
	}
	jerr := json.Unmarshal(readBody(r), &in)
	var doc *gqlDoc
	perr := jerr
	if jerr == nil {
		doc, perr = parseGraphQL(in.Query)
	}
	var op *gqlOp
	if doc != nil {
		op = doc.operation(in.OperationName)
	}
	kind := GitHubGraphQLQuery
	if op != nil && op.typ == "mutation" {
		kind = GitHubCommitOnBranch
	}
	s.handle(w, r, kind, func(w http.ResponseWriter, r *http.Request) {
		if _, ok := githubToken(r); !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "This endpoint requires you to be authenticated.",
				"documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"})
			return
		}
		tok, ok := s.githubAuth(w, r, false)
		switch {
		case !ok:
		case jerr != nil:
			githubError(w, http.StatusBadRequest, "Problems parsing JSON", "")
		case perr != nil:
			writeJSON(w, http.StatusOK, map[string]any{"errors": []*gqlError{{Message: perr.Error()}}})
		case op == nil:
			writeJSON(w, http.StatusOK, map[string]any{"errors": []*gqlError{{Message: fmt.Sprintf("No operation named %q", in.OperationName)}}})
		default:
			data, errs := execute(op, in.Variables, s.graphqlRoot(op.typ, tok))
			answer := map[string]any{"data": data}
			if len(errs) > 0 {
				answer["errors"] = errs
			}
			writeJSON(w, http.StatusOK, answer)
		}
	})
}

func (s *Server) graphqlRoot(typ string, tok Token) *gqlObject {
	if typ == "mutation" {
		return &gqlObject{typ: "Mutation", fields: map[string]any{
			"createCommitOnBranch": resolver(func(args map[string]any) (any, *gqlError) {
				return s.commitOnBranch(args["input"], tok)
			}),
		}}
	}
	return &gqlObject{typ: "Query", fields: map[string]any{
		"repository": resolver(s.gqlRepository),
		"viewer":     &gqlObject{typ: "User", fields: map[string]any{"login": tok.Login}},
	}}
}

func (s *Server) gqlRepository(args map[string]any) (any, *gqlError) {
	owner, _ := args["owner"].(string)
	name, _ := args["name"].(string)
	if owner+"/"+name != s.opts.Repo {
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name)}
	}
	return &gqlObject{typ: "Repository", fields: map[string]any{
		"name": name, "nameWithOwner": s.opts.Repo,
		"owner": &gqlObject{typ: "Organization", fields: map[string]any{"login": owner}},
		"defaultBranchRef": resolver(func(map[string]any) (any, *gqlError) {
			return s.gqlRef("refs/heads/" + s.opts.Branch)
		}),
		"ref": resolver(func(a map[string]any) (any, *gqlError) {
			q, _ := a["qualifiedName"].(string)
			if !strings.HasPrefix(q, "refs/") {
				q = "refs/heads/" + q
			}
			return s.gqlRef(q)
		}),
	}}, nil
}

// gqlRef is ref as a Ref object, nil when there is no such ref.
func (s *Server) gqlRef(ref string) (any, *gqlError) {
	oid, err := s.repo.resolve(ref)
	if err != nil {
		return nil, &gqlError{Message: err.Error()}
	}
	if oid == "" {
		return (*gqlObject)(nil), nil
	}
	prefix := ref[:strings.LastIndexByte(ref, '/')+1]
	if strings.HasPrefix(ref, "refs/heads/") {
		prefix = "refs/heads/"
	}
	return &gqlObject{typ: "Ref", fields: map[string]any{
		"name": strings.TrimPrefix(ref, prefix), "prefix": prefix,
		"target": resolver(func(map[string]any) (any, *gqlError) { return s.gqlCommit(oid) }),
	}}, nil
}

// gqlCommit is commit oid as a Commit object.
func (s *Server) gqlCommit(oid string) (any, *gqlError) {
	c, err := s.repo.readCommit(oid)
	if err != nil {
		return nil, &gqlError{Message: err.Error()}
	}
	headline, body, _ := strings.Cut(strings.TrimSuffix(c.Message, "\n"), "\n")
	actor := func(i ident) *gqlObject {
		return &gqlObject{typ: "GitActor", fields: map[string]any{"name": i.Name, "email": i.Email, "date": i.When.Format(time.RFC3339)}}
	}
	parents := make([]*gqlObject, 0, len(c.Parents))
	for _, p := range c.Parents {
		parents = append(parents, &gqlObject{typ: "Commit", fields: map[string]any{"oid": p}})
	}
	return &gqlObject{typ: "Commit", fields: map[string]any{
		"oid": oid, "abbreviatedOid": oid[:7], "message": c.Message,
		"messageHeadline": headline, "messageBody": strings.TrimPrefix(body, "\n"),
		"url":           s.git.BaseURL() + "/" + s.opts.Repo + "/commit/" + oid,
		"committedDate": c.Committer.When.Format(time.RFC3339), "authoredDate": c.Author.When.Format(time.RFC3339),
		"author": actor(c.Author), "committer": actor(c.Committer),
		"tree": &gqlObject{typ: "Tree", fields: map[string]any{"oid": c.Tree}},
		"parents": resolver(func(map[string]any) (any, *gqlError) {
			return &gqlObject{typ: "CommitConnection", fields: map[string]any{"nodes": parents, "totalCount": len(parents)}}, nil
		}),
		"signature": resolver(func(map[string]any) (any, *gqlError) { return s.gqlSignature(c), nil }),
	}}, nil
}

// gqlSignature is c's signature as GitHub describes it, nil when it has none.
func (s *Server) gqlSignature(c commitInfo) *gqlObject {
	if !c.Signed {
		return nil
	}
	valid, reason := s.verification(c)
	typ := "GpgSignature"
	if s.signer.Format == "ssh" {
		typ = "SshSignature"
	}
	return &gqlObject{typ: typ, fields: map[string]any{
		"isValid": valid, "state": strings.ToUpper(reason), "wasSignedByGitHub": valid,
	}}
}

// commitOnBranchInput is createCommitOnBranch's input.
type commitOnBranchInput struct {
	Branch struct {
		RepositoryNameWithOwner, BranchName, ID string
	}
	ExpectedHeadOid *string
	Message         struct{ Headline, Body string }
	FileChanges     struct {
		Additions []struct{ Path, Contents string }
		Deletions []struct{ Path string }
	}
	ClientMutationID *string
}

// commitOnBranch is createCommitOnBranch.
func (s *Server) commitOnBranch(input any, tok Token) (any, *gqlError) {
	var in commitOnBranchInput
	b, _ := json.Marshal(input)
	if err := json.Unmarshal(b, &in); err != nil || input == nil {
		return nil, &gqlError{Message: "Argument 'input' on Field 'createCommitOnBranch' has an invalid value"}
	}
	switch {
	case in.ExpectedHeadOid == nil:
		return nil, &gqlError{Message: "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for expectedHeadOid (Expected value to not be null)"}
	case in.Branch.ID != "":
		return nil, &gqlError{Type: "UNPROCESSABLE", Message: "forgeapi: a branch given by its node id is not modelled; give repositoryNameWithOwner and branchName"}
	case in.Branch.RepositoryNameWithOwner != s.opts.Repo:
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", in.Branch.RepositoryNameWithOwner)}
	case in.Message.Headline == "":
		return nil, &gqlError{Type: "UNPROCESSABLE", Message: "A commit message headline is required"}
	case tok.ReadOnly:
		return nil, &gqlError{Type: "FORBIDDEN", Message: "Resource not accessible by integration"}
	}
	oid, gerr := s.landOnBranch(in, tok)
	if gerr != nil {
		return nil, gerr
	}
	commit, gerr := s.gqlCommit(oid)
	if gerr != nil {
		return nil, gerr
	}
	ref, _ := s.gqlRef("refs/heads/" + in.Branch.BranchName)
	var mutationID any
	if in.ClientMutationID != nil {
		mutationID = *in.ClientMutationID
	}
	return &gqlObject{typ: "CreateCommitOnBranchPayload", fields: map[string]any{
		"commit": commit, "ref": ref, "clientMutationId": mutationID,
	}}, nil
}

// landOnBranch makes in's commit on the branch's head, which must be
// in.ExpectedHeadOid when the commit is made and when the branch is moved (a
// compare-and-swap): a lost race is STALE_DATA.
func (s *Server) landOnBranch(in commitOnBranchInput, tok Token) (string, *gqlError) {
	ref := "refs/heads/" + in.Branch.BranchName
	expected := *in.ExpectedHeadOid
	stale := &gqlError{Type: "STALE_DATA", Message: fmt.Sprintf("Expected branch to point to %q but it did not.  Pull and try again.", expected)}
	head, err := s.repo.resolve(ref)
	switch {
	case err != nil:
		return "", &gqlError{Message: err.Error()}
	case head == "":
		return "", &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("A ref named %q does not exist.", ref)}
	case head != expected:
		return "", stale
	}
	tree, gerr := s.applyFileChanges(head, in)
	if gerr != nil {
		return "", gerr
	}
	msg := in.Message.Headline + "\n"
	if in.Message.Body != "" {
		msg += "\n" + in.Message.Body + "\n"
	}
	author := ident{Name: tok.Name, Email: tok.Email, When: s.opts.Now()}
	committer := webFlow
	committer.When = author.When
	oid, err := s.repo.commitTree(tree, []string{head}, msg, author, committer, &s.signer)
	if err != nil {
		return "", &gqlError{Message: err.Error()}
	}
	switch rule, err := s.githubRuleBroken(ref, oid, head); {
	case err != nil:
		return "", &gqlError{Message: err.Error()}
	case rule != "":
		return "", &gqlError{Type: "UNPROCESSABLE", Message: ruleViolation(rule)}
	}
	switch err := s.repo.updateRef(ref, oid, head); {
	case err == errMoved:
		return "", stale
	case err != nil:
		return "", &gqlError{Message: err.Error()}
	}
	return oid, nil
}

// applyFileChanges writes the tree of head with in's deletions, then its additions,
// as createCommitOnBranch does: every addition is a regular file (mode 100644),
// whatever was at its path (an executable, a symbolic link).
func (s *Server) applyFileChanges(head string, in commitOnBranchInput) (string, *gqlError) {
	c, err := s.repo.readCommit(head)
	if err != nil {
		return "", &gqlError{Message: err.Error()}
	}
	t := newTreeEdit(s.repo, c.Tree)
	for _, d := range in.FileChanges.Deletions {
		had, err := t.remove(d.Path)
		if err == nil && !had {
			err = fmt.Errorf("A path was requested for deletion which does not exist as of commit oid `%s`", head)
		}
		if err != nil {
			return "", &gqlError{Type: "UNPROCESSABLE", Message: err.Error()}
		}
	}
	for _, a := range in.FileChanges.Additions {
		data, err := base64.StdEncoding.DecodeString(a.Contents)
		if err != nil {
			return "", &gqlError{Type: "UNPROCESSABLE", Message: fmt.Sprintf("contents of %q is not Base64", a.Path)}
		}
		blob, err := s.repo.writeBlob(data)
		if err == nil {
			err = t.set(a.Path, entry{Mode: "100644", Type: "blob", OID: blob})
		}
		if err != nil {
			return "", &gqlError{Type: "UNPROCESSABLE", Message: err.Error()}
		}
	}
	tree, err := t.write()
	if err != nil {
		return "", &gqlError{Message: err.Error()}
	}
	return tree, nil
}
