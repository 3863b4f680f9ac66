package forgeapi

import (
	"encoding/base64"
	"net/http"
)

// GitLab's words for an action on a path that is, or is not, there (transcribed
// from documentation and reports, not captured).
const (
	glExists  = "A file with this name already exists"
	glMissing = "A file with this name doesn't exist"
)

// applyAction applies action a (of a known kind) of a commit on base to t.
//
// last_commit_id is checked, as GitLab's Files::MultiService does for update, move
// and delete (read in its source): when given, it must be the last commit on base
// that changed the path, else "The file has changed since you started editing it".
// It is the only compare-and-swap the API has, and it is per file.
func (s *Server) applyAction(t *treeEdit, base string, a glAction) *glRefusal {
	path := a.FilePath
	if a.Action == "move" && a.PreviousPath != "" {
		path = a.PreviousPath
	}
	if a.LastCommitID != "" && (a.Action == "update" || a.Action == "move" || a.Action == "delete") {
		last, err := s.repo.lastChange(base, path)
		if err != nil {
			return &glRefusal{http.StatusInternalServerError, err.Error()}
		}
		if last != a.LastCommitID {
			return badRequest("The file has changed since you started editing it: %s", path)
		}
	}
	if a.FilePath == "" {
		return badRequest("You must specify a file_path.")
	}
	old, exists, err := t.get(path)
	if err != nil {
		return badRequest("%v", err)
	}
	had := exists && old.Type == "blob" // a file, not a directory or a submodule
	switch a.Action {
	case "create":
		return s.writeAction(t, a, entry{Mode: "100644"}, !exists, glExists)
	case "update":
		return s.writeAction(t, a, old, had, glMissing)
	case "chmod":
		old.Mode = map[bool]string{true: "100755", false: "100644"}[a.ExecuteFilemode]
		a.Content = nil
		return s.writeAction(t, a, old, had, glMissing)
	case "delete":
		if !had {
			return badRequest("%s", glMissing)
		}
		_, err = t.remove(path)
	case "move":
		return s.moveAction(t, a, old, had)
	}
	if err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// writeAction writes e (its content replaced by a's, when a has content) at a's
// path; ok false refuses with msg.
func (s *Server) writeAction(t *treeEdit, a glAction, e entry, ok bool, msg string) *glRefusal {
	if !ok {
		return badRequest("%s", msg)
	}
	if a.Content != nil || e.OID == "" {
		data := []byte{} // a create without content writes an empty file
		if a.Content != nil {
			data = []byte(*a.Content)
		}
		if a.Encoding == "base64" {
			var err error
			if data, err = base64.StdEncoding.DecodeString(string(data)); err != nil {
				return badRequest("content of %s is not valid base64", a.FilePath)
			}
		}
		oid, err := s.repo.writeBlob(data)
		if err != nil {
			return &glRefusal{http.StatusInternalServerError, err.Error()}
		}
		e.Type, e.OID = "blob", oid
	}
	if err := t.set(a.FilePath, e); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// moveAction moves a's previous_path to its file_path, keeping the mode, and the
// content unless a gives one.
func (s *Server) moveAction(t *treeEdit, a glAction, old entry, had bool) *glRefusal {
	if a.PreviousPath == "" {
		return badRequest("You must supply the original file path when moving file `%s`.", a.FilePath)
	}
	if !had {
		return badRequest("%s", glMissing)
	}
	if _, exists, _ := t.get(a.FilePath); exists {
		return badRequest("%s", glExists)
	}
	if _, err := t.remove(a.PreviousPath); err != nil {
		return badRequest("%v", err)
	}
	return s.writeAction(t, a, old, true, "")
}
