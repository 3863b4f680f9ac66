package push

import (
	"time"

	"github.com/refretry/refretry/internal/httpconf"
)

// SetStallFloor gives p's pushes a stall floor of fewer than limit bytes a second for
// d, for the tests that let a stalled transfer run into it in a second, not 30.
func SetStallFloor(p *Runner, limit int, d time.Duration) {
	p.stallFloor = httpconf.Floor{Limit: limit, Time: d}
}
