package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
)

// fetchVariant is what each of the N concurrent processes runs.
type fetchVariant struct {
	name string // short and stable: "git", "refretry"
	argv func(cfg config, c fetchCombo) []string
}

// Indexes into fetchVariants.
const (
	fetchGit = iota
	fetchRefretry
)

// fetchVariants are the variants of the fetch phase, in report order.
var fetchVariants = []fetchVariant{
	{"git", func(_ config, c fetchCombo) []string { return []string{c.git, "fetch", "origin"} }},
	// REFRETRY_GIT points at the row's git (runner.withGit).
	{"refretry", func(cfg config, _ fetchCombo) []string { return []string{cfg.refretry, "fetch", "origin"} }},
}

// fetchCell is one transport with one combination of ref backend and git.
type fetchCell struct {
	combo     fetchCombo
	transport fetchTransport
	fx        *fetchFixture // nil when the combination is skipped
}

// fetchResult is one variant in one trial of one cell.
type fetchResult struct {
	trialResult                 // mismatch: remote-tracking refs not at the remote's branch afterwards
	classes     [numClasses]int // failed fetches by the class of their deciding line
	other       string          // the deciding line of the first failure classed other
}

// fetchCombos are the combinations measured, in report order: reftable
// and files with the git under test, files with the older git.
func fetchCombos(r *runner, cfg config) []fetchCombo {
	combos := []fetchCombo{
		{name: "reftable-git", format: "reftable", git: cfg.git, refFormat: true},
		{name: "files-git", format: "files", git: cfg.git, refFormat: true},
		{name: "files-old-git", format: "files", git: cfg.oldGit, skip: cfg.oldGitSkip},
	}
	for i := range combos {
		c := &combos[i]
		if c.skip != "" {
			c.version = "older"
			c.label = c.format + ", older git"
			continue
		}
		c.version = gitVersion(r, c.git)
		c.label = c.format + ", git " + c.version
	}
	// -git must know reftable, so it knows --ref-format; the older git may
	// not, and then makes files repositories by default.
	if old := &combos[2]; old.skip == "" {
		old.refFormat = knowsRefFormat(old.version)
	}
	return combos
}

// gitVersion is the version git reports ("2.55.0"), or "unknown".
func gitVersion(r *runner, git string) string {
	out, err := r.output("", git, "--version")
	if err != nil {
		return "unknown"
	}
	return strings.TrimPrefix(firstLine(out), "git version ")
}

// knowsRefFormat reports whether a git of this version takes --ref-format
// (2.45 and later). An unknown version is taken as not knowing it, which
// leaves the files backend to the git's default.
func knowsRefFormat(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 2 || major == 2 && minor >= 45
}

// fetchIntro explains the fetch phase at the top of its section.
func fetchIntro() string {
	branches := strconv.Itoa(fetchBranches)
	return "## (c) Fetch\n\n" +
		"N processes start together in one clone (held at a shared gate, then released at once), each running " +
		"`git fetch origin` (variant `git`) or `refretry fetch origin` (variant `refretry`, with `REFRETRY_GIT` set to the row's git). " +
		"The remote is bare with " + branches + " branches, every one of them a commit ahead of the clone, " +
		"so every fetch has " + branches + " remote-tracking refs to update. " +
		"Remote and clones are made once per row with the row's git and ref format (the clone over the row's transport) " +
		"and copied afresh for every trial and variant. Smart HTTP is `git http-backend` of the git under test behind a loopback " +
		"server in the bench process, serving the same remote as file://. " +
		"Wall time runs from the release to the last exit. CPU is user+system time of the N processes and every descendant " +
		"they waited for (wait4), without the gate's own time before exec: over file:// it includes the upload-pack each fetch " +
		"starts, over HTTP it does not include the server's side. The two variants run in an order rotated by trial and row.\n\n" +
		"*mismatches*: after each trial, the remote's branches whose remote-tracking ref is missing or elsewhere (" +
		branches + " per trial at most). The columns after it count failed fetches, over all trials, by " +
		"the first line of their stderr that matches one of these classes or starts with `error:` or `fatal:`.\n\n"
}

func runFetch(r *runner, cfg config, root string) (string, error) {
	var b, raw strings.Builder
	b.WriteString(fetchIntro())
	raw.WriteString("### Raw trials, fetch\n\n| fetches | trial | transport | refs, git | variant | wall (s) | CPU (s) | gate CPU (s, not counted) | ok | failed | mismatches | failures by class |\n" +
		"|--:|--:|---|---|---|--:|--:|--:|--:|--:|--:|---|\n")

	served, templates, work := filepath.Join(root, "fetch-served"), filepath.Join(root, "fetch-templates"), filepath.Join(root, "fetch-trials")
	for _, d := range []string{served, templates, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return b.String(), err
		}
	}
	srv, err := gitserver.Start(cfg.git, served, gitserver.Options{
		Env: []string{"HOME=" + r.home, "XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config")},
	})
	if err != nil {
		return b.String(), err
	}
	defer srv.Close()
	transports := []fetchTransport{
		{name: "file", label: "file://", url: func(repo string) string { return "file://" + filepath.Join(served, repo) }},
		{name: "http", label: "smart HTTP", url: srv.URL},
	}
	cells, fixtures, err := newFetchCells(r, cfg, transports, served, templates)
	if err != nil {
		return b.String(), err
	}

	// points[cell][variant] are the medians at each N, for the charts.
	points := make([][][]variantPoint, len(cells))
	for i := range points {
		points[i] = make([][]variantPoint, len(fetchVariants))
	}
	for _, n := range cfg.fetchers {
		results := make([][][]fetchResult, len(cells))
		for i := range results {
			results[i] = make([][]fetchResult, len(fetchVariants))
		}
		for t := range cfg.trials {
			for _, fx := range fixtures {
				if err := fx.freshRemote(); err != nil {
					return b.String(), err
				}
			}
			for ci, fc := range cells {
				if fc.fx == nil {
					continue
				}
				for k := range fetchVariants {
					vi := (t + ci + k) % len(fetchVariants)
					v := fetchVariants[vi]
					dir := filepath.Join(work, fc.combo.name+"-"+fc.transport.name+"-"+v.name)
					res, err := fetchTrial(r.withGit(fc.combo.git), cfg, fc, v, n, dir)
					if err != nil {
						return b.String(), fmt.Errorf("%d fetches, %s, %s, %s: %w", n, fc.transport.label, fc.combo.label, v.name, err)
					}
					progress("fetch n=%d trial %d/%d %s %s %s: %s s wall, %s s CPU, %d/%d ok, %d mismatches",
						n, t+1, cfg.trials, fc.transport.name, fc.combo.name, v.name, seconds(res.wall), seconds(res.cpu), res.ok, n, res.mismatch)
					results[ci][vi] = append(results[ci][vi], res)
					fmt.Fprintf(&raw, "| %d | %d | %s | %s | %s | %s | %s | %s | %d | %d | %d | %s |\n",
						n, t+1, fc.transport.label, fc.combo.label, v.name, seconds(res.wall), seconds(res.cpu), seconds(res.gateCPU),
						res.ok, res.failed, res.mismatch, classCounts(res.classes))
				}
			}
		}
		sums := renderFetch(&b, n, cells, results)
		for ci := range cells {
			for vi := range fetchVariants {
				if s := sums[ci][vi]; s != nil {
					points[ci][vi] = append(points[ci][vi], variantPoint{s.medianWall, s.medianCPU, 100 * s.medianOKFloat / float64(n)})
				}
			}
		}
	}
	if cfg.charts != "" {
		links, err := writeFetchCharts(cfg, transports, cells, points)
		if err != nil {
			return b.String(), err
		}
		b.WriteString(links)
	}
	b.WriteString(raw.String())
	b.WriteString("\n")
	return b.String(), nil
}

// newFetchCells makes the fixture of every combination that can run and
// returns the cells (combination by transport, in report order) and the
// fixtures made.
func newFetchCells(r *runner, cfg config, transports []fetchTransport, served, templates string) ([]fetchCell, []*fetchFixture, error) {
	var cells []fetchCell
	var fixtures []*fetchFixture
	for _, c := range fetchCombos(r, cfg) {
		var fx *fetchFixture
		if c.skip != "" {
			progress("fetch: skipping %s: %s", c.label, c.skip)
		} else {
			var err error
			if fx, err = newFetchFixture(r.withGit(c.git), c, transports, served, templates); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", c.label, err)
			}
			fixtures = append(fixtures, fx)
		}
		for _, t := range transports {
			cells = append(cells, fetchCell{combo: c, transport: t, fx: fx})
		}
	}
	return cells, fixtures, nil
}

// writeFetchCharts writes the wall, success and CPU charts of each
// transport, one line per combination and variant, and returns the
// markdown that shows them.
func writeFetchCharts(cfg config, transports []fetchTransport, cells []fetchCell, points [][][]variantPoint) (string, error) {
	var md strings.Builder
	md.WriteString("### Charts, fetch\n\n")
	for _, t := range transports {
		set := chartSet{file: "fetch-" + t.name, procs: "fetches over " + t.label, xs: cfg.fetchers}
		for ci, fc := range cells {
			if fc.transport.name != t.name {
				continue
			}
			for vi, v := range fetchVariants {
				set.lines = append(set.lines, chartLine{
					name:   fc.combo.format + " " + fc.combo.version + " " + v.name, // short: the legend is narrow
					style:  ci/len(transports)*len(fetchVariants) + vi,              // the same for a row in both transports' charts
					points: points[ci][vi],
				})
			}
		}
		links, err := writeCharts(cfg, set)
		if err != nil {
			return "", err
		}
		md.WriteString(links)
	}
	return md.String(), nil
}

// fetchTrial runs n fetches of one variant in a fresh copy of the cell's
// clone, then checks the remote-tracking refs.
func fetchTrial(r *runner, cfg config, fc fetchCell, v fetchVariant, n int, dir string) (res fetchResult, err error) {
	if err := fc.fx.freshClone(fc.transport.name, dir); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	argv := v.argv(cfg, fc.combo)
	argvs := make([][]string, n)
	for i := range argvs {
		argvs[i] = argv
	}
	outcomes, wall, err := r.concurrent(dir, argvs)
	if err != nil {
		return res, err
	}
	res.wall = wall
	for _, o := range outcomes {
		res.cpu += o.targetCPU()
		res.gateCPU += o.gateCPU
		if o.err == nil {
			res.ok++
			continue
		}
		res.failed++
		c, line := classify(o.stderr, o.err.Error())
		res.classes[c]++
		if res.firstErr == "" {
			res.firstErr = line
		}
		if c == classOther && res.other == "" {
			res.other = line
		}
	}
	res.mismatch, err = fc.fx.mismatches(r, dir)
	return res, err
}

// firstFailure is the deciding line of the first failed fetch in the
// trials, or empty when none failed.
func firstFailure(trials []fetchResult) string {
	for _, t := range trials {
		if t.firstErr != "" {
			return t.firstErr
		}
	}
	return ""
}

// classCounts formats the nonzero class counts of failed fetches.
func classCounts(classes [numClasses]int) string {
	var parts []string
	for c, k := range classes {
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", failureClasses[c].name, k))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// renderFetch writes the table, the ratios and the first failures for
// one fetch count, and returns the summaries by cell and variant (nil
// for skipped cells).
func renderFetch(b *strings.Builder, n int, cells []fetchCell, results [][][]fetchResult) [][]*variantSummary {
	fmt.Fprintf(b, "### %d concurrent fetches\n\n", n)
	b.WriteString("| transport | refs, git | variant | successes min / median | all succeeded | median wall (s) | median CPU (s) | CPU per fetch (ms) | mismatches (total) |")
	for _, class := range failureClasses {
		fmt.Fprintf(b, " %s |", class.name)
	}
	b.WriteString("\n|---|---|---|--:|---|--:|--:|--:|--:|" + strings.Repeat("--:|", int(numClasses)) + "\n")
	sums := make([][]*variantSummary, len(cells))
	var ratios, failures []string
	for ci, fc := range cells {
		sums[ci] = make([]*variantSummary, len(fetchVariants))
		if fc.fx == nil {
			fmt.Fprintf(b, "| %s | %s | all | skipped: %s |%s\n", fc.transport.label, fc.combo.label, cell(fc.combo.skip),
				strings.Repeat(" |", 5+int(numClasses)))
			continue
		}
		trials := make([][]trialResult, len(fetchVariants))
		for vi, v := range fetchVariants {
			rs := results[ci][vi]
			var classes [numClasses]int
			other := ""
			for _, res := range rs {
				trials[vi] = append(trials[vi], res.trialResult)
				for c, k := range res.classes {
					classes[c] += k
				}
				if other == "" {
					other = res.other
				}
			}
			s := summarize(trials[vi], n)
			sums[ci][vi] = &s
			fmt.Fprintf(b, "| %s | %s | %s | %d / %s | %d/%d in %d of %d trials | %s | %s | %s | %d |",
				fc.transport.label, fc.combo.label, v.name, s.minOK, s.medianOK, n, n, s.fullTrials, len(rs),
				seconds(s.medianWall), seconds(s.medianCPU), millis(s.medianCPU/time.Duration(n)), s.mismatch)
			for _, k := range classes {
				fmt.Fprintf(b, " %d |", k)
			}
			b.WriteString("\n")
			if first := firstFailure(rs); first != "" {
				line := fmt.Sprintf("- %s, %s, %s: `%s`", fc.transport.label, fc.combo.label, v.name, strings.ReplaceAll(first, "`", "'"))
				if other != "" && other != first {
					line += "; first classed *other*: `" + strings.ReplaceAll(other, "`", "'") + "`"
				}
				failures = append(failures, line)
			}
		}
		gitSum, rrSum := sums[ci][fetchGit], sums[ci][fetchRefretry]
		note := cautionNote(n, "fetches", namedTrials{fetchVariants[fetchRefretry].name, trials[fetchRefretry]},
			namedTrials{fetchVariants[fetchGit].name, trials[fetchGit]})
		ratios = append(ratios, fmt.Sprintf("| %s | %s | **%s** | **%s** | %s |", fc.transport.label, fc.combo.label,
			ratio(rrSum.medianWall, gitSum.medianWall), ratio(rrSum.medianCPU, gitSum.medianCPU), note))
	}
	if len(ratios) > 0 {
		b.WriteString("\n| transport | refs, git | refretry ÷ git, wall | CPU | note |\n|---|---|--:|--:|---|\n")
		b.WriteString(strings.Join(ratios, "\n") + "\n\n")
		b.WriteString("Ratios of medians. They compare equal work only when both sides had every fetch succeed in every trial; the note says when not.\n\n")
	} else {
		b.WriteString("\n")
	}
	if len(failures) > 0 {
		b.WriteString("Deciding line of the first failed fetch, by row:\n\n" + strings.Join(failures, "\n") + "\n\n")
	}
	return sums
}
