package transaction

// Coalescing says whether an invocation may join a group commit: concurrent
// single-ref invocations on one repository hand their updates to whichever of them
// holds the line, and it commits them all with one git (docs/coalescing.md).
type Coalescing struct {
	// On is set when the caller asked for coalescing outright (flag or environment).
	On bool
	// Lookup, consulted when On is false, says whether configuration asks for it (git
	// config refretry.coalesce). It is called at most once, and only on a reftable
	// repository whose line is occupied: an invocation that would not wait never pays
	// for it. Nil means no.
	Lookup func() bool
}

// On systems without the line (see internal/platform), coalesced always declines and
// every invocation runs on its own.
