package group

import (
	"strings"
)

// Update is one invocation's single-ref update or delete, in a form a group can carry:
// its values are full object ids, so that git resolves nothing differently inside a
// group than it would have for the invocation alone.
type Update struct {
	Ref    string
	Delete bool
	New    string // full hex object id; not for Delete
	Old    string // full hex object id, or "" (the empty <old>)
	HasOld bool
}

// Options are the command-line options a group shares: its git runs with them.
type Options struct {
	Msg          string
	HasMsg       bool
	NoDeref      bool
	CreateReflog bool
}

// args are the options as passed to the group's git, before --stdin -z.
func (o Options) args() []string {
	var a []string
	if o.HasMsg {
		a = append(a, "-m", o.Msg)
	}
	if o.NoDeref {
		a = append(a, "--no-deref")
	}
	if o.CreateReflog {
		a = append(a, "--create-reflog")
	}
	return a
}

// Parse reads the single-ref forms of update-ref's arguments
//
//	[-m <msg>] [--no-deref] [--create-reflog] <ref> <new> [<old>]
//	[-m <msg>] [--no-deref] -d <ref> [<old>]
//
// in a deliberately narrow spelling: every option on its own, exactly as listed (or
// -m<msg>), values that are full lower-case hex object ids (or an empty <old>), and a
// ref under refs/ that is plainly valid and shared by all worktrees. Anything else
// (abbreviations, bundles, --, revision expressions, per-worktree refs, names git
// might reject) cannot join a group: it runs as git alone would run it. ok is false
// then.
func Parse(raw []string) (u Update, o Options, ok bool) {
	var operands []string
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case a == "-m":
			if i+1 == len(raw) {
				return u, o, false
			}
			i++
			o.Msg, o.HasMsg = raw[i], true
		case strings.HasPrefix(a, "-m"):
			o.Msg, o.HasMsg = a[2:], true
		case a == "-d":
			u.Delete = true
		case a == "--no-deref":
			o.NoDeref = true
		case a == "--create-reflog":
			o.CreateReflog = true
		case strings.HasPrefix(a, "-"):
			return u, o, false
		default:
			operands = append(operands, a)
		}
	}
	if o.HasMsg && o.Msg == "" {
		return u, o, false // git refuses it; let git say so
	}
	if u.Delete {
		if len(operands) < 1 || len(operands) > 2 {
			return u, o, false
		}
		u.Ref = operands[0]
		if len(operands) == 2 {
			u.Old, u.HasOld = operands[1], true
			if u.Old != "" && !isFullHex(u.Old) {
				return u, o, false
			}
		}
	} else {
		if len(operands) < 2 || len(operands) > 3 {
			return u, o, false
		}
		u.Ref, u.New = operands[0], operands[1]
		if !isFullHex(u.New) {
			return u, o, false
		}
		if len(operands) == 3 {
			u.Old, u.HasOld = operands[2], true
			if u.Old != "" && (!isFullHex(u.Old) || len(u.Old) != len(u.New)) {
				return u, o, false
			}
		}
	}
	if !plainSharedRef(u.Ref) {
		return u, o, false
	}
	return u, o, true
}

// command is the update in update-ref's --stdin -z syntax, with the meaning the
// command-line form gives it: an empty <old> means "must not exist" (a zero id) for
// an update, and an empty or zero <old> means "don't care" for -d.
func (u Update) command() string {
	if u.Delete {
		old := ""
		if u.HasOld && u.Old != "" && !isZeroHex(u.Old) {
			old = u.Old
		}
		return "delete " + u.Ref + "\x00" + old + "\x00"
	}
	old := ""
	if u.HasOld {
		old = u.Old
		if old == "" {
			old = strings.Repeat("0", len(u.New))
		}
	}
	return "update " + u.Ref + "\x00" + u.New + "\x00" + old + "\x00"
}

// updateOf reads back a command of ref that [Update.command] made: ok only when cmd
// is, byte for byte, the command of one update or delete of ref in a form [Parse]
// accepts. A leader gives its git nothing else for a member.
func updateOf(ref, cmd string) (u Update, ok bool) {
	if !plainSharedRef(ref) {
		return u, false
	}
	f := strings.Split(cmd, "\x00")
	switch {
	case len(f) == 4 && f[0] == "update "+ref && f[3] == "":
		u = Update{Ref: ref, New: f[1], Old: f[2], HasOld: f[2] != ""}
		if !isFullHex(u.New) || u.HasOld && (!isFullHex(u.Old) || len(u.Old) != len(u.New)) {
			return u, false
		}
	case len(f) == 3 && f[0] == "delete "+ref && f[2] == "":
		u = Update{Ref: ref, Delete: true, Old: f[1], HasOld: f[1] != ""}
		if u.HasOld && !isFullHex(u.Old) {
			return u, false
		}
	default:
		return u, false
	}
	return u, u.command() == cmd
}

func isFullHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isZeroHex(s string) bool { return strings.Trim(s, "0") == "" }

// perWorktreePrefixes are refs/ namespaces each worktree keeps for itself.
var perWorktreePrefixes = []string{"refs/worktree/", "refs/bisect/", "refs/rewritten/"}

// plainSharedRef accepts ref names under refs/ that git certainly accepts and that
// live in the repository's common ref store: letters, digits and ._+- in components
// that neither start with '.' nor end with '.' or ".lock". It is stricter than git.
func plainSharedRef(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || len(ref) > 1024 {
		return false
	}
	for _, p := range perWorktreePrefixes {
		if strings.HasPrefix(ref, p) {
			return false
		}
	}
	for comp := range strings.SplitSeq(ref, "/") {
		if comp == "" || comp[0] == '.' || comp[len(comp)-1] == '.' || strings.HasSuffix(comp, ".lock") {
			return false
		}
		for i := 0; i < len(comp); i++ {
			c := comp[i]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
				c == '.' || c == '_' || c == '-' || c == '+'
			if !ok {
				return false
			}
		}
	}
	return !strings.Contains(ref, "..")
}
