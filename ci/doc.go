// Package ci turns the attempts and the outcome of one refretry operation into log
// records, in the form each place that reads them expects: people at a terminal
// ("text"), log tooling ("json", one object a line), GitHub Actions ("github") and
// GitLab CI ("gitlab").
//
// A caller chooses a [Format] (by name, with [ParseFormat], or "auto", which [Detect]
// resolves), starts an [Operation] with [New], records each attempt as it ends
// ([Operation.Attempt]), anything else it did ([Operation.Note]), and the outcome
// ([Operation.Finish] with a [Summary] and its [Result]). Git's own stderr is written
// to [Operation.Relay].
//
// The contract:
//
//   - An [Operation] is one invocation. It has an id (a UUID) that every record it
//     emits carries, one "attempt" record per attempt ([Attempt]), a "note" record
//     per note, and one "summary" record at the end ([Summary]). Records are
//     [log/slog] records: message "attempt", "note" or "summary", the attributes
//     documented in docs/logging.md, and "schema": 1, which changes only when a field
//     is removed or changes meaning.
//   - Each record is written with one Write call, so records from processes
//     appending to the same file (opened with [OpenLogFile]) stay whole lines.
//   - Nothing a record carries (ref names, lock paths, git's messages) can make a line
//     that a CI system reads as a command: GitHub workflow-command data and properties
//     are escaped as the Actions toolkit does, control characters in plain lines are
//     shown as escapes, git's own stderr is relayed through [Operation.Relay] (inside
//     ::stop-commands:: on GitHub, with ESC shown as ^[ on GitLab).
//   - Records bound what they carry: a summary lists at most 20 refs, and long
//     messages are cut, marked with "…".
//   - The GitHub format opens one ::group:: for the attempts and raises at most one
//     annotation per operation: ::warning when it succeeded after retries, ::error when
//     it failed, except that a failure of an operation run as git by the shim
//     ([Config].Shim) is git's, for the program that ran git to handle: a ::warning,
//     and a summary at warning level in every format. When GITHUB_STEP_SUMMARY and
//     GITHUB_OUTPUT name files, Finish appends one table row to the former and the
//     step outputs to the latter.
//   - The GitLab format puts the attempts in a collapsed section named after the
//     operation id and prints one summary line outside it.
//   - [Detect] and [Format.Resolve] choose a format from the environment; they never
//     look at anything but the variables they are given.
//
// The package knows nothing about git beyond the field names of its records.
package ci
