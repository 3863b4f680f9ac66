package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// matrixKey names one cell of the matrix phase within a server.
type matrixKey struct {
	mode, method string
	n            int
}

// matrixServerResults are one server kind's trials, or why it was skipped.
type matrixServerResults struct {
	name, label, skip string
	trials            map[matrixKey][]matrixResult
}

// matrixReport collects the matrix phase's trials and renders them.
type matrixReport struct {
	cfg     config
	modes   []matrixMode
	methods []matrixMethod
	skips   map[string]string // method name: why it did not run
	servers []*matrixServerResults
	raw     strings.Builder
}

func newMatrixReport(cfg config, modes []matrixMode, methods []matrixMethod, skips map[string]string) *matrixReport {
	rep := &matrixReport{cfg: cfg, modes: modes, methods: methods, skips: skips}
	rep.raw.WriteString("### Raw trials, matrix\n\n" +
		"| server | mode | jobs | trial | method | load (1 min) | wall (s) | exited 0 | timed out | once | lost | duplicated | exit 0, result lost | other lines | pushes | requests | client CPU (s) | server CPU (s) | bench process CPU (s) | land: wall (s), pushes, requests |\n" +
		"|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	return rep
}

// server registers a server kind that runs; add then files its trials.
func (rep *matrixReport) server(name, label string) {
	rep.servers = append(rep.servers, &matrixServerResults{name: name, label: label, trials: map[matrixKey][]matrixResult{}})
}

func (rep *matrixReport) skipServer(name, reason string) {
	rep.servers = append(rep.servers, &matrixServerResults{name: name, skip: reason})
}

// add files one trial of the last registered server.
func (rep *matrixReport) add(mode, method string, n, trial int, res matrixResult) {
	s := rep.servers[len(rep.servers)-1]
	k := matrixKey{mode, method, n}
	s.trials[k] = append(s.trials[k], res)
	land := ""
	if res.hasLand {
		land = fmt.Sprintf("%s, %d, %d", seconds(res.landWall), res.landPushes, res.landRequests)
	}
	fmt.Fprintf(&rep.raw, "| %s | %s | %d | %d | %s | %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n",
		s.name, mode, n, trial, method, res.load, seconds(res.wall), res.landed, res.timedOut,
		res.check.once, res.check.lost, res.check.dup, res.check.okLost, res.check.extra, res.pushes, res.requests,
		seconds(res.clientCPU), serverCPUText(res.serverCPU, res.serverOK), seconds(res.benchCPU), land)
}

func serverCPUText(d time.Duration, ok bool) string {
	if !ok {
		return "n/a"
	}
	return seconds(d)
}

// matrixSummary aggregates one cell's trials.
type matrixSummary struct {
	trials          int
	walls           []time.Duration // per trial, in order
	medianWall      time.Duration
	landedMin       int
	landedMedian    string
	onceMin         int
	onceMedian      string
	complete        int // trials in which every job exited 0 and every result was there exactly once
	lost, dup       int // totals over the trials
	okLost, extra   int
	timedOut        int
	medianPushes    float64
	perLanded       float64 // median over trials of pushes ÷ jobs that exited 0
	perLandedOK     bool    // some trial had a job exit 0
	medianRequests  float64
	requestsLanded  float64 // median over trials of requests ÷ jobs that exited 0 (when perLandedOK)
	medianClientCPU time.Duration
	medianServerCPU time.Duration
	serverOK        bool // the server's CPU was read in every trial
	firstErr        string
	// The land's medians, for a method with one (hasLand): its own wall
	// time, pushes and requests.
	hasLand            bool
	medianLandWall     time.Duration
	medianLandPushes   float64
	medianLandRequests float64
}

func summarizeMatrix(trials []matrixResult, n int) matrixSummary {
	s := matrixSummary{trials: len(trials), serverOK: len(trials) > 0}
	var landed, once, pushes, requests []int
	var client, server, landWall []time.Duration
	var perLanded, requestsLanded []float64
	var landPushes, landRequests []int
	for _, t := range trials {
		if t.hasLand {
			landWall, landPushes, landRequests = append(landWall, t.landWall), append(landPushes, t.landPushes), append(landRequests, t.landRequests)
		}
		s.walls = append(s.walls, t.wall)
		landed, once, pushes = append(landed, t.landed), append(once, t.check.once), append(pushes, t.pushes)
		requests = append(requests, t.requests)
		client, server = append(client, t.clientCPU), append(server, t.serverCPU)
		if t.landed > 0 {
			perLanded = append(perLanded, float64(t.pushes)/float64(t.landed))
			requestsLanded = append(requestsLanded, float64(t.requests)/float64(t.landed))
		}
		if t.landed == n && t.check.once == n {
			s.complete++
		}
		s.lost += t.check.lost
		s.dup += t.check.dup
		s.okLost += t.check.okLost
		s.extra += t.check.extra
		s.timedOut += t.timedOut
		s.serverOK = s.serverOK && t.serverOK
		if s.firstErr == "" {
			s.firstErr = t.firstErr
		}
	}
	s.medianWall = median(s.walls)
	s.landedMedian, s.onceMedian = medianText(landed), medianText(once)
	if len(trials) > 0 {
		s.landedMin, s.onceMin = slices.Min(landed), slices.Min(once)
	}
	s.medianPushes, s.medianRequests = medianFloat(pushes), medianFloat(requests)
	if len(perLanded) > 0 {
		s.perLanded, s.perLandedOK = medianOfFloats(perLanded), true
		s.requestsLanded = medianOfFloats(requestsLanded)
	}
	s.medianClientCPU, s.medianServerCPU = median(client), median(server)
	if len(landWall) > 0 {
		s.hasLand, s.medianLandWall = true, median(landWall)
		s.medianLandPushes, s.medianLandRequests = medianFloat(landPushes), medianFloat(landRequests)
	}
	return s
}

// medianOfFloats is the median (the mean of the middle two for an even
// count); 0 for none.
func medianOfFloats(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// ratioFloat formats a/b as a multiplier.
func ratioFloat(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func formatCount(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// roundTripsText says which round trips the servers ran under.
func roundTripsText(rtts []time.Duration) string {
	parts := make([]string, len(rtts))
	for i, rtt := range rtts {
		parts[i] = "none (CPU-bound: jobs, server and bench share this machine's cores)"
		if rtt > 0 {
			parts[i] = rtt.String() + " per HTTP request (servers named `<kind>-rtt" + rtt.String() + "`)"
		}
	}
	return strings.Join(parts, "; then ")
}

// render writes the whole matrix section.
func (rep *matrixReport) render() string {
	var b strings.Builder
	rep.intro(&b)
	var charts strings.Builder
	for _, s := range rep.servers {
		if s.skip != "" {
			fmt.Fprintf(&b, "### Server %s: skipped\n\n%s\n\n", s.name, s.skip)
			continue
		}
		for _, mode := range rep.modes {
			sums := rep.renderCell(&b, s, mode)
			if rep.cfg.charts != "" {
				links, err := rep.writeCharts(s, mode, sums)
				if err != nil {
					fmt.Fprintf(&b, "> charts of %s, %s not written: %v\n\n", s.name, mode.name, err)
				}
				charts.WriteString(links)
			}
		}
	}
	if charts.Len() > 0 {
		b.WriteString("### Charts, matrix\n\n" + charts.String())
	}
	b.WriteString(rep.raw.String())
	b.WriteString("\n")
	return b.String()
}

func (rep *matrixReport) intro(b *strings.Builder) {
	cfg := rep.cfg
	checkout := ""
	for _, c := range matrixCheckouts {
		if c.name == cfg.matrix.checkout {
			checkout = c.label
		}
	}
	b.WriteString("## (d) Matrix\n\n" +
		"N CI matrix jobs push their results to one branch at once. Per trial and method (not timed): a fresh bare remote " +
		"whose `main` holds a seed commit (`README.md`; in the shared modes `results.csv` with its header line, and in the union " +
		"mode a `.gitattributes` with `results.csv merge=union`), and N job directories, each `git clone --depth 1 --branch main " +
		"<url>` over HTTP (as actions/checkout makes them; " + strconv.Itoa(matrixSetupWorkers) + " at a time) with its own " +
		"`user.name`/`user.email` and one commit of its result. Then the N jobs are held at a shared gate and released at once. " +
		"Wall time runs from the release to the last job's exit; for a method with a land (`fanin`: a fan-in job run once " +
		"every job has exited, held at a gate of its own in job-000's clone and then released), the land's own wall time, from its release to its " +
		"exit, is added (the bench's start of its process in between is not counted: in a CI that is the scheduling of one more job). *Pushes* are the receive-pack POSTs the server received during " +
		"the trial, *requests* every HTTP request it received then (info/refs GETs, upload-pack and receive-pack POSTs): " +
		"under the forge latency model each of them costs the client one round trip. *Client CPU* is user+system time of the jobs and every descendant they waited for (wait4), without the " +
		"gate's own time. *Server CPU*: for the HTTP server, the git http-backend processes (and the receive-pack, upload-pack, " +
		"index-pack they ran) that this process reaped during the trial (its RUSAGE_CHILDREN delta less the jobs' own); for " +
		"Gitea, the `gitea web` process and every descendant it waited for (receive-pack, its hooks), from /proc. Neither " +
		"includes the Go HTTP server or proxy inside the bench process, which the raw trials show as *bench process CPU*. " +
		"The methods run interleaved within every trial, in an order rotated by trial and mode. The raw trials give the " +
		"1-minute load average just before each release, which includes this benchmark's own jobs of the minute before.\n\n" +
		"*Results*: after each trial the branch's final tree is read from the remote: every job's file with its content " +
		"(files mode), or every job's line in `results.csv` (shared modes). *once* counts results there exactly once, *lost* " +
		"those missing, *duplicated* those there more than once; *exit 0, result lost* counts jobs that exited 0 although " +
		"their result is not there, which must be 0 for every method (for `fanin` a job counts as exited 0 when it and the land both " +
		"did: its own exit 0 says only that its commit is staged); *other lines* are lines of `results.csv` that are " +
		"neither its header nor a job's line (conflict markers, say). For `floor`, each job's result is looked for on its own branch.\n\n")
	b.WriteString("| setting | value |\n|---|---|\n")
	fmt.Fprintf(b, "| checkout form (`-matrix-checkout %s`) | %s |\n", cfg.matrix.checkout, checkout)
	if cfg.matrix.pushTimeout > 0 {
		fmt.Fprintf(b, "| refretry's budget (`-matrix-push-timeout`) | `--timeout %s` on every refretry push (and `gather land`) |\n", cfg.matrix.pushTimeout)
	} else {
		b.WriteString("| refretry's budget (`-matrix-push-timeout`) | refretry's default: 60 s in which nothing moved, within 15 min |\n")
	}
	fmt.Fprintf(b, "| per-job process timeout (`-matrix-job-timeout`) | %s (a job still running then is killed with its descendants and counted as timed out) |\n", cfg.matrix.jobTimeout)
	fmt.Fprintf(b, "| forge round trip (`-matrix-latency`, `-matrix-rtt`) | %s |\n", roundTripsText(cfg.matrix.roundTrips()))
	fmt.Fprintf(b, "| jobs (N) | %s |\n", cfg.matrix.jobs.String())
	fmt.Fprintf(b, "| trials | %d |\n\n", cfg.trialsOfMatrix())
	b.WriteString("| method | what each job runs |\n|---|---|\n")
	for _, m := range rep.methods {
		label := m.label
		if why := rep.skips[m.name]; why != "" {
			label += " — **skipped**: " + why
		}
		fmt.Fprintf(b, "| %s | %s |\n", m.name, cell(label))
	}
	b.WriteString("\n| mode | what each job commits |\n|---|---|\n")
	for _, m := range rep.modes {
		fmt.Fprintf(b, "| %s | %s |\n", m.name, cell(m.label))
	}
	b.WriteString("\n")
}

// renderCell writes the table, warnings, ratios and first failures of one
// server and mode, and returns the summaries by method (nil for skipped
// methods), each by N in -matrix-jobs order.
func (rep *matrixReport) renderCell(b *strings.Builder, s *matrixServerResults, mode matrixMode) [][]*matrixSummary {
	fmt.Fprintf(b, "### %s, %s\n\n%s; %s.\n\n", s.name, mode.name, s.label, mode.label)
	b.WriteString("| jobs | method | exited 0, median (min) | results exactly once, median (min) | complete trials | lost (total) | duplicated (total) | exit 0, result lost (total) | median wall (s) | wall per trial (s) | median pushes | pushes per job that exited 0 | median requests | requests per job that exited 0 | median client CPU (s) | median server CPU (s) |\n")
	b.WriteString("|--:|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|\n")
	sums := make([][]*matrixSummary, len(rep.methods))
	var warnings, failures []string
	for ni, n := range rep.cfg.matrix.jobs {
		for mi, m := range rep.methods {
			if sums[mi] == nil {
				sums[mi] = make([]*matrixSummary, len(rep.cfg.matrix.jobs))
			}
			if why := rep.skips[m.name]; why != "" {
				fmt.Fprintf(b, "| %d | %s | skipped: %s |%s\n", n, m.name, cell(why), strings.Repeat(" |", 13))
				continue
			}
			trials := s.trials[matrixKey{mode.name, m.name, n}]
			sum := summarizeMatrix(trials, n)
			sums[mi][ni] = &sum
			walls := make([]string, len(sum.walls))
			for i, w := range sum.walls {
				walls[i] = seconds(w)
			}
			perLanded, requestsLanded := "n/a", "n/a"
			if sum.perLandedOK {
				perLanded, requestsLanded = fmt.Sprintf("%.2f", sum.perLanded), fmt.Sprintf("%.2f", sum.requestsLanded)
			}
			okLost := strconv.Itoa(sum.okLost)
			if sum.okLost > 0 {
				okLost = "**" + okLost + "**"
			}
			fmt.Fprintf(b, "| %d | %s | %s (%d) | %s (%d) | %d of %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				n, m.name, sum.landedMedian, sum.landedMin, sum.onceMedian, sum.onceMin, sum.complete, sum.trials,
				sum.lost, sum.dup, okLost, seconds(sum.medianWall), strings.Join(walls, ", "),
				formatCount(sum.medianPushes), perLanded, formatCount(sum.medianRequests), requestsLanded, seconds(sum.medianClientCPU),
				serverCPUText(sum.medianServerCPU, sum.serverOK))
			if sum.okLost > 0 {
				who := "a method that is not refretry's"
				if m.compare {
					who = "refretry"
				}
				warnings = append(warnings, fmt.Sprintf("> **WARNING (%s): %s, %d jobs: %d jobs exited 0 but their result is not on the branch.**",
					who, m.name, n, sum.okLost))
			}
			var notes []string
			if sum.timedOut > 0 {
				notes = append(notes, fmt.Sprintf("%d timed out", sum.timedOut))
			}
			if sum.extra > 0 {
				notes = append(notes, fmt.Sprintf("%d other lines in results.csv", sum.extra))
			}
			if sum.firstErr != "" || len(notes) > 0 {
				line := fmt.Sprintf("- %s, %d jobs:", m.name, n)
				if sum.firstErr != "" {
					line += " `" + strings.ReplaceAll(sum.firstErr, "`", "'") + "`"
				}
				if len(notes) > 0 {
					line += " (" + strings.Join(notes, "; ") + ")"
				}
				failures = append(failures, line)
			}
		}
	}
	b.WriteString("\n")
	if len(warnings) > 0 {
		b.WriteString(strings.Join(warnings, "\n>\n") + "\n\n")
	}
	rep.renderRatios(b, sums)
	if len(failures) > 0 {
		b.WriteString("Why jobs failed: the deciding line of the first failed job (refretry's last word, else the first conflict, rejected ref, `fatal:` or `error:` line):\n\n" +
			strings.Join(failures, "\n") + "\n\n")
	}
	return sums
}

// renderRatios writes refretry's methods against what users do instead, at
// every N, for the pairs whose both sides ran.
func (rep *matrixReport) renderRatios(b *strings.Builder, sums [][]*matrixSummary) {
	var rows []string
	for ni, n := range rep.cfg.matrix.jobs {
		for ci, c := range rep.methods {
			if !c.compare {
				continue
			}
			for di, d := range rep.methods {
				if !d.baseline && d.name != c.against {
					continue
				}
				a, z := sums[ci][ni], sums[di][ni]
				if a == nil || z == nil {
					continue
				}
				serverRatio := "n/a"
				if a.serverOK && z.serverOK {
					serverRatio = ratio(a.medianServerCPU, z.medianServerCPU)
				}
				rows = append(rows, fmt.Sprintf("| %d | %s ÷ %s | **%s** | %s | %s | %s | %s | %s |", n, c.name, d.name,
					ratio(a.medianWall, z.medianWall), ratioFloat(a.medianPushes, z.medianPushes), ratioFloat(a.medianRequests, z.medianRequests),
					ratio(a.medianClientCPU, z.medianClientCPU), serverRatio, matrixCaution(n, c.name, *a, d.name, *z)))
				if d.name == "floor" && a.hasLand {
					rows = append(rows, landRatioRow(n, c.name, *a, *z))
				}
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("| jobs | ratio of medians | wall | pushes | requests | client CPU | server CPU | note |\n|--:|---|--:|--:|--:|--:|--:|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

// landRatioRow compares a method with a land (fanin) with the floor plus its
// own land: N pushes that do not contend, then the land's waves (one up to
// 64 jobs) as the method's trials measured them.
func landRatioRow(n int, name string, a, floor matrixSummary) string {
	note := fmt.Sprintf("the land (waves of up to 64 staged commits): median %s s, %s pushes, %s requests",
		seconds(a.medianLandWall), formatCount(a.medianLandPushes), formatCount(a.medianLandRequests))
	if caution := matrixCaution(n, name, a, "floor", floor); caution != "" {
		note += "; " + caution
	}
	return fmt.Sprintf("| %d | %s ÷ (floor + its land) | **%s** | %s | %s | n/a | n/a | %s |", n, name,
		ratio(a.medianWall, floor.medianWall+a.medianLandWall), ratioFloat(a.medianPushes, floor.medianPushes+a.medianLandPushes),
		ratioFloat(a.medianRequests, floor.medianRequests+a.medianLandRequests), note)
}

// matrixCaution says which side of a ratio did not land every result in
// every trial (so did less work), or is empty.
func matrixCaution(n int, aName string, a matrixSummary, zName string, z matrixSummary) string {
	var parts []string
	for _, side := range []struct {
		name string
		s    matrixSummary
	}{{aName, a}, {zName, z}} {
		if side.s.complete < side.s.trials {
			parts = append(parts, fmt.Sprintf("%s landed every result in %d of %d trials", side.name, side.s.complete, side.s.trials))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "caution: " + strings.Join(parts, "; ") + " (unequal work)"
}

// matrixChartKinds are the charts of every server and mode.
var matrixChartKinds = []struct {
	suffix, what, yLabel, unit string
	y                          func(*matrixSummary) float64
}{
	{"-wall.svg", "Wall time", "median wall time (s)", " s", func(s *matrixSummary) float64 { return s.medianWall.Seconds() }},
	{"-pushes.svg", "Pushes received by the server", "median receive-pack POSTs", "", func(s *matrixSummary) float64 { return s.medianPushes }},
}

// writeCharts writes the wall-time and pushes charts of one server and mode,
// one line per method, and returns the markdown that shows them.
func (rep *matrixReport) writeCharts(s *matrixServerResults, mode matrixMode, sums [][]*matrixSummary) (string, error) {
	if err := os.MkdirAll(rep.cfg.charts, 0o755); err != nil {
		return "", err
	}
	var md strings.Builder
	for _, kind := range matrixChartKinds {
		c := lineChart{
			title:  fmt.Sprintf("%s, N matrix jobs, %s, %s (%d trials per point, medians)", kind.what, s.name, mode.name, rep.cfg.trialsOfMatrix()),
			xLabel: "concurrent matrix jobs (N)", yLabel: kind.yLabel, yUnit: kind.unit,
		}
		for mi, m := range rep.methods {
			line := series{name: m.name, style: slices.IndexFunc(matrixMethods, func(x matrixMethod) bool { return x.name == m.name })}
			for ni, n := range rep.cfg.matrix.jobs {
				if sum := sums[mi][ni]; sum != nil && sum.trials > 0 {
					line.points = append(line.points, chartPoint{float64(n), kind.y(sum)})
				}
			}
			if len(line.points) > 0 {
				c.series = append(c.series, line)
			}
		}
		path := filepath.Join(rep.cfg.charts, "matrix-"+s.name+"-"+mode.name+kind.suffix)
		var buf bytes.Buffer
		if err := c.writeSVG(&buf); err != nil {
			return md.String(), err
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return md.String(), err
		}
		progress("wrote %s", path)
		fmt.Fprintf(&md, "![%s against matrix jobs, %s, %s](%s)\n\n", strings.ToLower(kind.what), s.name, mode.name, chartLink(rep.cfg, path))
	}
	return md.String(), nil
}
