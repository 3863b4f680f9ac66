package gather

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The namespaces on the remote, for a branch b ("main"; a branch under refs/heads/):
//
//	refs/refretry/gather/<b>/<id>     a staged commit, waiting to be gathered
//	refs/refretry/lease/<b>           the gatherer's lease (its value: the holder's commit)
//	refs/refretry/conflict/<b>/<id>   a staged commit that did not replay onto the branch
//	refs/refretry/discarded/<b>/<id>  a staged commit `refretry gather discard` removed
//	refs/refretry/eta/<b>/<at>-<wave>  the gatherer's forecast: the wave that takes what
//	                                  was staged by <at> - <wave> lands at about <at>
//	                                  (Unix milliseconds; <wave> a wave's length in ms)
const (
	stagedNS    = "refs/refretry/gather/"
	leaseNS     = "refs/refretry/lease/"
	conflictNS  = "refs/refretry/conflict/"
	discardedNS = "refs/refretry/discarded/"
	etaNS       = "refs/refretry/eta/"
	// Trailer is the key of the trailer a gathered commit carries: its staged id.
	Trailer = "Refretry-Gather"
)

// names are a branch's refs on the remote.
type names struct {
	branch string // "main"
}

func newNames(branch string) names { return names{branch: strings.TrimPrefix(branch, "refs/heads/")} }

func (n names) head() string              { return "refs/heads/" + n.branch }
func (n names) lease() string             { return leaseNS + n.branch }
func (n names) staged(id string) string   { return stagedNS + n.branch + "/" + id }
func (n names) conflict(id string) string { return conflictNS + n.branch + "/" + id }
func (n names) discarded(id string) string {
	return discardedNS + n.branch + "/" + id
}

// eta is the name of a forecast that a wave lands at at and takes a wave's length.
func (n names) eta(f forecast) string {
	return fmt.Sprintf("%s%s/%d-%d", etaNS, n.branch, f.at.UnixMilli(), f.wave.Milliseconds())
}

// patterns are what ls-remote asks for: everything of the branch's.
func (n names) patterns() []string {
	return []string{n.head(), n.lease(), stagedNS + n.branch + "/*", conflictNS + n.branch + "/*",
		discardedNS + n.branch + "/*", etaNS + n.branch + "/*"}
}

// forecast is what a gatherer publishes of its waves (an eta ref): the one that takes
// what was staged by at - wave lands at about at, and a wave takes about wave.
type forecast struct {
	at   time.Time
	wave time.Duration
}

// parseForecast reads an eta ref's last component, "<at>-<wave>".
func parseForecast(s string) (forecast, bool) {
	at, wave, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseInt(at, 10, 64)
	w, err2 := strconv.ParseInt(wave, 10, 64)
	if !ok || err1 != nil || err2 != nil || a <= 0 || w < 0 {
		return forecast{}, false
	}
	return forecast{at: time.UnixMilli(a), wave: time.Duration(w) * time.Millisecond}, true
}

// state is what the remote holds for a branch, from one ls-remote.
type state struct {
	head      string            // the branch's value, "" when it does not exist
	lease     string            // the lease's value, "" when free
	staged    map[string]string // id → staged commit
	conflict  map[string]string // id → commit
	discarded map[string]string // id → commit
	eta       forecast          // the latest forecast (zero when there is none)
	etaRefs   map[string]string // every forecast ref → its value, for the next to replace
}

// parseState reads ls-remote's output for n.
func parseState(n names, out string) state {
	s := state{staged: map[string]string{}, conflict: map[string]string{}, discarded: map[string]string{}, etaRefs: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		oid, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		switch {
		case ref == n.head():
			s.head = oid
		case ref == n.lease():
			s.lease = oid
		case strings.HasPrefix(ref, stagedNS+n.branch+"/"):
			s.staged[strings.TrimPrefix(ref, stagedNS+n.branch+"/")] = oid
		case strings.HasPrefix(ref, conflictNS+n.branch+"/"):
			s.conflict[strings.TrimPrefix(ref, conflictNS+n.branch+"/")] = oid
		case strings.HasPrefix(ref, discardedNS+n.branch+"/"):
			s.discarded[strings.TrimPrefix(ref, discardedNS+n.branch+"/")] = oid
		case strings.HasPrefix(ref, etaNS+n.branch+"/"):
			if f, ok := parseForecast(strings.TrimPrefix(ref, etaNS+n.branch+"/")); ok {
				s.etaRefs[ref] = oid
				if f.at.After(s.eta.at) {
					s.eta = f
				}
			}
		}
	}
	return s
}

// order is the staged ids, oldest first (a UUIDv7's text sorts by its time).
func (s state) order() []string {
	ids := make([]string, 0, len(s.staged))
	for id := range s.staged {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// newID is a new staged id: a UUIDv7, whose text sorts by the time it was made.
func newID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// stagedAt is when id was made (its UUIDv7, before an authenticator), zero when id is
// not a UUIDv7.
func stagedAt(id string) time.Time {
	id, _, _ = strings.Cut(id, ".")
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec)
}
