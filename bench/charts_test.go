package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
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
