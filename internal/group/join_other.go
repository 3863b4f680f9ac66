//go:build !linux

package group

import (
	"context"

	"github.com/refretry/refretry/internal/platform"
)

// Lease is never handed out here.
type Lease struct{}

// Release does nothing here.
func (s *Lease) Release() {}

// join always answers "run it yourself": group commit needs Linux (see the package
// documentation).
func join(ctx context.Context, c *Config) Outcome { return Outcome{} }

// Name is not available here.
func Name(storeDir string) (string, bool) { return "", false }

// HandOver does nothing here.
func HandOver(l *platform.Listener) { l.Close() }
