package push

import (
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestMain lets more tests run at once than Go's default: most of them wait for the
// git processes they start (testutil.RaiseParallel).
func TestMain(m *testing.M) { testutil.Main(m) }
