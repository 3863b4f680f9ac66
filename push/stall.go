package push

import "github.com/refretry/refretry/internal/httpconf"

// StallFloor is the slowest transfer git tolerates before giving up, as libcurl's
// low-speed limit: fewer than Limit bytes per second for Time.
type StallFloor = httpconf.Floor

// DefaultStallFloor turns a transfer that moved less than a byte a second for 30
// seconds into a failure (internal/httpconf).
var DefaultStallFloor = httpconf.Default
