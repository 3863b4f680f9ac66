package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/harness/gitea"
	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/latency"
)

// matrixServer is one kind of server the matrix jobs push to.
type matrixServer struct {
	name  string // as -matrix-servers names it
	label string // what it is, for the report
	// newRepo makes a fresh remote named name whose main is the seed
	// repository's main.
	newRepo func(name, seed string) (matrixRemote, error)
	// pushes is the number of receive-pack POSTs the server has seen so far,
	// requests the number of HTTP requests of every kind.
	pushes, requests func() int
	// cpu is the CPU time so far of server processes that are not this
	// process's reaped children (a Gitea and what it waited for), and
	// whether it could be read. Reaped children are counted through
	// RUSAGE_CHILDREN instead.
	cpu   func() (time.Duration, bool)
	close func()
}

// matrixRemote is a trial's remote.
type matrixRemote struct {
	url    string // what the jobs clone and push to
	gitDir string // the bare repository on disk, read after the trial
	remove func() error
}

// startMatrixServer starts the server kind name with its repositories under
// dir, every request to it delayed by the round trip rtt (0: none). A server
// that cannot run here (Gitea without a binary) returns the reason instead.
func startMatrixServer(r *runner, cfg config, name string, rtt time.Duration, dir string) (*matrixServer, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	delay := latency.Delay{RoundTrip: rtt}
	var srv *matrixServer
	var skip string
	var err error
	switch name {
	case "http":
		srv, skip, err = startHTTPServer(r, cfg, dir, delay)
	case "gitea":
		srv, skip, err = startGiteaServer(r, cfg, delay)
	default:
		return nil, "", fmt.Errorf("unknown server kind %q", name)
	}
	if srv != nil && rtt > 0 {
		srv.name, srv.label = matrixServerName(name, rtt), srv.label+rttLabel(rtt)
	}
	return srv, skip, err
}

// matrixServerName is the name of server kind name under the round trip rtt
// in the report and the charts' file names: the kind alone without one.
func matrixServerName(name string, rtt time.Duration) string {
	if rtt <= 0 {
		return name
	}
	return name + "-rtt" + rtt.String()
}

// rttLabel is what the report adds to a server's label under a round trip.
func rttLabel(rtt time.Duration) string {
	return fmt.Sprintf("; forge latency model: every HTTP request to it delayed by a %s round trip, half before the server "+
		"sees it and half before its answer's first byte (`internal/harness/latency`), as for jobs on other machines than the forge", rtt)
}

// noServerCPU is the cpu of a server whose processes are all reaped
// children of this process.
func noServerCPU() (time.Duration, bool) { return 0, true }

// startHTTPServer serves dir with git http-backend of the git under test.
func startHTTPServer(r *runner, cfg config, dir string, delay latency.Delay) (*matrixServer, string, error) {
	srv, err := gitserver.Start(cfg.git, dir, gitserver.Options{
		ReceivePack: true,
		Latency:     delay,
		Env:         []string{"HOME=" + r.home, "XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config")},
	})
	if err != nil {
		return nil, "", err
	}
	return &matrixServer{
		name:  "http",
		label: "smart HTTP: `git http-backend` of the git under test behind a loopback server in the bench process (`internal/harness/gitserver`), files backend",
		newRepo: func(name, seed string) (matrixRemote, error) {
			bare := filepath.Join(dir, name+".git")
			rem := matrixRemote{url: srv.URL(name + ".git"), gitDir: bare, remove: func() error { return os.RemoveAll(bare) }}
			if _, err := r.output("", r.git, "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
				return rem, err
			}
			_, err := r.output(seed, r.git, "push", "--quiet", bare, "main:main")
			return rem, err
		},
		pushes:   srv.ReceivePacks,
		requests: srv.Requests,
		cpu:      noServerCPU,
		close:    srv.Close,
	}, "", nil
}

// startGiteaServer starts a throwaway Gitea whose server side runs the git
// under test, or says why it cannot.
func startGiteaServer(r *runner, cfg config, delay latency.Delay) (*matrixServer, string, error) {
	bin, err := gitea.Binary()
	if errors.Is(err, gitea.ErrNoBinary) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	progress("matrix: starting Gitea (%s)", bin)
	inst, err := gitea.Start(gitea.Options{Binary: bin, Git: cfg.git, Latency: delay})
	if err != nil {
		return nil, "", err
	}
	version, err := inst.ServerVersion()
	if err != nil {
		inst.Close()
		return nil, "", err
	}
	pids := childPIDs("gitea")
	return &matrixServer{
		name: "gitea",
		label: fmt.Sprintf("Gitea %s (SQLite, files backend, server git = the git under test) behind a counting proxy in the bench process (`internal/harness/gitea`)",
			version),
		newRepo: func(name, seed string) (matrixRemote, error) {
			rem := matrixRemote{url: inst.URL(name), gitDir: inst.RepoPath(name), remove: func() error {
				return inst.API(http.MethodDelete, "/repos/"+url.PathEscape(inst.User)+"/"+url.PathEscape(name), nil, nil)
			}}
			if err := inst.CreateRepo(name); err != nil {
				rem.remove = func() error { return nil }
				return rem, err
			}
			// Gitea's first commit (its README) is replaced by the seed.
			_, err := r.output(seed, r.git, "push", "--quiet", "--force", rem.url, "main:main")
			return rem, err
		},
		pushes:   inst.Pushes,
		requests: inst.Requests,
		cpu: func() (time.Duration, bool) {
			if len(pids) == 0 {
				return 0, false
			}
			var total time.Duration
			for _, pid := range pids {
				d, err := procTreeCPU(pid)
				if err != nil {
					return 0, false
				}
				total += d
			}
			return total, true
		},
		close: inst.Close,
	}, "", nil
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// childPIDs are this process's children whose command name is comm.
func childPIDs(comm string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := parseProcStat(string(data))
		if err == nil && st.ppid == self && st.comm == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procTreeCPU is a process's user+system time and that of the children it
// has waited for.
func procTreeCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	st, err := parseProcStat(string(data))
	if err != nil {
		return 0, err
	}
	return time.Duration(st.utime+st.stime+st.cutime+st.cstime) * clockTick, nil
}

// procStat is what the matrix reads of /proc/<pid>/stat.
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime int64 // clock ticks
}

// parseProcStat reads the fields of a /proc/<pid>/stat line (proc(5)). The
// command name is in parentheses and may itself hold spaces and
// parentheses, so the fields after it are counted from its last ')'.
func parseProcStat(line string) (procStat, error) {
	open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("stat line without a command name: %q", line)
	}
	st := procStat{comm: line[open+1 : closing]}
	f := strings.Fields(line[closing+1:])
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat line with %d fields after the name: %q", len(f), line)
	}
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("stat ppid: %w", err)
	}
	for i, p := range []*int64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		if *p, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", 14+i, err)
		}
	}
	return st, nil
}
