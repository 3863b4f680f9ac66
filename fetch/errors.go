package fetch

import "github.com/refretry/refretry/internal/gitexec"

// ErrGitNotFound is matched (errors.Is) by the error Run returns when git cannot be
// started.
var ErrGitNotFound = gitexec.ErrNotFound
