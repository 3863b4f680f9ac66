package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

// gateEnv marks a child that is this program acting as a start gate: it
// blocks reading file descriptor 3 until the parent closes the other end
// of that pipe, reports the CPU time it has used so far on file descriptor
// 5, then execs its arguments in place.
const gateEnv = "REFRETRY_BENCH_GATE"

// gateRecordSize is the size of one gate CPU record: pid, user and system
// time in microseconds, each a little-endian int64. It is far below
// PIPE_BUF, so concurrent writers never interleave within a record.
const gateRecordSize = 24

const (
	stderrKeep   = 4096
	hwmInterval  = 5 * time.Millisecond
	killWaitTime = 5 * time.Second
)

// runner starts every child process with the benchmark's environment and a
// timeout.
type runner struct {
	ctx     context.Context
	git     string // the git under test, also used for setup
	env     []string
	home    string // HOME of every child
	timeout time.Duration
	self    string // this executable, used as the start gate
	// stdoutToo makes gated children's standard output go where their
	// standard error goes (outcome.stderr and stderrTail), interleaved.
	stdoutToo bool
}

func newRunner(ctx context.Context, cfg config, root string) (*runner, error) {
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &runner{
		ctx:     ctx,
		git:     cfg.git,
		env:     childEnv(os.Environ(), home, cfg.git),
		home:    home,
		timeout: cfg.timeout,
		self:    self,
	}, nil
}

// childEnv is the hermetic environment (internal/harness/hermetic) with refretry pointed at
// the git under test.
func childEnv(base []string, home, git string) []string {
	return append(hermetic.Env(base, home), "REFRETRY_GIT="+git)
}

func (r *runner) command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = r.env
	// Each child leads its own process group, so a timeout also kills
	// whatever it started (refretry's git, say).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = killWaitTime
	return cmd
}

// withEnv returns a runner whose children also get extra; an entry
// overrides one of the same name (os/exec keeps the last of duplicates).
func (r *runner) withEnv(extra ...string) *runner {
	rv := *r
	rv.env = append(slices.Clip(r.env), extra...)
	return &rv
}

// withGit returns a runner for another git under test: setup uses it and
// refretry is pointed at it.
func (r *runner) withGit(git string) *runner {
	rv := r.withEnv("REFRETRY_GIT=" + git)
	rv.git = git
	return rv
}

// output runs a helper command to completion and returns its standard
// output; a failure carries the command's standard error.
func (r *runner) output(dir string, argv ...string) (string, error) {
	return r.outputStdin(dir, nil, argv...)
}

// outputStdin is output with stdin as the command's standard input.
func (r *runner) outputStdin(dir string, stdin io.Reader, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	cmd := r.command(ctx, dir, argv)
	cmd.Stdin = stdin
	stderr := &headBuffer{max: stderrKeep}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return "", commandError(argv, err, stderr)
	}
	return string(out), nil
}

// lines runs a helper command and hands each line of its standard output
// to fn, without holding the whole output in memory.
func (r *runner) lines(dir string, argv []string, fn func(string)) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	cmd := r.command(ctx, dir, argv)
	stderr := &headBuffer{max: stderrKeep}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		fn(sc.Text())
	}
	scanErr := sc.Err()
	if err := cmd.Wait(); err != nil {
		return commandError(argv, err, stderr)
	}
	return scanErr
}

// commandError describes a failed helper command with its standard error.
func commandError(argv []string, err error, stderr *headBuffer) error {
	err = fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

// outcome is how one measured child process ended.
type outcome struct {
	wall      time.Duration
	err       error  // nil when the child exited 0
	stderr    string // the first stderrKeep bytes
	hwmKiB    int64  // last VmHWM polled from /proc, 0 if never seen
	maxrssKiB int64  // ru_maxrss from wait4, includes reaped descendants
	// cpu is user+system time from wait4: the child and every descendant
	// it waited for. For a gated child it includes the gate's own time
	// before exec, which gateCPU holds (0 if the gate never reported).
	cpu     time.Duration
	gateCPU time.Duration
	minflt  int64 // ru_minflt from wait4, includes reaped descendants

	// stderrTail is the last stderrKeep bytes (gated children only).
	stderrTail string
}

// targetCPU is the CPU time of what the child ran, without the gate.
func (o outcome) targetCPU() time.Duration { return max(0, o.cpu-o.gateCPU) }

// setUsage copies the resource usage wait4 returned for a reaped child.
func (o *outcome) setUsage(ps *os.ProcessState) {
	if ps == nil {
		return
	}
	o.cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		o.maxrssKiB = ru.Maxrss
		o.minflt = ru.Minflt
	}
}

// measureSpec describes one measured run.
type measureSpec struct {
	dir     string
	argv    []string
	stdin   io.Reader
	pollRSS bool
}

// measure runs one child and times it from just before start to reaping.
// An error is returned only when the child could not be started.
func (r *runner) measure(spec measureSpec) (outcome, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	cmd := r.command(ctx, spec.dir, spec.argv)
	cmd.Stdin = spec.stdin
	stderr := &headBuffer{max: stderrKeep}
	cmd.Stderr = stderr

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return outcome{}, err
	}
	var hwm <-chan int64
	stop := make(chan struct{})
	if spec.pollRSS {
		hwm = pollHWM(cmd.Process.Pid, hwmInterval, stop)
	}
	waitErr := cmd.Wait()
	wall := time.Since(start)
	close(stop)

	res := outcome{wall: wall, err: timeoutErr(ctx, waitErr, r.timeout), stderr: stderr.String()}
	if hwm != nil {
		res.hwmKiB = <-hwm
	}
	res.setUsage(cmd.ProcessState)
	return res, nil
}

// timeoutErr makes a timeout visible instead of a bare "signal: killed".
func timeoutErr(ctx context.Context, err error, timeout time.Duration) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return err
}

// gated is one child held at the start gate.
type gated struct {
	cmd    *exec.Cmd
	ctx    context.Context
	cancel context.CancelFunc
	stderr *headBuffer
}

// gatePipes are the three pipes shared by all gated children: each child
// writes one byte to ready once it is waiting, waits for EOF on gate, and
// after the release writes one record of its CPU time so far to cpu.
type gatePipes struct {
	gateR, gateW   *os.File
	readyR, readyW *os.File
	cpuR, cpuW     *os.File
}

func newGatePipes() (gatePipes, error) {
	var p gatePipes
	var err error
	if p.gateR, p.gateW, err = os.Pipe(); err != nil {
		return p, err
	}
	if p.readyR, p.readyW, err = os.Pipe(); err != nil {
		return p, errors.Join(err, p.gateR.Close(), p.gateW.Close())
	}
	if p.cpuR, p.cpuW, err = os.Pipe(); err != nil {
		return p, errors.Join(err, p.gateR.Close(), p.gateW.Close(), p.readyR.Close(), p.readyW.Close())
	}
	return p, nil
}

// readGateCPU collects the gate records from r until EOF, by pid.
func readGateCPU(r io.Reader) (map[int]time.Duration, error) {
	byPID := make(map[int]time.Duration)
	rec := make([]byte, gateRecordSize)
	for {
		if _, err := io.ReadFull(r, rec); err == io.EOF {
			return byPID, nil
		} else if err != nil {
			return byPID, fmt.Errorf("gate CPU records: %w", err)
		}
		pid := int(binary.LittleEndian.Uint64(rec[0:]))
		user := time.Duration(binary.LittleEndian.Uint64(rec[8:])) * time.Microsecond
		sys := time.Duration(binary.LittleEndian.Uint64(rec[16:])) * time.Microsecond
		byPID[pid] = user + sys
	}
}

// concurrent starts one child per argv, waits until all of them are held
// at a shared gate, then releases them together. The wall time runs from
// the release to the last exit. Every child has its own timeout, counted
// from its spawn. Each outcome carries the child's wait4 CPU time and the
// part of it the gate used before exec.
func (r *runner) concurrent(dir string, argvs [][]string) ([]outcome, time.Duration, error) {
	dirs := make([]string, len(argvs))
	for i := range dirs {
		dirs[i] = dir
	}
	return r.concurrentIn(dirs, argvs)
}

// concurrentIn is concurrent with each child started in its own directory,
// dirs[i] for argvs[i].
func (r *runner) concurrentIn(dirs []string, argvs [][]string) ([]outcome, time.Duration, error) {
	if len(dirs) != len(argvs) {
		return nil, 0, fmt.Errorf("%d directories for %d commands", len(dirs), len(argvs))
	}
	p, err := newGatePipes()
	if err != nil {
		return nil, 0, err
	}
	children, startErr := r.startGated(dirs, argvs, p)
	defer func() {
		for _, c := range children {
			c.cancel()
		}
	}()
	setupErr := errors.Join(startErr, p.gateR.Close(), p.readyW.Close(), p.cpuW.Close())
	type gateCPU struct {
		byPID map[int]time.Duration
		err   error
	}
	cpuDone := make(chan gateCPU, 1)
	go func() {
		byPID, err := readGateCPU(p.cpuR)
		cpuDone <- gateCPU{byPID, errors.Join(err, p.cpuR.Close())}
	}()
	if setupErr == nil {
		// Every child holds readyW until it has written, so a short read
		// means one died before reaching the gate.
		_, setupErr = io.ReadFull(p.readyR, make([]byte, len(children)))
	}
	setupErr = errors.Join(setupErr, p.readyR.Close())

	start := time.Now()
	releaseErr := p.gateW.Close()
	outcomes := make([]outcome, len(children))
	var wg sync.WaitGroup
	for i, c := range children {
		wg.Go(func() { outcomes[i].err = timeoutErr(c.ctx, c.cmd.Wait(), r.timeout) })
	}
	wg.Wait()
	wall := time.Since(start)
	// Every child has exited, so every copy of the write end is closed.
	gc := <-cpuDone

	if err := errors.Join(setupErr, releaseErr, gc.err); err != nil {
		return nil, 0, err
	}
	for i, c := range children {
		outcomes[i].stderr = c.stderr.String()
		outcomes[i].stderrTail = c.stderr.Tail()
		outcomes[i].wall = wall
		outcomes[i].setUsage(c.cmd.ProcessState)
		outcomes[i].gateCPU = gc.byPID[c.cmd.Process.Pid]
	}
	return outcomes, wall, nil
}

// startGated spawns the gated children. On error it also returns those
// started so far, so that the caller can release and reap them.
func (r *runner) startGated(dirs []string, argvs [][]string, p gatePipes) ([]gated, error) {
	env := append(slices.Clip(r.env), gateEnv+"=1")
	children := make([]gated, 0, len(argvs))
	for i, argv := range argvs {
		ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
		c := gated{
			cmd:    r.command(ctx, dirs[i], append([]string{r.self}, argv...)),
			ctx:    ctx,
			cancel: cancel,
			stderr: &headBuffer{max: stderrKeep},
		}
		c.cmd.Env = env
		c.cmd.ExtraFiles = []*os.File{p.gateR, p.readyW, p.cpuW} // fds 3, 4 and 5
		c.cmd.Stderr = c.stderr
		if r.stdoutToo {
			c.cmd.Stdout = c.stderr
		}
		if err := c.cmd.Start(); err != nil {
			cancel()
			return children, err
		}
		children = append(children, c)
	}
	return children, nil
}

// gateMain is the whole life of a gate child: report ready on fd 4, wait
// for the release on fd 3, report its own CPU time on fd 5, then become
// argv (argv[0] must be an absolute path). It returns only on failure.
func gateMain(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "bench gate: nothing to run")
		return 127
	}
	if err := awaitRelease(os.NewFile(3, "gate"), os.NewFile(4, "ready")); err != nil {
		fmt.Fprintln(os.Stderr, "bench gate:", err)
		return 126
	}
	if err := reportGateCPU(os.NewFile(5, "cpu")); err != nil {
		fmt.Fprintln(os.Stderr, "bench gate:", err)
		return 126
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, gateEnv+"=")
	})
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintln(os.Stderr, "bench gate: exec:", err)
	return 127
}

func awaitRelease(gate, ready *os.File) error {
	if _, err := ready.Write([]byte{1}); err != nil {
		return err
	}
	if err := ready.Close(); err != nil {
		return err
	}
	if _, err := gate.Read(make([]byte, 1)); err != io.EOF {
		return fmt.Errorf("gate read: want EOF, got %v", err)
	}
	return gate.Close()
}

// reportGateCPU writes the gate's own CPU time so far (Go runtime start
// and the wait, everything before exec) as one record and closes w, so
// that the target does not inherit it. exec keeps the process and its
// accounting, so wait4 later reports this time as part of the child's.
func reportGateCPU(w *os.File) error {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return errors.Join(fmt.Errorf("getrusage: %w", err), w.Close())
	}
	rec := make([]byte, gateRecordSize)
	binary.LittleEndian.PutUint64(rec[0:], uint64(os.Getpid()))
	binary.LittleEndian.PutUint64(rec[8:], uint64(time.Duration(ru.Utime.Nano())/time.Microsecond))
	binary.LittleEndian.PutUint64(rec[16:], uint64(time.Duration(ru.Stime.Nano())/time.Microsecond))
	_, err := w.Write(rec)
	return errors.Join(err, w.Close())
}

// pollHWM reads VmHWM of pid every interval until stop is closed, then
// sends the last value it could read (0 if none).
func pollHWM(pid int, interval time.Duration, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		var last int64
		for {
			if v, ok := readHWM(path); ok {
				last = v
			}
			select {
			case <-stop:
				out <- last
				return
			case <-ticker.C:
			}
		}
	}()
	return out
}

// readHWM returns VmHWM in KiB. It reports false once the process is gone
// or a zombie (no memory lines left), which is expected at the end of every
// run, so the caller simply keeps its previous reading.
func readHWM(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(data) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if len(fields) == 0 {
			return 0, false
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		return v, err == nil
	}
	return 0, false
}

// headBuffer keeps the first max bytes written to it, and separately the
// last max bytes, and drops the rest.
type headBuffer struct {
	buf  []byte
	tail []byte
	max  int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	b.tail = append(b.tail, p[max(0, len(p)-b.max):]...)
	if over := len(b.tail) - b.max; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string { return string(b.buf) }

// Tail is the last max bytes written (all of them when fewer were).
func (b *headBuffer) Tail() string { return string(b.tail) }
