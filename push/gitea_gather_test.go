package push_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// TestGiteaGatherKey: through a real Gitea (its hooks run on every ref), the issue's
// reproduction — a commit pushed by hand into refs/refretry/gather/main/ — is not
// landed by a keyed job's gather: it stays staged, named once in the job's notes,
// while the job's own commit lands. It skips, as the other Gitea tests do, without a
// Gitea binary.
func TestGiteaGatherKey(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	inst := startGitea(t, g)
	const repo = "gather-key"
	if err := inst.CreateRepo(repo); err != nil {
		t.Fatal(err)
	}
	const hand = "refs/refretry/gather/main/0193aaaa-0000-7000-8000-000000000001"
	intruder := giteaClone(t, g, inst.URL(repo))
	forged := intruder.commit("unrelated", "x")
	intruder.run("push", "-q", "origin", "HEAD:"+hand)

	job := giteaClone(t, g, inst.URL(repo))
	job.commit("result", "r")
	var notes []string
	r := &gather.Runner{
		Config: settings.Config{
			Git:  g.Path,
			Dirs: []string{job.dir},
			Env:  job.env,
			Settings: func() (settings.Settings, error) {
				return settings.Settings{Policy: retry.Policy{Timeout: 2 * time.Minute, MaxAttempts: 10, InitialDelay: time.Millisecond,
					MaxDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0.5}}, nil
			},
			Note: func(_, msg string) { notes = append(notes, msg) },
		},
		Key: []byte("gitea-test-gather-key-0123456789"),
	}
	res, err := r.Run(context.Background(), []string{"origin", "main"}, nil, nil, nil)
	if err != nil || !res.Landed {
		t.Fatalf("the keyed job: landed %v, err %v\n%s", res.Landed, err, strings.Join(notes, "\n"))
	}
	check := giteaClone(t, g, inst.URL(repo))
	check.run("fetch", "-q", "--unshallow", "origin", "main")
	log := check.run("log", "--format=%s", "FETCH_HEAD")
	if strings.Contains(log, "add unrelated") || !strings.Contains(log, "add result") {
		t.Errorf("main:\n%s\nwant the job's commit and not the one staged by hand", log)
	}
	if got := check.run("ls-remote", "origin", hand); !strings.HasPrefix(got, forged+"\t") {
		t.Errorf("the hand-staged ref is %q, want it left at %s", got, forged)
	}
	if n := strings.Count(strings.Join(notes, "\n"), hand+" ("); n != 1 || len(res.Refused) != 1 {
		t.Errorf("named %d times, refused %v, want once:\n%s", n, res.Refused, strings.Join(notes, "\n"))
	}
}
