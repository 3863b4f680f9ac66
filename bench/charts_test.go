package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChartSVG checks that a chart is well-formed XML with one polyline
// per series, each holding one coordinate pair per point.
func TestChartSVG(t *testing.T) {
	c := lineChart{
		title:  `wall <time> & "quotes"`,
		xLabel: "writers",
		yLabel: "seconds",
		series: []series{
			{name: "git-files", points: []chartPoint{{300, 0.3}, {150, 0.15}, {600, 0.7}}},
			{name: "flock", points: []chartPoint{{150, 1.2}, {300, 2.5}, {600, 5.1}}},
			{name: "a<b>&c", points: []chartPoint{{150, 0}}},
		},
	}
	var buf bytes.Buffer
	if err := c.writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var polylines []string
	var seriesNames []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = el.Name.Local
		}
		switch el.Name.Local {
		case "polyline":
			polylines = append(polylines, attr(el, "points"))
		case "g":
			if attr(el, "class") == "series" {
				seriesNames = append(seriesNames, attr(el, "data-name"))
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	if len(polylines) != len(c.series) {
		t.Fatalf("%d polylines, want %d", len(polylines), len(c.series))
	}
	for i, s := range c.series {
		if seriesNames[i] != s.name {
			t.Errorf("series %d named %q, want %q", i, seriesNames[i], s.name)
		}
		pairs := strings.Fields(polylines[i])
		if len(pairs) != len(s.points) {
			t.Errorf("series %s: %d points, want %d", s.name, len(pairs), len(s.points))
		}
		for _, p := range pairs {
			if strings.Count(p, ",") != 1 {
				t.Errorf("series %s: point %q is not x,y", s.name, p)
			}
		}
	}
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		hi       float64
		top      float64
		nTicks   int
		decimals int
	}{
		{600, 600, 4, 0},
		{40, 40, 5, 0},
		{0.61, 0.8, 5, 1},
		{100, 100, 6, 0},
		{0, 1, 6, 1},
	}
	for _, c := range cases {
		ticks, top := niceTicks(c.hi)
		if top != ticks[len(ticks)-1] || len(ticks) != c.nTicks || top < c.hi || top-c.top > 1e-9 || c.top-top > 1e-9 {
			t.Errorf("niceTicks(%v) = %v, %v; want %d ticks up to %v", c.hi, ticks, top, c.nTicks, c.top)
		}
		if d := tickDecimals(ticks); d != c.decimals {
			t.Errorf("tickDecimals(%v) = %d, want %d", ticks, d, c.decimals)
		}
	}
}

// TestWriteCharts checks that a chart set becomes three files, linked from
// the markdown, with a line for each variant that has points.
func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	cfg := config{charts: dir, trials: 3, out: filepath.Join(dir, "report.md")}
	set := chartSet{file: "fetch-file", procs: "fetchers over file://", xs: []int{16, 32}, lines: []chartLine{
		{name: "git", style: 0, points: []variantPoint{{time.Second, 2 * time.Second, 6.25}, {2 * time.Second, 4 * time.Second, 3.125}}},
		{name: "skipped", style: 1},
		{name: "refretry", style: 2, points: []variantPoint{{time.Second, time.Second, 100}, {time.Second, time.Second, 100}}},
	}}
	md, err := writeCharts(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wall.svg", "-success.svg", "-cpu.svg"} {
		name := "fetch-file" + suffix
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "<polyline"); n != 2 {
			t.Errorf("%s: %d lines, want 2", name, n)
		}
		if !strings.Contains(md, "]("+name+")") {
			t.Errorf("markdown does not link %s:\n%s", name, md)
		}
	}
}
