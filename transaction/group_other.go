//go:build !unix

package transaction

import "context"

// coalesced declines: group commit needs the line and process checks that only Unix
// systems offer here (internal/platform).
func (r *Runner) coalesced(ctx context.Context, args Args) (handled bool, code int, err error) {
	return false, 0, nil
}
