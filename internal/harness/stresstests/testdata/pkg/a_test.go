package pkg

import (
	"testing"

	tu "github.com/refretry/refretry/internal/harness/testutil"
)

type combo struct{ n int }

func combos(t *testing.T) []combo { return tu.Cells(t, []combo{{1}, {2}}, 0) }

func (c combo) storm(t *testing.T) int { return tu.Scale(t, 2, 20) }

func helper(t *testing.T) []combo { return combos(t) }

func TestDirect(t *testing.T) { tu.Hunt(t, 1, 2, 3, false, func(int) bool { return false }) }

func TestThroughTwo(t *testing.T) {
	for range helper(t) {
	}
}

func TestThroughMethod(t *testing.T) { combo{}.storm(t) }

func TestInClosure(t *testing.T) {
	t.Run("x", func(t *testing.T) { _ = tu.Stress(t) })
}

func TestPlain(t *testing.T) { _ = combo{} }

func TestOtherPackageScale(t *testing.T) { _ = otherScale(t) }
