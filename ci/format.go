package ci

import (
	"errors"
	"fmt"
	"strings"
)

// Format is a log format, named by one of the strings ParseFormat accepts:
//
//   - "auto": "github" or "gitlab" when [Detect] finds that CI system, else "text"
//   - "text": short lines for people
//   - "json": one JSON object per line
//   - "github": GitHub Actions workflow commands
//   - "gitlab": GitLab CI collapsible sections
//
// In code a Format is written as its name (Config{Format: "json"}); New refuses a
// name that is not one of these.
type Format string

const (
	formatAuto   Format = "auto"
	formatText   Format = "text"
	formatJSON   Format = "json"
	formatGitHub Format = "github"
	formatGitLab Format = "gitlab"
)

// formats lists every format, in the order documented.
var formats = []Format{formatAuto, formatText, formatJSON, formatGitHub, formatGitLab}

// errUnknownFormat is wrapped by the error of ParseFormat and New for a name that is
// not a format.
var errUnknownFormat = errors.New("unknown log format")

// ParseFormat reads a format name, as a flag or an environment variable gives it;
// letter case and surrounding space do not matter.
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range formats {
		if f == known {
			return f, nil
		}
	}
	names := make([]string, len(formats))
	for i, known := range formats {
		names[i] = string(known)
	}
	return "", fmt.Errorf("%w %q (want one of %s)", errUnknownFormat, s, strings.Join(names, ", "))
}

// Detect names the CI system the environment belongs to: "github" when GITHUB_ACTIONS
// is "true", "gitlab" when GITLAB_CI is "true" (GitHub first if both are), else "text".
func Detect(getenv func(string) string) Format {
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		return formatGitHub
	case getenv("GITLAB_CI") == "true":
		return formatGitLab
	}
	return formatText
}

// Resolve returns f, or for "auto" (and the empty format) what Detect finds.
func (f Format) Resolve(getenv func(string) string) Format {
	if f == formatAuto || f == "" {
		return Detect(getenv)
	}
	return f
}
