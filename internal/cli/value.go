package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
)

// Setting is a valued option. kong keeps the text the command line gave it (Decode);
// resolve turns that text, or the environment's, into V with parseValue, the one
// reader of an option's value, which git config's text (configure) goes through too.
type Setting[T comparable] struct {
	V T // the resolved value

	text, spelling string // as given on the command line (or by a caller): "5s", "--timeout"
	decoded        bool   // the command line gave it
	given          bool   // resolved from the command line, a caller or the environment
	env, config    string // its environment variable and git config key, if any
	def            T
	// cmd is "" for refretry's own options, whose numbers and durations may be zero,
	// and for a command's own, which must be positive, the command: its kong tag of
	// ("push", "gather"), which Decode reads, as kong decodes into a new value.
	cmd string
}

// setting is a Setting of any type, as resolution and the descriptions see it.
type setting interface {
	resolve(env []string) error
	configure(cfg map[string]string) error
	about() (env, config, def string)
}

// is declares one of refretry's own options: its environment variable, git config key
// and default.
func (s *Setting[T]) is(env, config string, def T) setting {
	s.env, s.config, s.def = env, config, def
	return s
}

// of declares one of a command's own options, with its default.
func (s *Setting[T]) of(def T) setting {
	s.def = def
	return s
}

// set gives the option a value as the command line would: a caller's (the shim's --git).
func (s *Setting[T]) set(spelling, text string) { s.spelling, s.text, s.decoded = spelling, text, true }

// Decode keeps the text kong found for the option. A command's own option takes
// whatever follows it as its value (gitArgs puts it there); refretry's own takes a
// value as kong takes a string, so that a missing one is kong's error.
func (s *Setting[T]) Decode(ctx *kong.DecodeContext) error {
	s.spelling, s.decoded, s.cmd = "--"+ctx.Value.Name, true, ctx.Value.Tag.Get("of")
	if s.cmd == "" {
		t, err := ctx.Scan.PopValue("string")
		if err == nil {
			s.text = t.String()
		}
		return err
	}
	t := ctx.Scan.Pop()
	if t.IsEOL() {
		return &usageError{msg: s.cmd + ": " + s.spelling + " needs a value"}
	}
	s.text = t.String()
	return nil
}

// resolve sets V from the command line, else the environment, else the default: a
// bad value is a usage error (exit 129) that names where it came from. An empty value
// on the command line is refretry's own option not given.
func (s *Setting[T]) resolve(env []string) error {
	text, from := s.text, s.spelling+" "+strconv.Quote(s.text)
	if !s.decoded || s.cmd == "" && text == "" {
		text, from = "", ""
		if s.env != "" {
			text = gitexec.Getenv(env, s.env)
			from = s.env + "=" + strconv.Quote(text)
		}
	}
	s.V, s.given = s.def, text != "" || s.decoded && s.cmd != ""
	if !s.given {
		return nil
	}
	err := parseValue(&s.V, text, s.cmd != "")
	switch {
	case err == nil:
		return nil
	case s.cmd != "":
		return &usageError{msg: fmt.Sprintf("%s: %s %v, not %q", s.cmd, s.spelling, err, text)}
	}
	return &usageError{msg: fmt.Sprintf("%s: %v", from, err)}
}

// configure sets V from git config (keys lower-cased) when the option was not given.
func (s *Setting[T]) configure(cfg map[string]string) error {
	v, ok, err := s.fromConfig(cfg)
	if ok {
		s.V = v
	}
	return err
}

// fromConfig is git config's value of the option, if it has one and the option was
// not given; a bad value there is an error named after its key.
func (s *Setting[T]) fromConfig(cfg map[string]string) (v T, ok bool, err error) {
	key := strings.ToLower(s.config)
	text, found := cfg[key]
	_, isBool := any(v).(bool)
	if key == "" || s.given || !found || text == "" && !isBool {
		return v, false, nil
	}
	if text == "" {
		text = "true" // a bare "key" line in a config file means true
	}
	if err := parseValue(&v, text, false); err != nil {
		return v, false, fmt.Errorf("bad value, git config %s=%q: %v", key, text, err)
	}
	return v, true, nil
}

// about is what help and the README say of the option beside its help: its
// environment variable (=1 for a switch), its git config key and its default ("" for
// the zero value).
func (s *Setting[T]) about() (env, config, def string) {
	var zero T
	if _, isBool := any(zero).(bool); isBool && s.env != "" {
		env = s.env + "=1"
	} else {
		env = s.env
	}
	if s.def != zero {
		def = fmt.Sprint(s.def)
	}
	return env, s.config, def
}

// Switch is a Setting that the command line gives by its name alone (--coalesce).
type Switch struct{ Setting[bool] }

// is declares the switch: its environment variable and git config key.
func (s *Switch) is(env, config string) setting {
	s.Setting.is(env, config, false)
	return s
}

// IsBool tells kong that the option takes no value.
func (*Switch) IsBool() bool { return true }

// Decode records the switch as given.
func (s *Switch) Decode(ctx *kong.DecodeContext) error {
	s.set("--"+ctx.Value.Name, "true")
	return nil
}

// parseValue reads text into dst by dst's type: one rule for every option, wherever
// its text came from. A duration or a count may not be negative, nor zero when
// positive is set.
func parseValue(dst any, text string, positive bool) error {
	switch p := dst.(type) {
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 || positive && d == 0 {
			return bad(positive, "duration (30s, 2m)", "a non-negative duration such as 500ms, 30s or 2m")
		}
		*p = d
	case *int:
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 || positive && n == 0 {
			return bad(positive, "number", "a non-negative integer")
		}
		*p = n
	case *bool:
		on, ok := gitBool(text)
		if !ok {
			return errors.New("not a boolean such as 1, true, 0 or false")
		}
		*p = on
	case *ci.Format:
		f, err := ci.ParseFormat(text)
		*p = f
		return err
	case *string:
		*p = text
	}
	return nil
}

// bad is parseValue's error for a number or a duration: what a positive one needs,
// or what a non-negative one is not.
func bad(positive bool, needs, not string) error {
	if positive {
		return errors.New("needs a positive " + needs)
	}
	return errors.New("not " + not)
}

// gitBool reads git's spellings of a boolean.
func gitBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}
