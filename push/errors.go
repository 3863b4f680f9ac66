package push

import "fmt"

// A push's failures are *failure.Error values. Their Cause, when set, is one of these.

// RejectedError is one ref the push did not update.
type RejectedError struct {
	Ref    string // the destination ref
	From   string // the source as git printed it ("" for a deletion)
	Reason string // git's reason, as in "(fetch first)"
	Remote bool   // the server refused it ("[remote rejected]"), not the client
}

func (e *RejectedError) Error() string {
	who := "rejected"
	if e.Remote {
		who = "remote rejected"
	}
	return fmt.Sprintf("%s %s (%s)", who, e.Ref, e.Reason)
}

// TransportError is a connection failure, a stall or a retryable HTTP status.
type TransportError struct {
	HTTPStatus int    // 0 when none was reported
	Message    string // git's line that showed it
}

func (e *TransportError) Error() string { return e.Message }
