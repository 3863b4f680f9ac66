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
//	'Q' <key> NUL <ref> NUL <update in --stdin -z form>
//
// From the leader:
//
//	'G' <place> with git's stdout, git's stderr and git itself attached: the update
//	    is in this git's input (sent before git gets any input; a later 'G' replaces
//	    it), and is applied if git reports more than <place> commits
//	'K' the git of the last 'G' committed it
//	'S' not applied: run it alone
//	'A' not applied: look for the leader again
//	'L' <baton> with the listening socket attached: lead (the update is not taken)
const (
	msgRequest = 'Q'
	msgAttempt = 'G'
	msgApplied = 'K'
	msgAlone   = 'S'
	msgAgain   = 'A'
	msgLead    = 'L'
)

// maxMessage bounds a message: a request is at most a few hundred bytes (refs are
// limited to 1024 by Parse).
const maxMessage = 4096

// request is a member's update as a leader reads it.
type request struct {
	key string
	ref string
	cmd string // the update in --stdin -z form
}

func encodeRequest(key string, u Update) []byte {
	var b bytes.Buffer
	b.WriteByte(msgRequest)
	b.WriteString(key)
	b.WriteByte(0)
	b.WriteString(u.Ref)
	b.WriteByte(0)
	b.WriteString(u.command())
	return b.Bytes()
}

func decodeRequest(msg []byte) (request, bool) {
	if len(msg) == 0 || msg[0] != msgRequest {
		return request{}, false
	}
	key, rest, ok := bytes.Cut(msg[1:], []byte{0})
	if !ok {
		return request{}, false
	}
	ref, cmd, ok := bytes.Cut(rest, []byte{0})
	if !ok || len(cmd) == 0 || cmd[len(cmd)-1] != 0 {
		return request{}, false
	}
	return request{key: string(key), ref: string(ref), cmd: string(cmd)}, true
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
