package gitexec

import "strings"

// Getenv returns key's value in env, a list of "key=value" entries as os/exec takes
// it; the last entry for key wins, as os/exec passes it on. It returns "" when key
// is absent.
func Getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Setenv returns a copy of env with key set to value, every earlier entry for key
// removed, so that any reader (first match or last) sees value.
func Setenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
