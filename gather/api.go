package gather

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/apicommit"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/retry"
)

// A gather through a forge's API (Runner.API). The jobs stage, wait and elect a
// gatherer as always; the gatherer lands each wave with one commit the forge makes
// (so a wave's commit is the forge's, and on GitHub with an App token signed by it),
// in three steps:
//
//  1. It writes the wave commit: the replayed wave's tree on the branch's head, its
//     message the one staged commit's (or, for several, a list of theirs), with a
//     "Refretry-Gather: <id>" trailer for each staged commit the wave lands. One
//     atomic push moves the lease, compare-and-swapped at the value the gatherer
//     holds, to the wave commit (which sends its objects, for a forge that makes its
//     commit from them) and publishes the next wave's forecast. The lease now says
//     which wave is in flight.
//  2. The forge makes the commit on the branch (internal/apicommit): GitHub with its
//     compare-and-swap on the head the wave was replayed onto, Gitea and GitLab with
//     their checks per file. A lost race leaves the wave for the next look.
//  3. It fetches the branch, and in one atomic push deletes the staged refs the wave
//     landed (each at its staged value), moves conflicts to their refs, and moves
//     the lease to the branch's new head.
//
// Nothing lands twice. A gatherer killed between 2 and 3 leaves the staged refs in
// place and the lease at the wave commit, where it stays until another job takes it
// over; the job that takes it over first reads the wave commit (it fetches the lease
// before its compare-and-swap) and, before its first wave, reads the trailers of the
// branch's commits since the wave commit's parent: every id found there landed, and
// its staged ref is deleted without a replay. The gatherer itself does the same when
// the forge's answer was lost (a 5xx, no answer) or step 3 failed.

// apiSetup finds the forge's endpoint for the run's remote (Runner.API set); its
// error says what is missing, before anything is staged.
func (u *run) apiSetup(ctx context.Context) error {
	ep, _, err := apicommit.ForRemote(ctx, u.repo, u.Env, u.t.remote, apicommit.Want(*u.API))
	if err != nil {
		return fmt.Errorf("gather --api: %w", err)
	}
	u.ep = &ep
	// The wave's replays are drafts of the commit the forge makes: nothing is signed.
	u.repo.Sign = &replay.Signing{Never: true}
	return nil
}

// checkAPI makes sure, through an API, that the forge's route can write the job's
// commit (a file-level API cannot write a symbolic link, say): a commit it cannot
// write would stop every wave that took it, so the job fails before it stages
// anything, with the route's refusal.
func (u *run) checkAPI(ctx context.Context, commit string) error {
	if u.ep == nil {
		return nil
	}
	infos, err := u.repo.ReadCommits(ctx, []string{commit})
	if err != nil || len(infos[0].Parents) != 1 {
		return err
	}
	_, err = u.ep.Plan(ctx, apicommit.Landing{Repo: u.repo, Branch: u.n.branch, Base: infos[0].Parents[0], Commits: infos})
	return err
}

// landAPI is the rest of a wave through the API (steps 1 to 3 above), once w is
// replayed; value is the lease's value the gatherer holds, and it returns the value
// it holds afterwards. A wave with nothing to commit (every commit's changes on the
// branch already) needs no commit: only step 3.
func (u *run) landAPI(ctx context.Context, w *wave, st state, value string, began time.Time) (string, error) {
	head := w.head
	if w.tip != w.head {
		commit, err := u.waveCommit(ctx, w)
		if err != nil {
			return value, err
		}
		specs := append([]string{"--force-with-lease=" + u.n.lease() + ":" + value, commit + ":" + u.n.lease()}, u.forecastSpecs(st, commit, began)...)
		if ok, perr := u.pushRefs(ctx, specs); !ok {
			return value, u.refused(w, perr)
		}
		value, u.inflight = commit, commit
		landed, err := u.apiLand(ctx, w, commit)
		if err != nil || landed == "" {
			return value, err
		}
		head = landed
	}
	if _, err := u.fetch(ctx, []string{u.n.head()}, 0); err != nil {
		u.notify("fetching %s after its wave landed: %v", u.n.branch, err)
		return value, nil
	}
	specs := u.waveSpecs(w, value, head, false)
	if ok, perr := u.pushRefs(ctx, specs); !ok {
		return value, u.refused(w, perr)
	}
	u.inflight = ""
	u.waveDone(w, head)
	return head, nil
}

// waveCommit writes the wave's commit: the replayed tree on the branch's head, with
// the one staged commit's message (which carries its trailer), or, for several, a
// list of theirs and a trailer for each.
func (u *run) waveCommit(ctx context.Context, w *wave) (string, error) {
	if len(w.made) == 1 {
		return w.tip, nil // one commit on the head: the wave's commit already
	}
	var b strings.Builder
	fmt.Fprintf(&b, "refretry gather: %d commits onto %s\n\n", len(w.made), u.n.branch)
	for _, c := range w.made {
		subject, _, _ := strings.Cut(string(c.Message), "\n")
		fmt.Fprintf(&b, "- %s (%s)\n", subject, c.Author.Name)
	}
	b.WriteString("\n")
	for _, id := range w.madeIDs {
		fmt.Fprintf(&b, "%s: %s\n", Trailer, id)
	}
	info := w.made[len(w.made)-1]
	info.Message, info.Signature = []byte(b.String()), ""
	if me, err := u.repo.Output(ctx, "var", "GIT_AUTHOR_IDENT"); err == nil {
		info.Author = identOf(me, info.Author)
	}
	return u.repo.CommitTree(ctx, info, w.tip+"^{tree}", w.head, false)
}

// identOf reads git var's "Name <email> <date>", else keeps def.
func identOf(line string, def replay.Ident) replay.Ident {
	lt, gt := strings.IndexByte(line, '<'), strings.LastIndexByte(line, '>')
	if lt < 0 || gt < lt {
		return def
	}
	return replay.Ident{Name: strings.TrimSpace(line[:lt]), Email: line[lt+1 : gt], Date: strings.TrimSpace(line[gt+1:])}
}

// apiLand has the forge make the wave's commit on the branch, and returns what it
// made; "" when it did not land (a lost race, an answer lost, a limit: the next look
// decides), or the error that ends the run (a rule, a refusal, credentials). The
// request is an attempt of the run's, for OnAttempt.
func (u *run) apiLand(ctx context.Context, w *wave, commit string) (string, error) {
	begin := u.clock.Now()
	infos, err := u.repo.ReadCommits(ctx, []string{commit})
	if err != nil {
		return "", err
	}
	plan, err := u.ep.Plan(ctx, apicommit.Landing{Repo: u.repo, Branch: u.n.branch, Base: w.head, Commits: infos})
	var landed string
	if err == nil {
		landed, err = plan.Land(ctx, u.clock.Now())
	}
	u.res.Landings++
	var f *failure.Error
	errors.As(err, &f)
	if u.OnAttempt != nil {
		u.OnAttempt(retry.Attempt{Number: u.res.Pushes + u.res.Landings, Start: begin, Duration: u.since(begin), Err: asErr(f), Final: true})
	}
	switch {
	case err == nil:
		u.notify("%s made the wave's commit %s on %s", plan.Route, replay.Short(landed), u.n.branch)
		return landed, nil
	case f == nil:
		return "", err
	case f.Class == failure.Behind || f.Class == failure.Unknown:
		u.notify("the forge did not land the wave (%s); looking again", f.Line())
		return "", nil
	case f.Class.Retryable():
		u.notify("the forge asked to wait (%s)", f.Line())
		if f.Wait > 0 {
			_ = u.clock.Sleep(ctx, min(f.Wait, max(u.left(), 0)))
		}
		return "", nil
	}
	u.inflight = "" // refused: it did not land, and the lease may go
	u.stderr().Write([]byte("error: " + f.Message + "\n"))
	return "", fmt.Errorf("the forge refused the gather: %w", f)
}

// asErr is f as an error, nil for none.
func asErr(f *failure.Error) error {
	if f == nil {
		return nil
	}
	return f
}

// takeOver takes the lease over from its holder, who has let it stand for the
// job's patience: a compare-and-swap from old to value. Through an API, old may be a
// wave in flight (its commit carries the trailers): it is fetched first, so that the
// next wave can tell what of it landed (settle).
func (u *run) takeOver(ctx context.Context, old, value string) bool {
	if u.ep != nil && u.inflight == "" {
		if got, err := u.fetch(ctx, []string{u.n.lease()}, u.depth(2)); err == nil && got[0] == old && len(u.trailers(ctx, old, "")) > 0 {
			u.inflight = old
		}
	}
	return u.takeLease(ctx, old, value)
}

// depth is a fetch's depth for n commits in a shallow repository, 0 (all the
// history the negotiation brings) in a complete one, which must not be made shallow.
func (u *run) depth(n int) int {
	if u.shallow {
		return n
	}
	return 0
}

// settle finds which ids of the wave in flight (u.inflight, whose parent is the head
// it was replayed onto) are on the branch at head: each commit on the branch since
// that parent names its staged ids in trailers. A shallow history is deepened until
// it reaches the parent. It returns those ids; the wave is no longer in flight.
func (u *run) settle(ctx context.Context, head string) (map[string]bool, error) {
	inflight := u.inflight
	if inflight == "" {
		return nil, nil
	}
	base := u.repo.RevParse(ctx, inflight+"^")
	if base == "" {
		return nil, fmt.Errorf("reading the wave in flight %s: its parent is not here", replay.Short(inflight))
	}
	deepen := func(option string) error { _, err := u.fetch(ctx, []string{u.n.head()}, 0, option); return err }
	if err := u.repo.Meet(ctx, base, head, deepen); err != nil {
		return nil, err
	}
	landed := map[string]bool{}
	for _, id := range u.trailers(ctx, head, base) {
		landed[id] = true
	}
	u.inflight = ""
	return landed, nil
}

// trailers are the staged ids the Refretry-Gather trailers of the commits from tip
// down to (not including) base name; of tip alone when base is "".
func (u *run) trailers(ctx context.Context, tip, base string) []string {
	args := []string{"log", "--format=%(trailers:key=" + Trailer + ",valueonly)", tip}
	if base == "" {
		args = append(args, "-1")
	} else {
		args = append(args, "^"+base)
	}
	out, err := u.repo.Output(ctx, args...)
	if err != nil {
		return nil
	}
	return strings.Fields(out)
}
