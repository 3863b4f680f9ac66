package releasetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Release is a GoReleaser dist directory: the archives and checksums.txt of one
// version.
type Release struct {
	Dir     string
	Version string // as GoReleaser names it: 0.0.1-snapshot-4257cc9
	Tag     string // v + Version
	Commit  string // the commit it was built from, if known
	Files   map[string][]byte
}

// Need returns the release scripts/release-check.sh built (REFRETRY_RELEASE_DIST), or
// skips the test.
func Need(t testing.TB) *Release {
	t.Helper()
	dir := os.Getenv("REFRETRY_RELEASE_DIST")
	if dir == "" {
		t.Skip("no release to test: scripts/release-check.sh builds one and sets REFRETRY_RELEASE_DIST")
	}
	var meta struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.Version == "" {
		t.Fatalf("metadata.json: %v %q", err, b)
	}
	r := &Release{Dir: dir, Version: meta.Version, Tag: "v" + meta.Version,
		Commit: os.Getenv("REFRETRY_RELEASE_COMMIT"), Files: map[string][]byte{}}
	for _, pattern := range []string{"*.tar.gz", "*.zip", "checksums.txt"} {
		names, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			r.Files[filepath.Base(name)] = b
		}
	}
	if r.Files["checksums.txt"] == nil {
		t.Fatalf("%s has no checksums.txt", dir)
	}
	return r
}

// Archive is the name of the release's archive for a platform.
func (r *Release) Archive(goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return "refretry_" + r.Version + "_" + goos + "_" + goarch + ext
}

// HostArchive is the archive for the machine the tests run on.
func (r *Release) HostArchive() string { return r.Archive(runtime.GOOS, runtime.GOARCH) }

// Binary is the refretry binary in the release's tar.gz archive for a platform.
func (r *Release) Binary(t testing.TB, goos, goarch string) []byte {
	t.Helper()
	name := r.Archive(goos, goarch)
	zr, err := gzip.NewReader(bytes.NewReader(r.Files[name]))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no refretry at its top (%v)", name, err)
		}
		if h.Name == "refretry" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return b
		}
	}
}

// Serve serves a copy of the release's files as GitHub serves a repository's
// releases, at <url>/download/<tag>/<file> and <url>/latest/download/<file>, after
// edit has had its way with the copy. hits counts the requests for a file name.
func (r *Release) Serve(t testing.TB, edit func(files map[string][]byte)) (url string, hits func(name string) int) {
	t.Helper()
	files := map[string][]byte{}
	for name, b := range r.Files {
		files[name] = bytes.Clone(b)
	}
	if edit != nil {
		edit(files)
	}
	var mu sync.Mutex
	count := map[string]int{}
	hits = func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return count[name]
	}
	send := func(w http.ResponseWriter, name string) {
		mu.Lock()
		count[name]++
		mu.Unlock()
		b, ok := files[name]
		if !ok {
			http.NotFound(w, nil)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /download/{tag}/{name}", func(w http.ResponseWriter, req *http.Request) {
		if req.PathValue("tag") != r.Tag {
			http.NotFound(w, req)
			return
		}
		send(w, req.PathValue("name"))
	})
	mux.HandleFunc("GET /latest/download/{name}", func(w http.ResponseWriter, req *http.Request) {
		send(w, req.PathValue("name"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// Corrupt flips one bit in the middle of a file: an archive that no longer matches its
// checksum.
func Corrupt(files map[string][]byte, name string) {
	b := files[name]
	b[len(b)/2] ^= 0x01
}

// DropChecksum removes the line for name from checksums.txt.
func DropChecksum(files map[string][]byte, name string) {
	var kept []byte
	for line := range bytes.Lines(files["checksums.txt"]) {
		if !bytes.HasSuffix(bytes.TrimSpace(line), []byte(" "+name)) {
			kept = append(kept, line...)
		}
	}
	files["checksums.txt"] = kept
}
