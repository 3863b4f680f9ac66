package forge_test

import (
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
