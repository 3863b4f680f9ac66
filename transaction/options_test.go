package transaction

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/settings"
)

// TestCountRefsBeforeWait: a --stdin run counts and names its updates with CountRefs
// and calls BeforeWait once before it reads the caller's input; a Runner without
// them counts nothing and calls nothing.
func TestCountRefsBeforeWait(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, testutil.NewGit(t), backend)
			waits := 0
			config := settings.Config{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env}
			runners := []*Runner{
				{Config: config, CountRefs: true, BeforeWait: func() { waits++ }},
				{Config: config},
			}
			for i, runner := range runners {
				a, b := fmt.Sprintf("refs/heads/a%d", i), fmt.Sprintf("refs/heads/b%d", i)
				// A strings.Reader is no file: the run reads it as it comes, and waits.
				in := strings.NewReader(fmt.Sprintf("create %s %s\ncreate %s %s\nverify refs/heads/main %s\n", a, r.Commit, b, r.Commit, r.Commit))
				res, err := runner.Run(context.Background(), []string{"--stdin"}, in, io.Discard, io.Discard)
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("run %d: exit %d, %v", i, res.ExitCode, err)
				}
				if got := r.Run("rev-parse", a, b); got != r.Commit+"\n"+r.Commit {
					t.Fatalf("run %d: %s and %s are %q", i, a, b, got)
				}
				counted := i == 0
				switch {
				case counted && (res.Updates != 2 || !slices.Equal(res.Refs, []string{a, b})):
					t.Errorf("with CountRefs: %d updates %v, want 2 [%s %s]", res.Updates, res.Refs, a, b)
				case !counted && (res.Updates != -1 || res.Refs != nil):
					t.Errorf("without CountRefs: %d updates %v, want -1 and none", res.Updates, res.Refs)
				}
				if waits != 1 {
					t.Errorf("after run %d BeforeWait was called %d times, want once (in the first run only)", i, waits)
				}
			}
		})
	}
}
