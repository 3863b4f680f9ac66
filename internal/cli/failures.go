package cli

import (
	"github.com/refretry/refretry/fetch"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/transaction"
)

// Every command's errors are read through report.Failure with errors.As, which simply
// stops matching a type that lacks a method: the compiler checks them here, where the
// commands meet.
var (
	_ report.Failure = (*transaction.Error)(nil)
	_ report.Failure = (*push.Error)(nil)
	_ report.Failure = (*push.RebaseError)(nil)
	_ report.Failure = (*push.RegenerateError)(nil)
	_ report.Failure = (*fetch.Error)(nil)
)
