package replay

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestSignedReplay, on git 2.39 and 2.55 and with an SSH and an OpenPGP key: a replay
// in a repository that signs its commits (commit.gpgSign) is signed with its key and
// verifies; a replay of a signed commit is signed even where commit.gpgSign is off,
// and says so; an unsigned commit replayed without commit.gpgSign stays unsigned;
// and with the key gone, a signed commit's replay fails with a *SignError that
// carries the signing program's words, and nothing is written.
func TestSignedReplay(t *testing.T) {
	t.Parallel()
	type cell struct {
		git    testutil.Git
		format string
	}
	var cells []cell
	for _, g := range testutil.Gits(t) {
		for _, f := range testutil.SignFormats {
			cells = append(cells, cell{g, f})
		}
	}
	for _, c := range cells {
		t.Run(c.git.Name()+"/"+c.format, func(t *testing.T) {
			t.Parallel()
			s := testutil.NewSigner(t, c.format)
			r := testutil.NewRepo(t, c.git, "files")
			r.Env = append(r.Env, s.Env()...)
			for _, kv := range s.Config() {
				r.Run("config", kv[0], kv[1])
			}
			base := r.Run("rev-parse", "HEAD")
			theirs := r.NewCommit("theirs")
			r.Run("checkout", "-q", base)
			r.Run("-c", "commit.gpgSign=false", "commit", "-q", "--allow-empty", "-m", "mine, unsigned")
			unsigned := r.Run("rev-parse", "HEAD")
			r.Run("checkout", "-q", base)
			mine := r.NewCommit("mine")
			status := func(c string) string { return r.Run("log", "-1", "--format=%G?", c) }
			if status(mine) != "G" || status(unsigned) != "N" {
				t.Fatalf("the set-up's commits are %s (signed) and %s (unsigned)", status(mine), status(unsigned))
			}
			var notes []string
			repo := Repo{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env, Note: func(m string) { notes = append(notes, m) }}
			ctx := context.Background()
			sign, err := repo.ReadSigning(ctx)
			if err != nil || !sign.Always {
				t.Fatalf("ReadSigning = %+v, %v; want Always", sign, err)
			}

			// commit.gpgSign: the replay is signed with the repository's key.
			repo.Sign = &sign
			tip, err := repo.Line(ctx, mine, theirs)
			if err != nil {
				t.Fatal(err)
			}
			if tip == mine || status(tip) != "G" {
				t.Errorf("the replay %s of %s is %q, want signed (G)", tip, mine, status(tip))
			}
			r.Run("verify-commit", tip)
			if len(notes) != 0 {
				t.Errorf("notes %q; want none when commit.gpgSign asks for the signature", notes)
			}

			// commit.gpgSign off: the signed commit's replay is signed all the same,
			// and the note says why; the unsigned one's is not.
			repo.Sign = &Signing{}
			if tip, err = repo.Line(ctx, mine, theirs); err != nil || status(tip) != "G" {
				t.Errorf("without commit.gpgSign: %s (%v), signature %q; want signed", tip, err, status(tip))
			}
			if len(notes) != 1 || !strings.Contains(notes[0], "carries an "+c.format+" signature") {
				t.Errorf("notes %q; want one that the original carries an %s signature", notes, c.format)
			}
			if tip, err = repo.Line(ctx, unsigned, theirs); err != nil || status(tip) != "N" {
				t.Errorf("an unsigned commit without commit.gpgSign: %s (%v), signature %q; want unsigned", tip, err, status(tip))
			}

			if err := repo.CheckSigning(ctx); err != nil {
				t.Errorf("CheckSigning with the key: %v", err)
			}

			// The key gone: nothing is written, and the error says why in git's words.
			config, env := s.Broken(t)
			for _, kv := range config {
				repo.GlobalArgs = append(repo.GlobalArgs, "-c", kv[0]+"="+kv[1])
			}
			repo.Env = append(repo.Env, env...)
			refs := r.Run("for-each-ref")
			for _, sign := range []Signing{{Always: true}, {}} {
				repo.Sign = &sign
				_, err = repo.Line(ctx, mine, theirs)
				var se *SignError
				if !errors.As(err, &se) || se.Commit != mine || se.Configured != sign.Always || se.Signature != c.format || se.Format != c.format ||
					strings.TrimSpace(se.Stderr) == "" || !strings.Contains(err.Error(), "cannot sign the replay of "+Short(mine)) {
					t.Errorf("with the key gone (%+v): %v; want a *SignError for %s with git's words", sign, err, Short(mine))
				}
			}
			if after := r.Run("for-each-ref"); after != refs {
				t.Errorf("refs changed:\n%s\nwant\n%s", after, refs)
			}
			if err := repo.CheckSigning(ctx); err == nil {
				t.Error("CheckSigning with the key gone: nil")
			}
		})
	}
}

// TestSignatureKind: the kind of signature a commit's header holds, by its armour.
func TestSignatureKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ header, want string }{
		{"-----BEGIN SSH SIGNATURE-----", "ssh"},
		{"-----BEGIN PGP SIGNATURE-----", "openpgp"},
		{"-----BEGIN SIGNED MESSAGE-----", "x509"},
	} {
		c, err := parseCommit("c", []byte("tree t\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\ngpgsig "+tc.header+"\n \n -----END-----\n\nmessage\n"))
		if err != nil || c.Signature != tc.want || string(c.Message) != "message\n" {
			t.Errorf("%s: Signature %q, message %q, %v; want %q", tc.header, c.Signature, c.Message, err, tc.want)
		}
	}
	c, _ := parseCommit("c", []byte("tree t\nauthor A <a@b> 1 +0000\n\nmessage\n"))
	if c.Signature != "" {
		t.Errorf("an unsigned commit: Signature %q", c.Signature)
	}
}
