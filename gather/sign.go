package gather

import (
	"context"
	"errors"

	"github.com/refretry/refretry/internal/replay"
)

// Signing. A gatherer replays every staged commit it lands, so it signs them as its
// own repository signs commits (commit.gpgSign, with its gpg.format, user.signingKey
// and program), and always when a staged commit carries a signature: a gathered commit
// carries the gatherer's signature, made with the key every job of a pipeline holds.
// A job that must sign and cannot fails before it stages anything; a gatherer that
// cannot sign a commit of its wave pushes nothing of the wave and lets the lease go.

// readSigning reads once whether the run's repository signs the commits it writes,
// and has its notes say when a commit is signed only because its original was.
func (u *run) readSigning(ctx context.Context) error {
	if u.ep != nil {
		return nil // through an API, the forge makes (and signs) the commits: apiSetup
	}
	sign, err := u.repo.ReadSigning(ctx)
	if err != nil {
		return err
	}
	u.repo.Sign = &sign
	u.repo.Note = func(msg string) { u.notify("%s", msg) }
	return nil
}

// checkSigning makes sure that this job, should it gather, can sign what it replays:
// when its repository signs its commits, or its own commit (info, read as the source
// of the staged commit) carries a signature (the others' will too), it signs one
// commit of its own first. It returns the run's failure when it cannot: then nothing
// is staged.
func (u *run) checkSigning(ctx context.Context, commit string, info replay.Commit) error {
	if u.repo.Sign.Never || !u.repo.Sign.Always && info.Signature == "" {
		return nil
	}
	err := u.repo.CheckSigning(ctx)
	var se *replay.SignError
	if errors.As(err, &se) {
		se.Commit, se.Configured, se.Signature = commit, u.repo.Sign.Always, info.Signature
		return se.Failure("nothing was staged")
	}
	return err
}
