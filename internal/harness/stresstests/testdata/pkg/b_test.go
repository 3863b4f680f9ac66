package pkg_test

import "testing"

// Scale here is not testutil's.
type sizes struct{}

func (sizes) Scale(t *testing.T, a, b int) int { return a }

func otherScale(t *testing.T) int { return sizes{}.Scale(t, 1, 2) }

func TestOwnScale(t *testing.T) { _ = sizes{}.Scale(t, 1, 2) }
