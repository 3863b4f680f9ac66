package gather

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The binding between a gatherer and the jobs it serves (see the package comment).
const (
	// MinKeyLen is the shortest key a Runner takes, in bytes.
	MinKeyLen = 16
	// DefaultMaxAge is how old a staged commit may be, by its id's time, and still land
	// through a gatherer that has a key.
	DefaultMaxAge = 7 * 24 * time.Hour
	// futureSkew is how far ahead of the gatherer's clock a staged id's time may be
	// (the jobs' clocks differ a little).
	futureSkew = 5 * time.Minute
	// macHex is the length of a staged ref's authenticator, in hex digits (128 bits).
	macHex = 32
	// macDomain starts every authenticated message, so that a MAC made with the key
	// for anything else never passes for a staged commit's.
	macDomain = "refretry-gather-v1"
)

// KeyError is a key a Runner will not use.
type KeyError struct{ Len int }

func (e *KeyError) Error() string {
	if e.Len == 0 {
		return "the gather key is empty"
	}
	return fmt.Sprintf("the gather key is %d bytes; it needs at least %d (a random secret, e.g. `openssl rand -hex 32`)", e.Len, MinKeyLen)
}

// sign is the authenticator of the commit staged for branch ("main") under the
// UUIDv7 u: the first macHex hex digits of HMAC-SHA256(key, macDomain NUL branch NUL
// u NUL commit).
func sign(key []byte, branch, u, commit string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macDomain + "\x00" + branch + "\x00" + u + "\x00" + commit))
	return hex.EncodeToString(m.Sum(nil))[:macHex]
}

// signedID is the staged id of commit for branch under key: the UUIDv7 u, a dot, and
// its authenticator; u alone without a key.
func signedID(key []byte, branch, u, commit string) string {
	if key == nil {
		return u
	}
	return u + "." + sign(key, branch, u, commit)
}

// verify says why the commit staged for branch as id does not land through a gatherer
// holding key, at now with the age limit maxAge; "" when it lands.
func verify(key []byte, branch, id, commit string, now time.Time, maxAge time.Duration) string {
	u, mac, ok := strings.Cut(id, ".")
	if !ok {
		return "it carries no authenticator (it was not staged with this pipeline's key)"
	}
	if p, err := uuid.Parse(u); err != nil || p.Version() != 7 || p.String() != u {
		return "its id is not a UUIDv7"
	}
	want := sign(key, branch, u, commit)
	if len(mac) != macHex || !hmac.Equal([]byte(mac), []byte(want)) {
		return "its authenticator does not verify (another key, another branch or another commit)"
	}
	at := stagedAt(id)
	if age := now.Sub(at); age > maxAge {
		return fmt.Sprintf("it was staged %v ago, more than the gather's maximum age %v", age.Round(time.Minute), maxAge)
	}
	if ahead := at.Sub(now); ahead > futureSkew {
		return fmt.Sprintf("its time is %v ahead of this clock", ahead.Round(time.Second))
	}
	return ""
}
