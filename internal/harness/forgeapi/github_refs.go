package forgeapi

import (
	"net/http"
	"strings"
)

// answerRef answers status with GitHub's description of ref at oid.
func (s *Server) answerRef(w http.ResponseWriter, status int, ref, oid string) {
	typ := s.repo.objectType(oid)
	writeJSON(w, status, map[string]any{
		"ref": ref, "url": s.repoURL() + "/git/" + ref,
		"object": map[string]string{"sha": oid, "type": typ, "url": s.repoURL() + "/git/" + typ + "s/" + oid},
	})
}

// getRef answers GET .../git/ref/heads/<branch> (the singular path, as GitHub's).
func (s *Server) getRef(w http.ResponseWriter, r *http.Request, _ Token) {
	ref := "refs/" + r.PathValue("ref")
	oid, err := s.repo.resolve(ref)
	switch {
	case err != nil:
		githubError(w, http.StatusInternalServerError, err.Error(), "")
	case oid == "":
		githubError(w, http.StatusNotFound, "Not Found", "/git/refs#get-a-reference")
	default:
		s.answerRef(w, http.StatusOK, ref, oid)
	}
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request, _ Token) {
	var in struct{ Ref, SHA string }
	if !s.decode(w, r, &in) {
		return
	}
	const doc = "/git/refs#create-a-reference"
	switch {
	case !strings.HasPrefix(in.Ref, "refs/") || strings.Count(in.Ref, "/") < 2:
		githubError(w, http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.", doc)
		return
	case s.repo.objectType(in.SHA) == "":
		githubError(w, http.StatusUnprocessableEntity, "Object does not exist", doc)
		return
	}
	if rule, err := s.githubRuleBroken(in.Ref, in.SHA, ""); rule != "" || err != nil {
		s.refuseRef(w, ruleViolation(rule), err, doc)
		return
	}
	switch err := s.repo.updateRef(in.Ref, in.SHA, zeroOID); {
	case err == errMoved:
		githubError(w, http.StatusUnprocessableEntity, "Reference already exists", doc)
	case err != nil:
		githubError(w, http.StatusInternalServerError, err.Error(), "")
	default:
		s.answerRef(w, http.StatusCreated, in.Ref, in.SHA)
	}
}

// updateRef answers PATCH .../git/refs/heads/<branch>: with force false the update
// must be a fast-forward of the branch as it is when the update is made, checked
// and applied with a compare-and-swap, so of two racing updates from the same head
// exactly one lands.
func (s *Server) updateRef(w http.ResponseWriter, r *http.Request, _ Token) {
	var in struct {
		SHA   string
		Force bool
	}
	if !s.decode(w, r, &in) {
		return
	}
	const doc = "/git/refs#update-a-reference"
	ref := "refs/" + r.PathValue("ref")
	if s.repo.objectType(in.SHA) == "" {
		githubError(w, http.StatusUnprocessableEntity, "Object does not exist", doc)
		return
	}
	for {
		cur, err := s.repo.resolve(ref)
		if err != nil || cur == "" {
			s.refuseRef(w, "", err, doc)
			return
		}
		if msg, err := s.updateRefOnce(ref, in.SHA, cur, in.Force); msg != "" || err != errMoved {
			if msg != "" || err != nil {
				s.refuseRef(w, msg, err, doc)
			} else {
				s.answerRef(w, http.StatusOK, ref, in.SHA)
			}
			return
		}
	}
}

// updateRefOnce tries to move ref from cur to new: the refusal's words when it may
// not (a rule's, or "Update is not a fast forward"), errMoved when ref moved away
// from cur meanwhile.
func (s *Server) updateRefOnce(ref, new, cur string, force bool) (string, error) {
	if !force {
		ff, err := s.repo.isAncestor(cur, new)
		if err != nil {
			return "", err
		}
		if !ff {
			return "Update is not a fast forward", nil
		}
	}
	if rule, err := s.githubRuleBroken(ref, new, cur); rule != "" || err != nil {
		return ruleViolation(rule), err
	}
	return "", s.repo.updateRef(ref, new, cur)
}

// refuseRef answers a ref update that failed (err: 500), was refused (msg: 422), or
// found no ref (neither: 422, "Reference does not exist").
func (s *Server) refuseRef(w http.ResponseWriter, msg string, err error, doc string) {
	switch {
	case err != nil:
		githubError(w, http.StatusInternalServerError, err.Error(), "")
	case msg == "":
		githubError(w, http.StatusUnprocessableEntity, "Reference does not exist", doc)
	default:
		githubError(w, http.StatusUnprocessableEntity, msg, doc)
	}
}

// githubRuleBroken is the first rule of ref's branch that moving it from old ("" for
// a new ref) to new breaks, in GitHub's words; "" when none is.
func (s *Server) githubRuleBroken(ref, new, old string) (string, error) {
	for _, rule := range s.opts.Rules {
		if "refs/heads/"+rule.Branch != ref {
			continue
		}
		switch rule.Kind {
		case RequirePullRequest:
			return "Changes must be made through a pull request.", nil
		case RequireSignatures:
			commits, err := s.repo.newCommits(new, old)
			if err != nil {
				return "", err
			}
			for _, c := range commits {
				info, err := s.repo.readCommit(c)
				if err != nil {
					return "", err
				}
				if ok, _ := s.verification(info); !ok {
					return "Commits must have verified signatures.", nil
				}
			}
		}
	}
	return "", nil
}
