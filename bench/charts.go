package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// chartPoint is one measured value.
type chartPoint struct{ x, y float64 }

// series is one line of a chart.
type series struct {
	name   string
	note   string // shown after the name in the legend, may be empty
	style  int    // picks colour and dashes, so a variant looks the same in every chart and run
	points []chartPoint
}

// lineChart is a line chart with linear axes that both start at zero.
type lineChart struct {
	title, xLabel, yLabel string
	yMax                  float64 // fixed top of the y axis; 0 means from the data
	yUnit                 string  // appended to values in the tooltips
	series                []series
}

// Geometry of every chart, in SVG user units.
const (
	chartWidth   = 880
	chartHeight  = 440
	plotLeft     = 70
	plotTop      = 44
	plotRight    = 560 // the legend sits to the right of this
	plotBottom   = 380
	legendLeft   = 585
	legendRowGap = 20
)

// Line colours (a palette readable by most colour-blind readers) and dash
// patterns; the pattern changes after each pass through the colours, and
// every other series is dashed, so lines drawn over each other stay
// distinguishable by their markers and dashes.
var (
	chartColors = []string{"#1b6ca8", "#d1495b", "#2a9d8f", "#e69f00", "#6a4c93", "#7f7f7f", "#8c564b", "#00a6d6", "#e377c2", "#bcbd22", "#17becf"}
	chartDashes = []string{"", "7 4", "2 3", "10 3 2 3"}
)

// writeSVG renders the chart as a standalone SVG document.
func (c lineChart) writeSVG(w io.Writer) error {
	var b bytes.Buffer
	xMax, yMax := 0.0, c.yMax
	for _, s := range c.series {
		for _, p := range s.points {
			xMax = max(xMax, p.x)
			if c.yMax == 0 {
				yMax = max(yMax, p.y)
			}
		}
	}
	xTicks, xTop := niceTicks(xMax)
	yTicks, yTop := niceTicks(yMax)
	if c.yMax > 0 {
		yTop = c.yMax
		yTicks = slices.DeleteFunc(yTicks, func(v float64) bool { return v > yTop })
	}
	px := func(x float64) float64 { return plotLeft + x/xTop*(plotRight-plotLeft) }
	py := func(y float64) float64 { return plotBottom - y/yTop*(plotBottom-plotTop) }

	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, chartHeight)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, esc(c.title))

	// Grid, ticks and tick labels.
	b.WriteString(`<g class="axes" stroke="#000000" stroke-width="1">` + "\n")
	xDec, yDec := tickDecimals(xTicks), tickDecimals(yTicks)
	for _, v := range xTicks {
		x := px(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>`+"\n", x, plotTop, x, plotBottom)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x, plotBottom, x, plotBottom+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" stroke="none">%s</text>`+"\n", x, plotBottom+19, formatTick(v, xDec))
	}
	for _, v := range yTicks {
		y := py(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", plotLeft, y, plotRight, y)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotLeft-5, y, plotLeft, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" stroke="none">%s</text>`+"\n", plotLeft-8, y+4, formatTick(v, yDec))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotLeft, plotBottom, plotRight, plotBottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotLeft, plotTop, plotLeft, plotBottom)
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+45, esc(c.xLabel))
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>`+"\n",
		(plotTop+plotBottom)/2, (plotTop+plotBottom)/2, esc(c.yLabel))

	// One polyline per series, markers on the measured points, and a
	// legend row.
	for i, s := range c.series {
		color := chartColors[s.style%len(chartColors)]
		dash := chartDashes[(s.style/len(chartColors)+s.style%2)%len(chartDashes)]
		pts := slices.SortedFunc(slices.Values(s.points), func(a, b chartPoint) int { return cmp.Compare(a.x, b.x) })
		coords := make([]string, len(pts))
		for k, p := range pts {
			coords[k] = fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y))
		}
		fmt.Fprintf(&b, `<g class="series" data-name="%s">`+"\n", esc(s.name))
		dashAttr := ""
		if dash != "" {
			dashAttr = ` stroke-dasharray="` + dash + `"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dashAttr, strings.Join(coords, " "))
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%d" fill="%s"><title>%s: %s at %s</title></circle>`+"\n",
				px(p.x), py(p.y), 3+s.style%2, color, esc(s.name), esc(formatValue(p.y)+c.yUnit), formatValue(p.x))
		}
		ly := plotTop + 6 + i*legendRowGap
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
			legendLeft, ly, legendLeft+28, ly, color, dashAttr)
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d" fill="%s"/>`+"\n", legendLeft+14, ly, 3+s.style%2, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s`, legendLeft+36, ly+4, esc(s.name))
		if s.note != "" {
			fmt.Fprintf(&b, ` <tspan fill="#666666">%s</tspan>`, esc(s.note))
		}
		b.WriteString("</text>\n")
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// niceTicks returns ticks from 0 to at least hi in steps of 1, 2 or 5
// times a power of ten, about five of them, and the last tick.
func niceTicks(hi float64) ([]float64, float64) {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	raw := hi / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * pow
	for _, m := range []float64{1, 2, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	n := int(math.Ceil(hi/step - 1e-9))
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks, ticks[n]
}

// tickDecimals is how many decimals tell the ticks apart.
func tickDecimals(ticks []float64) int {
	if len(ticks) < 2 {
		return 0
	}
	return max(0, int(math.Ceil(-math.Log10(ticks[1]-ticks[0])-1e-9)))
}

func formatTick(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// esc escapes text for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// chartKinds are the three charts every phase with N processes draws,
// by file-name suffix, and what each shows.
var chartKinds = []struct{ suffix, alt string }{
	{"-wall.svg", "median wall time against %s"},
	{"-success.svg", "median successes against %s"},
	{"-cpu.svg", "median CPU time against %s"},
}

// chartLine is one line of a phase's charts: a variant's medians, one per
// process count of chartSet.xs, in that order.
type chartLine struct {
	name   string
	style  int // keeps a variant's colour and dashes whichever subset ran
	points []variantPoint
}

// chartSet is the wall, success and CPU charts of one phase (or of one
// part of it), each plotting N against a median.
type chartSet struct {
	file  string // file names are file + a chartKinds suffix
	procs string // what the N processes are, plural: "writers", "fetchers over file://"
	xs    []int  // the process counts measured
	lines []chartLine
}

// writeCharts writes the charts of set into cfg.charts and returns the
// markdown that shows them. Lines without points (skipped variants) are
// left out.
func writeCharts(cfg config, set chartSet) (string, error) {
	if err := os.MkdirAll(cfg.charts, 0o755); err != nil {
		return "", err
	}
	line := func(y func(variantPoint) float64) []series {
		var out []series
		for _, l := range set.lines {
			if len(l.points) == 0 {
				continue
			}
			s := series{name: l.name, style: l.style}
			for k, p := range l.points {
				s.points = append(s.points, chartPoint{float64(set.xs[k]), y(p)})
			}
			out = append(out, s)
		}
		return out
	}
	// Lines at 100 % lie on each other, so the legend says which ones do.
	success := line(func(p variantPoint) float64 { return p.okPercent })
	for i, s := range success {
		low := slices.MinFunc(s.points, func(a, b chartPoint) int { return cmp.Compare(a.y, b.y) })
		if low.y == 100 {
			success[i].note = "100 % at every N"
		} else {
			success[i].note = fmt.Sprintf("lowest %.0f %% (N=%s)", low.y, formatValue(low.x))
		}
	}
	title := fmt.Sprintf("%d trials per point, medians", cfg.trials)
	xLabel := "concurrent " + set.procs + " (N)"
	charts := []lineChart{
		{title: "Wall time, N concurrent " + set.procs + " (" + title + ")", xLabel: xLabel,
			yLabel: "median wall time (s)", yUnit: " s", series: line(func(p variantPoint) float64 { return p.wall.Seconds() })},
		{title: "Processes that succeeded, N concurrent " + set.procs + " (" + title + ")", xLabel: xLabel,
			yLabel: "median successes (% of N)", yMax: 100, yUnit: " %", series: success},
		{title: "CPU time of all " + set.procs + " (" + title + ")", xLabel: xLabel,
			yLabel: "median CPU, user+system (s)", yUnit: " s", series: line(func(p variantPoint) float64 { return p.cpu.Seconds() })},
	}
	var md strings.Builder
	for i, c := range charts {
		path := filepath.Join(cfg.charts, set.file+chartKinds[i].suffix)
		var buf bytes.Buffer
		if err := c.writeSVG(&buf); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return "", err
		}
		progress("wrote %s", path)
		fmt.Fprintf(&md, "![%s](%s)\n\n", fmt.Sprintf(chartKinds[i].alt, set.procs), chartLink(cfg, path))
	}
	return md.String(), nil
}

// chartLink is the chart's path relative to the report file (or to the
// working directory when the report only goes to standard output).
func chartLink(cfg config, path string) string {
	base := "."
	if cfg.out != "" {
		base = filepath.Dir(cfg.out)
	}
	absBase, err1 := filepath.Abs(base)
	absPath, err2 := filepath.Abs(path)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(absBase, absPath); err == nil {
			path = rel
		}
	}
	link := filepath.ToSlash(path)
	if strings.ContainsAny(link, " ()<>") {
		link = "<" + link + ">"
	}
	return link
}
