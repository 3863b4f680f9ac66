package gather

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// uuidAt is a UUIDv7 whose time is at.
func uuidAt(t *testing.T, at time.Time) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// TestSignVector: the authenticator is the first 32 hex digits of HMAC-SHA256 over
// the domain, branch, uuid and commit, NUL-separated, as the package comment and
// docs/security.md state; computed here with crypto/hmac from the documented message.
func TestSignVector(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	const branch, u, commit = "main", "0193aaaa-0000-7000-8000-000000000001", "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
	m := hmac.New(sha256.New, key)
	m.Write([]byte("refretry-gather-v1\x00main\x00" + u + "\x00" + commit))
	want := hex.EncodeToString(m.Sum(nil))[:32]
	if got := sign(key, branch, u, commit); got != want {
		t.Errorf("sign = %s, want %s", got, want)
	}
	if got := signedID(key, branch, u, commit); got != u+"."+want {
		t.Errorf("signedID = %s", got)
	}
	if got := signedID(nil, branch, u, commit); got != u {
		t.Errorf("signedID without a key = %s, want the uuid alone", got)
	}
}

// TestVerify: a staged id verifies only with its key, branch and commit, whole, and
// within the age limits; each failure says which kind it is.
func TestVerify(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	other := []byte("fedcba9876543210fedcba9876543210")
	const commit = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
	now := time.Now()
	fresh := uuidAt(t, now.Add(-time.Minute))
	id := signedID(key, "main", fresh, commit)
	old := uuidAt(t, now.Add(-8*24*time.Hour))
	future := uuidAt(t, now.Add(time.Hour))
	v4 := uuid.NewString()
	for _, tc := range []struct {
		name            string
		key             []byte
		branch, id, oid string
		maxAge          time.Duration
		want            string // a part of the reason; "" when it verifies
	}{
		{"valid", key, "main", id, commit, DefaultMaxAge, ""},
		{"wrong key", other, "main", id, commit, DefaultMaxAge, "does not verify"},
		{"wrong branch", key, "release", id, commit, DefaultMaxAge, "does not verify"},
		{"wrong oid", key, "main", id, strings.Repeat("0", 40), DefaultMaxAge, "does not verify"},
		{"truncated mac", key, "main", id[:len(id)-1], commit, DefaultMaxAge, "does not verify"},
		{"longer mac", key, "main", id + "0", commit, DefaultMaxAge, "does not verify"},
		{"empty mac", key, "main", fresh + ".", commit, DefaultMaxAge, "does not verify"},
		{"garbage mac", key, "main", fresh + ".zz", commit, DefaultMaxAge, "does not verify"},
		{"no mac", key, "main", fresh, commit, DefaultMaxAge, "no authenticator"},
		{"not a uuid", key, "main", "x." + sign(key, "main", "x", commit), commit, DefaultMaxAge, "not a UUIDv7"},
		{"uuid v4", key, "main", signedID(key, "main", v4, commit), commit, DefaultMaxAge, "not a UUIDv7"},
		{"upper-case uuid", key, "main", signedID(key, "main", strings.ToUpper(fresh), commit), commit, DefaultMaxAge, "not a UUIDv7"},
		{"old", key, "main", signedID(key, "main", old, commit), commit, DefaultMaxAge, "more than the gather's maximum age"},
		{"old, a longer max age", key, "main", signedID(key, "main", old, commit), commit, 9 * 24 * time.Hour, ""},
		{"fresh, a shorter max age", key, "main", id, commit, time.Second, "more than the gather's maximum age"},
		{"future", key, "main", signedID(key, "main", future, commit), commit, DefaultMaxAge, "ahead of this clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verify(tc.key, tc.branch, tc.id, tc.oid, now, tc.maxAge)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("verify(%s) = %q, want %q", tc.id, got, tc.want)
			}
		})
	}
}

// TestStagedAtSigned: a signed id's time is its UUIDv7's.
func TestStagedAtSigned(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(time.Now().Add(-3 * time.Hour).UnixMilli())
	u := uuidAt(t, at)
	if got := stagedAt(u + "." + strings.Repeat("a", 32)); !got.Equal(at) {
		t.Errorf("stagedAt = %v, want %v", got, at)
	}
}
