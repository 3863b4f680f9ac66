package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
)

// Signing is whether every commit a Repo writes is signed: as `git commit` signs in
// the repository, when commit.gpgSign is true. git commit-tree never reads that
// setting (it signs only with -S), so it is read here, once, and -S given; the key,
// the format and the program are then git's own settings (user.signingKey,
// gpg.format, gpg.program, gpg.ssh.program, gpg.x509.program), as for git commit.
//
// A commit whose original carried a signature is signed whatever commit.gpgSign says:
// a replay never drops a signature silently. When it cannot be signed, nothing is
// written and the error is a *SignError.
type Signing struct {
	Always bool // commit.gpgSign is true
	// Never signs nothing, whatever the original carried: the commits are drafts
	// whose trees and messages a forge's API commits again (push --api), and a
	// signature on them would only ask the job for a key it need not have.
	Never bool
}

// signs reports whether a commit written from one that carries signature (its kind,
// "" for none) is signed.
func (s Signing) signs(signature string) bool { return !s.Never && (s.Always || signature != "") }

// ReadSigning reads commit.gpgSign as git commit reads it (every config file, -c and
// GIT_CONFIG_* included).
func (r Repo) ReadSigning(ctx context.Context) (Signing, error) {
	c, err := gitexec.Capture(r.Command(ctx, r.Env, "config", "--type=bool", "--get", "commit.gpgsign"))
	switch {
	case err != nil:
		return Signing{}, err
	case c.Code == 1: // not set
		return Signing{}, nil
	case c.Code != 0:
		return Signing{}, fmt.Errorf("reading commit.gpgSign: git config exited %d: %s", c.Code, strings.TrimSpace(string(c.Stderr)))
	}
	return Signing{Always: strings.TrimSpace(string(c.Stdout)) == "true"}, nil
}

// signing is r.Sign, or git config's when the caller did not read it.
func (r Repo) signing(ctx context.Context) (Signing, error) {
	if r.Sign != nil {
		return *r.Sign, nil
	}
	return r.ReadSigning(ctx)
}

// SignError is a commit that had to be signed and could not be: nothing was written.
type SignError struct {
	// Commit is the commit it was to replace (a replay's original); "" for one of
	// refretry's own.
	Commit string
	// Configured is set when commit.gpgSign asked for the signature; otherwise the
	// original carried one, of the kind Signature says (openpgp, ssh, x509).
	Configured bool
	Signature  string
	// Format is gpg.format ("openpgp" when it is not set): the signing this
	// repository tried.
	Format string
	// Stderr is git's, with the signing program's own words.
	Stderr string
}

func (e *SignError) Error() string {
	what := "a commit"
	if e.Commit != "" {
		what = "the replay of " + Short(e.Commit)
	}
	why := "commit.gpgSign is true"
	if !e.Configured {
		why = fmt.Sprintf("%s carries an %s signature, which its replay must carry too", Short(e.Commit), e.Signature)
	}
	msg := fmt.Sprintf("cannot sign %s (%s; gpg.format %s)", what, why, e.Format)
	if s := oneLine(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Hint is what to do about e: mend the job's signing set-up; a signature made with a
// key the job does not hold (a forge's, another person's) cannot be made again here.
func (e *SignError) Hint() string {
	if !e.Configured {
		return "a signature made with a key this job does not hold (a forge's, another person's) cannot be made again; " +
			"give the job a signing key of its own (docs/push.md#signed-commits)"
	}
	return "check the job's signing key (docs/push.md#signed-commits)"
}

// Failure is e as the final failure of the push that had to sign (class signing, exit
// 1, never retried): which commit, why, git's words, what became of the push's work
// (done, such as "nothing was pushed") and what to do, in one line.
func (e *SignError) Failure(done string) *failure.Error {
	line := fmt.Sprintf("%v; %s: %s", e, done, e.Hint())
	return &failure.Error{Command: "push", Class: failure.Signing, ExitCode: 1, Message: line, Advice: line, Cause: e}
}

// CheckSigning makes sure this repository can sign a commit, by writing a signed
// commit of its own (the empty tree, no parent) that nothing refers to: nil when it
// can, else a *SignError (Commit empty, Configured set: the caller says otherwise)
// with git's words.
func (r Repo) CheckSigning(ctx context.Context) error {
	cmd := r.Command(ctx, r.Env, "commit-tree", "-S", "-m", "refretry: can this repository sign?", emptyTree(r.objectFormat(ctx)))
	c, err := gitexec.Capture(cmd)
	if err != nil {
		return err
	}
	if c.Code != 0 {
		return &SignError{Configured: true, Format: r.format(ctx), Stderr: string(c.Stderr)}
	}
	return nil
}

// signFailure is the *SignError of a commit-tree -S of c that exited 1 with stderr
// (git exits 128 for anything else, such as a tree it cannot read); configured says
// whether commit.gpgSign asked for the signature.
func (r Repo) signFailure(ctx context.Context, c Commit, configured bool, stderr []byte) *SignError {
	return &SignError{Commit: c.ID, Configured: configured, Signature: c.Signature, Format: r.format(ctx), Stderr: string(stderr)}
}

// format is gpg.format as git reads it, "openpgp" when not set.
func (r Repo) format(ctx context.Context) string {
	if f, err := r.Output(ctx, "config", "gpg.format"); err == nil && f != "" {
		return f
	}
	return "openpgp"
}

// objectFormat is the repository's object format: sha1 or sha256.
func (r Repo) objectFormat(ctx context.Context) string {
	if f, err := r.Output(ctx, "rev-parse", "--show-object-format"); err == nil && f != "" {
		return f
	}
	return "sha1"
}

// emptyTree is the name of the empty tree in the object format f.
func emptyTree(f string) string {
	if f == "sha256" {
		return "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
	}
	return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
}

// signatureKind is the kind of the signature a commit's gpgsig header holds, from its
// armour's first line.
func signatureKind(first string) string {
	switch {
	case strings.Contains(first, "SSH SIGNATURE"):
		return "ssh"
	case strings.Contains(first, "SIGNED MESSAGE"):
		return "x509"
	}
	return "openpgp"
}

// oneLine is git's stderr as one line: its lines without the blank ones and without
// gpg's machine-readable status lines ("[GNUPG:] …"), joined by " / ".
func oneLine(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "[GNUPG:]") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " / ")
}

// isSignatureHeader reports whether a commit header line starts its signature.
func isSignatureHeader(key string) bool { return key == "gpgsig" || key == "gpgsig-sha256" }
