package httpconf

import "testing"

func TestMayUseHTTP(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]bool{
		"": true, "origin": true, "https://h/r.git": true, "http://h/r.git": true,
		"file:///srv/r.git": false, "ssh://h/r.git": false, "/srv/r.git": false, "../r.git": false,
		"git@h:r.git": false, "my/remote": true,
	} {
		if got := MayUseHTTP(remote); got != want {
			t.Errorf("MayUseHTTP(%q) = %v, want %v", remote, got, want)
		}
	}
}
