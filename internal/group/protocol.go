package group

import (
	"bytes"
	"strconv"
	"time"
)

// Messages on a rendezvous connection (SOCK_SEQPACKET: one message per send). The
// first byte says what it is.
//
// From a member, once, right after connecting:
//
//	'Q' <key> NUL <environment> NUL <options> NUL <ref> NUL <update in --stdin -z form>
//
// From the leader:
//
//	'G' <place> SP <from> with git's stdout, git's stderr, git itself and the file of
//	    stderr ends attached: the update is in this git's input (sent before git is
//	    given it; a later 'G' replaces it), it is applied if git reports more than
//	    <place> commits, git's stderr for it begins at offset <from>, and, when each
//	    update is its own transaction, ends at the offset the leader writes as the
//	    <place>th 8-byte little-endian number of the ends file once it is committed
//	'K' [<to>] the git of the last 'G' committed it; its stderr for it ends at <to>
//	    (absent: at the end)
//	'H' <baton> with the listening socket and other members' connections attached:
//	    not applied; run it alone, holding the line, then hand the line to the first
//	    of those members the same way (and to the queue once they are done)
//	'S' not applied: run it alone (grouping is switched off)
//	'A' not applied: look for the leader again
//	'L' <baton> with the listening socket attached: lead (the update is not taken)
const (
	msgRequest = 'Q'
	msgAttempt = 'G'
	msgApplied = 'K'
	msgHold    = 'H'
	msgAlone   = 'S'
	msgAgain   = 'A'
	msgLead    = 'L'
)

// maxMessage bounds a message. An invocation whose request would be longer (a
// reflog message of several kilobytes) does not join a group.
const maxMessage = 8 << 10

// maxPending bounds how many members' connections travel with the line in one 'H'.
const maxPending = 60

// request is a member's update as a leader reads it.
type request struct {
	key  string // what must match for the leader's git to act for the member
	env  string // the whole environment, which must match too when a hook runs
	opts Options
	ref  string
	cmd  string // the update in --stdin -z form
}

func encodeRequest(r request) []byte {
	var b bytes.Buffer
	b.WriteByte(msgRequest)
	for _, f := range []string{r.key, r.env, r.opts.encode(), r.ref} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	b.WriteString(r.cmd)
	return b.Bytes()
}

func decodeRequest(msg []byte) (request, bool) {
	if len(msg) == 0 || msg[0] != msgRequest {
		return request{}, false
	}
	f := bytes.SplitN(msg[1:], []byte{0}, 5)
	if len(f) != 5 {
		return request{}, false
	}
	opts, ok := decodeOptions(string(f[2]))
	if !ok {
		return request{}, false
	}
	// The command goes to the leader's git as it is: it must be exactly the one
	// update of the declared ref that Update.command makes, and nothing more (a
	// second command, another ref, an option line).
	ref, cmd := string(f[3]), string(f[4])
	if _, ok := updateOf(ref, cmd); !ok {
		return request{}, false
	}
	return request{key: string(f[0]), env: string(f[1]), opts: opts, ref: ref, cmd: cmd}, true
}

// encode writes the options as three flag letters (or '-') and the message.
func (o Options) encode() string {
	flag := func(on bool, c byte) byte {
		if on {
			return c
		}
		return '-'
	}
	return string([]byte{flag(o.HasMsg, 'm'), flag(o.NoDeref, 'n'), flag(o.CreateReflog, 'c')}) + o.Msg
}

func decodeOptions(s string) (Options, bool) {
	if len(s) < 3 {
		return Options{}, false
	}
	o := Options{HasMsg: s[0] == 'm', NoDeref: s[1] == 'n', CreateReflog: s[2] == 'c', Msg: s[3:]}
	return o, o.encode() == s
}

// baton is what a leader passes to the next with the listening socket: what it
// learnt about the repository, so that the next need not ask git again.
type baton struct {
	// vetted is when a leader last asked whether configuration allows a group
	// (allowed) and whether the repository has a reference-transaction hook (hook).
	// Zero: never.
	vetted  time.Time
	allowed bool
	hook    bool
}

func (b baton) encode() []byte {
	msg := []byte{msgLead}
	if !b.vetted.IsZero() {
		msg = strconv.AppendInt(msg, b.vetted.UnixNano(), 10)
		msg = append(msg, ' ')
		msg = strconv.AppendBool(msg, b.allowed)
		msg = append(msg, ' ')
		msg = strconv.AppendBool(msg, b.hook)
	}
	return msg
}

func decodeBaton(body []byte) baton {
	f := bytes.Fields(body)
	if len(f) != 3 {
		return baton{}
	}
	ns, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	allowed, err2 := strconv.ParseBool(string(f[1]))
	hook, err3 := strconv.ParseBool(string(f[2]))
	if err1 != nil || err2 != nil || err3 != nil {
		return baton{}
	}
	return baton{vetted: time.Unix(0, ns), allowed: allowed, hook: hook}
}
