package ci

import (
	"errors"
	"fmt"
	"strings"
)

// Format is a log format.
type Format string

const (
	Auto   Format = "auto"   // GitHub or GitLab when detected, else Text
	Text   Format = "text"   // short lines for people
	JSON   Format = "json"   // one JSON object per line
	GitHub Format = "github" // GitHub Actions workflow commands
	GitLab Format = "gitlab" // GitLab CI collapsible sections
)

// Formats lists every format, in the order documented.
var Formats = []Format{Auto, Text, JSON, GitHub, GitLab}

// ErrUnknownFormat is wrapped by ParseFormat's error.
var ErrUnknownFormat = errors.New("unknown log format")

// ParseFormat reads a format name; letter case does not matter.
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range Formats {
		if f == known {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, known := range Formats {
		names[i] = string(known)
	}
	return "", fmt.Errorf("%w %q (want one of %s)", ErrUnknownFormat, s, strings.Join(names, ", "))
}

// Detect names the CI system the environment belongs to: GitHub when GITHUB_ACTIONS
// is "true", GitLab when GITLAB_CI is "true" (GitHub first if both are), else Text.
func Detect(getenv func(string) string) Format {
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		return GitHub
	case getenv("GITLAB_CI") == "true":
		return GitLab
	}
	return Text
}

// Resolve returns f, or for Auto (and the empty format) what Detect finds.
func (f Format) Resolve(getenv func(string) string) Format {
	if f == Auto || f == "" {
		return Detect(getenv)
	}
	return f
}
