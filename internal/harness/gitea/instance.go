package gitea

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
	"github.com/refretry/refretry/internal/harness/latency"
)

// Options configures an instance. The zero value runs Binary() with the git on PATH.
type Options struct {
	// Binary is the Gitea binary; empty means Binary().
	Binary string

	// Git is the git Gitea runs on the server side: a path, or a name looked up in
	// PATH. Empty means "git".
	Git string

	// User and Password are the admin's (defaults "refretry" and "refretry-password").
	User, Password string

	// StartTimeout bounds each step of Start (migrate, user creation, waiting for the
	// web server to answer). Zero means two minutes.
	StartTimeout time.Duration

	// SigningKey, when set, is an SSH private key file with which the instance signs
	// the commits its API and web editor make ([repository.signing] CRUD_ACTIONS
	// always): what an instance configured to sign API commits does.
	SigningKey string
	// GitConfig is git config ("gpg.ssh.program", say) for the git Gitea runs: its
	// app.ini's [git.config].
	GitConfig map[string]string

	// Latency delays every request through the proxy by a round trip, as a forge
	// across a network would (see internal/harness/latency); the API helpers and
	// Gitea's own hooks, which do not go through the proxy, are not delayed.
	Latency latency.Delay
}

// Instance is a running Gitea and the proxy in front of it. Its methods are safe for
// concurrent use.
type Instance struct {
	// Dir holds all of the instance's files; Close removes it.
	Dir string
	// User and Password are the admin's credentials; the URLs carry them.
	User, Password string
	// Git is the git Gitea runs (an absolute path).
	Git string

	bin      string
	ini      string
	env      []string
	logPath  string
	proxyURL *url.URL
	proxy    *proxy
	client   *http.Client // to Gitea through its socket

	web       *exec.Cmd
	webDone   chan struct{}
	closeOnce sync.Once
}

// stopWait bounds how long Close waits for Gitea after SIGTERM.
const stopWait = 10 * time.Second

// Start runs a new Gitea in a temporary directory and waits until it answers. On
// failure nothing is left running and the directory is removed.
func Start(opts Options) (inst *Instance, err error) {
	if opts.Binary == "" {
		if opts.Binary, err = Binary(); err != nil {
			return nil, err
		}
	}
	if opts.Git == "" {
		opts.Git = "git"
	}
	git, err := exec.LookPath(opts.Git)
	if err != nil {
		return nil, fmt.Errorf("gitea: server git: %w", err)
	}
	if git, err = filepath.Abs(git); err != nil {
		return nil, fmt.Errorf("gitea: server git: %w", err)
	}
	if opts.User == "" {
		opts.User = "refretry"
	}
	if opts.Password == "" {
		opts.Password = "refretry-password"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	dir, err := os.MkdirTemp("", "refretry-gitea-")
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	i := &Instance{
		Dir: dir, User: opts.User, Password: opts.Password, Git: git,
		bin: opts.Binary, ini: filepath.Join(dir, "app.ini"), logPath: filepath.Join(dir, "gitea.log"),
		client: &http.Client{Timeout: time.Minute},
	}
	defer func() {
		if err != nil {
			i.Close()
			inst = nil
		}
	}()
	for _, d := range []string{"home", "custom", "data", "log", "repos"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("gitea: %w", err)
		}
	}
	i.env = append(hermetic.Env(without(os.Environ(), "GITEA_", "PATH="), filepath.Join(dir, "home")),
		"PATH="+filepath.Dir(git)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GITEA_WORK_DIR="+dir, "GITEA_CUSTOM="+filepath.Join(dir, "custom"))

	// Gitea serves HTTP on a Unix socket in the directory, which no other process can
	// take: a TCP port chosen free could be taken before Gitea listens, and Gitea does
	// not exit then. Everything reaches it through the socket: the proxy, this API
	// client, and its own hooks (its internal API). The proxy listens on TCP before
	// the configuration is written, which names it as the root URL: what Gitea prints
	// to a client then names the URL the client used. It serves once Gitea answers.
	socket := filepath.Join(dir, "gitea.sock")
	if len(socket) > 100 {
		return nil, fmt.Errorf("gitea: socket path %s is too long for a Unix socket: set TMPDIR to a shorter directory", socket)
	}
	i.client.Transport = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gitea: proxy: %w", err)
	}
	defer func() {
		if err != nil {
			proxyLn.Close()
		}
	}()
	i.proxyURL = &url.URL{Scheme: "http", Host: proxyLn.Addr().String(), Path: "/"}
	if err := os.WriteFile(i.ini, []byte(appINI(dir, git, socket, i.proxyURL.String(), opts)), 0o600); err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	if err := i.run(opts.StartTimeout, "migrate"); err != nil {
		return nil, err
	}
	if err := i.run(opts.StartTimeout, "admin", "user", "create", "--admin", "--username", i.User,
		"--password", i.Password, "--email", i.User+"@example.com", "--must-change-password=false"); err != nil {
		return nil, err
	}
	if err := i.startWeb(opts.StartTimeout); err != nil {
		return nil, err
	}
	i.proxy = newProxy(proxyLn, &url.URL{Scheme: "http", Host: giteaHost}, i.client.Transport, opts.Latency)
	return i, nil
}

// giteaHost is the host name of the URLs sent through the socket (any would do).
const giteaHost = "gitea.invalid"

// startWeb starts `gitea web` and waits until it answers.
func (i *Instance) startWeb(timeout time.Duration) error {
	logf, err := os.OpenFile(i.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("gitea: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(i.bin, "web", "--config", i.ini, "--work-path", i.Dir)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = i.Dir, i.env, logf, logf
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("gitea: starting gitea web: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	i.web, i.webDone = cmd, done

	deadline := time.Now().Add(timeout)
	probe := &http.Client{Timeout: 5 * time.Second, Transport: i.client.Transport}
	for {
		resp, err := probe.Get("http://" + giteaHost + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			i.web = nil
			return fmt.Errorf("gitea: gitea web ended before answering (%s); end of %s:\n%s", cmd.ProcessState, i.logPath, i.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gitea: gitea web did not answer /api/v1/version within %s; end of %s:\n%s", timeout, i.logPath, i.logTail())
		}
	}
}

// run runs a gitea subcommand to its end, its output appended to the log.
func (i *Instance) run(timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, i.bin, append(args, "--config", i.ini, "--work-path", i.Dir)...)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = i.Dir, i.env, &out, &out
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if f, ferr := os.OpenFile(i.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); ferr == nil {
		fmt.Fprintf(f, "== gitea %s\n", strings.Join(args, " "))
		f.Write(out.Bytes())
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("gitea: gitea %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 40))
	}
	return nil
}

// Close stops Gitea and the proxy and removes the instance's directory.
func (i *Instance) Close() {
	i.closeOnce.Do(func() {
		if i.web != nil {
			terminate(i.web)
			select {
			case <-i.webDone:
			case <-time.After(stopWait):
			}
			killGroup(i.web) // what it left behind, or Gitea itself when it hangs
			<-i.webDone
		}
		if i.proxy != nil {
			i.proxy.close()
		}
		i.client.CloseIdleConnections()
		os.RemoveAll(i.Dir)
	})
}

// URL is the clone URL of the admin's repository repo, through the proxy, with the
// admin's credentials: http://user:password@127.0.0.1:<port>/<user>/<repo>.git.
func (i *Instance) URL(repo string) string {
	u := *i.proxyURL
	u.User = url.UserPassword(i.User, i.Password)
	u.Path = "/" + i.User + "/" + repo + ".git"
	return u.String()
}

// ProxyURL is the root URL clients use, "http://127.0.0.1:<port>/" (no credentials).
func (i *Instance) ProxyURL() string { return i.proxyURL.String() }

// RepoPath is the bare repository of the admin's repo on disk.
func (i *Instance) RepoPath(repo string) string {
	return filepath.Join(i.Dir, "repos", strings.ToLower(i.User), strings.ToLower(repo)+".git")
}

// LogPath is the file that holds the output of Gitea's commands.
func (i *Instance) LogPath() string { return i.logPath }

// Requests is the number of requests the proxy has received so far, of every kind.
func (i *Instance) Requests() int { return int(i.proxy.requests.Load()) }

// Pushes is the number of receive-pack POSTs the proxy has passed on so far.
func (i *Instance) Pushes() int { return int(i.proxy.pushes.Load()) }

// UploadPacks is the number of upload-pack POSTs the proxy has passed on so far.
func (i *Instance) UploadPacks() int { return int(i.proxy.uploadPacks.Load()) }

// HoldPushes makes the proxy hold the next n receive-pack POSTs until all n have
// arrived, then pass them on together (see the package's contract). n <= 0 lets a
// pending hold go.
func (i *Instance) HoldPushes(n int) { i.proxy.hold(n) }

func (i *Instance) logTail() string {
	b, _ := os.ReadFile(i.logPath)
	return tail(string(b), 40)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// without is env without the variables that start with one of the prefixes.
func without(env []string, prefixes ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
