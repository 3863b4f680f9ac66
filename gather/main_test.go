package gather

import (
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

func TestMain(m *testing.M) { testutil.MainExamplesNeedGit(m) }
