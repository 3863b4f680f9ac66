// Package bad is TestDocLinksBroken's: doc links of every kind, live and dead.
//
// Live: [Good], [Good.Method], [Good.Field], [*Good], [Shape.Area], [io.Writer],
// [io.Reader.Read], [strings.Builder.Len], [os], [bad], [bad.Good], [io],
// [github.com/refretry/refretry/failure], [github.com/refretry/refretry/failure.Class],
// and internal/lockfile in prose.
//
// Dead: [Gone], [Good.Gone], [io.Gone],
// [io.Reader.Gone], [spool], [gone.Name],
// [github.com/refretry/refretry/gone], [Gone] again,
// and in prose
// internal/gone.
//
// Not links: "[rejected]", [remote rejected], [0, 1].
package bad

import "io"

// Good is a type with a method and a field; its link to [Good.Method] is live, its
// link to
// [Missing] is not.
type Good struct {
	Field int // Field is a field: [Good.Missing] is dead.
}

// Method is a method.
func (Good) Method() {}

// Shape has a method; [Absent] is dead.
type Shape interface {
	Area() float64
}

// W is an io.Writer.
var W io.Writer

// unexported docs are not read: [Nowhere].
func unexported() {}
