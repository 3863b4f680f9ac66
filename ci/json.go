package ci

import (
	"io"
	"log/slog"
)

// newJSONHandler returns a handler writing one JSON object per line, with one Write
// per record (as [slog.JSONHandler] does): time, level, msg, then the attributes of
// the schema in docs/logging.md. Every level is written.
func newJSONHandler(w io.Writer) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
}
