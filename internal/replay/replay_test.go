package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

func TestAddTrailer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"subject\n", "subject\n\nRefretry-Gather: x\n"},
		{"subject\n\nbody\n", "subject\n\nbody\n\nRefretry-Gather: x\n"},
		{"subject\n\nSigned-off-by: A <a@b>\n", "subject\n\nSigned-off-by: A <a@b>\nRefretry-Gather: x\n"},
		{"subject: with a colon\n", "subject: with a colon\n\nRefretry-Gather: x\n"},
		{"", "Refretry-Gather: x\n"},
	} {
		if got := string(addTrailer([]byte(tc.in), "Refretry-Gather: x")); got != tc.want {
			t.Errorf("addTrailer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPick: a commit's changes on another commit, with git 2.55: its author, dates and
// message kept (with the committer when asked), the trailer added, a line file under
// merge=union merged, and a conflict reported with its path and nothing written.
func TestPick(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitattributes", "union.csv merge=union\n")
	write("union.csv", "h\n")
	write("plain.txt", "a\n")
	r.Run("add", ".")
	r.Run("commit", "-q", "-m", "base")
	base := r.Run("rev-parse", "HEAD")
	// Theirs: a line appended to both files.
	write("union.csv", "h\ntheirs\n")
	write("plain.txt", "a\ntheirs\n")
	r.Run("commit", "-q", "-am", "theirs")
	theirs := r.Run("rev-parse", "HEAD")
	// Mine, on base: a line appended to the union file, with another author.
	r.Run("checkout", "-q", base)
	write("union.csv", "h\nmine\n")
	r.Env = append(r.Env, "GIT_AUTHOR_NAME=Job Seven", "GIT_AUTHOR_DATE=1700000777 +0200",
		"GIT_COMMITTER_NAME=Job Committer", "GIT_COMMITTER_DATE=1700000888 +0100")
	r.Run("commit", "-q", "-am", "mine")
	mine := r.Run("rev-parse", "HEAD")
	repo := Repo{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env}
	ctx := context.Background()

	got, err := repo.Pick(ctx, mine, base, theirs, Keep{Committer: true, Trailer: "Refretry-Gather: 7"})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Run("show", got+":union.csv"); c != "h\ntheirs\nmine" {
		t.Errorf("union.csv = %q", c)
	}
	if f := r.Run("log", "-1", "--format=%an|%ad|%cn|%cd|%B|%P", "--date=raw", got); f != "Job Seven|1700000777 +0200|Job Committer|1700000888 +0100|mine\n\nRefretry-Gather: 7\n|"+theirs {
		t.Errorf("picked commit: %q", f)
	}

	// The same change to plain.txt conflicts.
	r.Run("checkout", "-q", base)
	write("plain.txt", "a\nmine\n")
	r.Run("commit", "-q", "-am", "mine, plain")
	conflicting := r.Run("rev-parse", "HEAD")
	before := r.Run("for-each-ref")
	_, err = repo.Pick(ctx, conflicting, base, theirs, Keep{})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Commit != conflicting || !slices.Equal(ce.Paths, []string{"plain.txt"}) {
		t.Fatalf("err = %v, want a conflict in plain.txt", err)
	}
	if after := r.Run("for-each-ref"); after != before || !strings.Contains(err.Error(), "plain.txt") {
		t.Errorf("refs changed or message %q", err)
	}

	// Line: both of a branch's commits, in order.
	r.Run("checkout", "-q", base)
	write("a.txt", "1\n")
	r.Run("add", "a.txt")
	r.Run("commit", "-q", "-m", "one")
	write("a.txt", "1\n2\n")
	r.Run("commit", "-q", "-am", "two")
	tip, err := repo.Line(ctx, r.Run("rev-parse", "HEAD"), theirs)
	if err != nil {
		t.Fatal(err)
	}
	if log := r.Run("log", "--format=%s", "-3", tip); log != "two\none\ntheirs" {
		t.Errorf("log %q", log)
	}
}

// TestReadCommits: one cat-file reads each commit as ReadCommit does one, with its
// tree and parents, and a rev that names no commit gives a zero Commit.
func TestReadCommits(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	r.Run("commit", "-q", "--allow-empty", "-m", "one")
	r.Env = append(r.Env, "GIT_AUTHOR_NAME=Two Author")
	r.Run("commit", "-q", "--allow-empty", "-m", "two\n\nbody\n")
	repo := Repo{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env}
	ctx := context.Background()
	got, err := repo.ReadCommits(ctx, []string{"HEAD", "HEAD^", "HEAD^{tree}", strings.Repeat("0", 40)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d commits, want 4", len(got))
	}
	for i, rev := range []string{"HEAD", "HEAD^"} {
		want, err := repo.ReadCommit(ctx, rev)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Author != want.Author || got[i].Committer != want.Committer || string(got[i].Message) != string(want.Message) {
			t.Errorf("%s: ReadCommits %+v, ReadCommit %+v", rev, got[i], want)
		}
		if tree := r.Run("rev-parse", rev+"^{tree}"); got[i].Tree != tree {
			t.Errorf("%s: tree %q, want %q", rev, got[i].Tree, tree)
		}
	}
	if got[0].Author.Name != "Two Author" || string(got[0].Message) != "two\n\nbody\n" {
		t.Errorf("HEAD read as %+v", got[0])
	}
	if p := r.Run("rev-parse", "HEAD^"); len(got[0].Parents) != 1 || got[0].Parents[0] != p {
		t.Errorf("HEAD's parents %q, want [%s]", got[0].Parents, p)
	}
	if p := r.Run("log", "-1", "--format=%P", "HEAD^"); strings.Join(got[1].Parents, " ") != p {
		t.Errorf("HEAD^'s parents %q, want %q", got[1].Parents, p)
	}
	for i := 2; i < 4; i++ {
		if got[i].Tree != "" {
			t.Errorf("rev %d (not a commit) read as %+v", i, got[i])
		}
	}
}
