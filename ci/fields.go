package ci

import (
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// fields are a record's attributes by key, those added with WithAttrs included; the
// line-oriented handlers render from them.
type fields map[string]slog.Value

// attrSet is the state every handler here keeps for WithAttrs and WithGroup.
type attrSet struct {
	attrs  []slog.Attr
	prefix string // "group." for attributes added under WithGroup
}

func (a attrSet) with(attrs []slog.Attr) attrSet {
	out := attrSet{attrs: append([]slog.Attr(nil), a.attrs...), prefix: a.prefix}
	for _, at := range attrs {
		out.attrs = append(out.attrs, slog.Attr{Key: a.prefix + at.Key, Value: at.Value})
	}
	return out
}

func (a attrSet) group(name string) attrSet {
	if name == "" {
		return a
	}
	return attrSet{attrs: a.attrs, prefix: a.prefix + name + "."}
}

func (a attrSet) fields(r slog.Record) fields {
	f := fields{}
	var add func(prefix string, at slog.Attr)
	add = func(prefix string, at slog.Attr) {
		v := at.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			p := prefix
			if at.Key != "" {
				p += at.Key + "."
			}
			for _, g := range v.Group() {
				add(p, g)
			}
			return
		}
		f[prefix+at.Key] = v
	}
	for _, at := range a.attrs {
		add("", at)
	}
	r.Attrs(func(at slog.Attr) bool { add(a.prefix, at); return true })
	return f
}

func (f fields) str(key string) string {
	v, ok := f[key]
	if !ok {
		return ""
	}
	return v.String()
}

func (f fields) int(key string) int {
	v, ok := f[key]
	if !ok {
		return 0
	}
	switch v.Kind() {
	case slog.KindInt64:
		return int(v.Int64())
	case slog.KindUint64:
		return int(v.Uint64())
	case slog.KindFloat64:
		return int(v.Float64())
	}
	n, _ := strconv.Atoi(v.String())
	return n
}

func (f fields) dur(key string) time.Duration {
	v, ok := f[key]
	if !ok {
		return 0
	}
	switch v.Kind() {
	case slog.KindFloat64:
		return fromMS(v.Float64())
	case slog.KindDuration:
		return v.Duration()
	case slog.KindInt64:
		return fromMS(float64(v.Int64()))
	}
	return 0
}

func (f fields) bool(key string) bool {
	v, ok := f[key]
	return ok && v.Kind() == slog.KindBool && v.Bool()
}

func (f fields) strings(key string) []string {
	v, ok := f[key]
	if !ok {
		return nil
	}
	if ss, ok := v.Any().([]string); ok {
		return ss
	}
	return nil
}

func (f fields) attempt() Attempt {
	return Attempt{
		Number: f.int(keyAttempt), Duration: f.dur(keyDurationMS), ExitCode: f.int(keyExitCode),
		Class: f.str(keyClass), Error: f.str(keyError), Lock: f.str(keyLock),
		LockAge: f.dur(keyLockAgeMS), HolderPID: f.int(keyHolderPID),
		HolderUnseen: f.bool(keyHolderUnseen), PIDNamespace: f.str(keyPIDNamespace),
		Delay: f.dur(keyDelayMS), Final: f.bool(keyFinal),
	}
}

// command is the record's command ("refretry" when it names none).
func (f fields) command() string {
	if c := f.str(keyCommand); c != "" {
		return c
	}
	return "refretry"
}

func (f fields) summary() Summary {
	s := Summary{
		Result: Result(f.str(keyResult)), ExitCode: f.int(keyExitCode), Attempts: f.int(keyAttempts),
		Elapsed: f.dur(keyElapsedMS), Reason: f.str(keyReason), Class: f.str(keyClass),
		Error: f.str(keyError), Lock: f.str(keyLock), Updates: -1, Refs: f.strings(keyRefs),
		RefsTruncated: f.bool(keyRefsTruncated), GitVersion: f.str(keyGitVersion),
		RefBackend: f.str(keyRefBackend), Advice: f.str(keyAdvice),
	}
	if _, ok := f[keyUpdates]; ok {
		s.Updates = f.int(keyUpdates)
	}
	return s
}

// other renders a record that is neither an attempt nor a summary as
// "msg key=value …", attributes in the order given.
func (a attrSet) other(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Message)
	each := func(at slog.Attr) {
		if at.Key == keySchema || at.Key == keyOperationID || at.Key == keyCommand {
			return
		}
		b.WriteString(" " + at.Key + "=" + at.Value.Resolve().String())
	}
	for _, at := range a.attrs {
		each(at)
	}
	r.Attrs(func(at slog.Attr) bool {
		each(slog.Attr{Key: a.prefix + at.Key, Value: at.Value})
		return true
	})
	return b.String()
}
