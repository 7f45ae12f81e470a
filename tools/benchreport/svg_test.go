package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what the tests read back from a chart: every element with its
// attributes and text, in document order.
type svgElem struct {
	Name  string
	Attr  map[string]string
	Text  string
	Depth int
}

func parseSVG(t *testing.T, b []byte) []svgElem {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out []svgElem
	var stack []int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			e := svgElem{Name: v.Name.Local, Attr: map[string]string{}, Depth: len(stack)}
			for _, a := range v.Attr {
				e.Attr[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				out[stack[len(stack)-1]].Text += string(v)
			}
		}
	}
	if len(out) == 0 || out[0].Name != "svg" {
		t.Fatalf("the root element is not <svg>")
	}
	return out
}

func texts(es []svgElem) []string {
	var out []string
	for _, e := range es {
		if e.Name == "text" {
			out = append(out, strings.TrimSpace(e.Text))
		}
	}
	return out
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func points(t *testing.T, attr string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(attr) {
		xs, ys, ok := strings.Cut(p, ",")
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad point %q", p)
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestChartSVG(t *testing.T) {
	c := Chart{Title: "FUSE read <vs> threads", XLabel: "threads", YLabel: "MiB/s", Log2X: true, Series: []Series{
		{Name: "flyfs & co", X: []float64{1, 2, 4, 8, 16}, Y: []float64{100, 180, 300, 420, 455}},
		// Out of x order on purpose: the line must still go left to right.
		{Name: "loopback", X: []float64{16, 1, 4}, Y: []float64{900, 300, 700}, Dashed: true, Color: "#D55E00"},
	}}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	es := parseSVG(t, b)
	ts := texts(es)
	for _, want := range []string{"FUSE read <vs> threads", "threads", "MiB/s", "flyfs & co", "loopback", "1", "2", "4", "8", "16", "0"} {
		if !has(ts, want) {
			t.Errorf("no text %q in the chart; texts: %q", want, ts)
		}
	}
	// y ticks: 0 up to at least the highest value, in equal steps.
	var yt []float64
	for _, e := range es {
		if e.Name == "text" && e.Attr["text-anchor"] == "end" {
			v, err := strconv.ParseFloat(strings.TrimSpace(e.Text), 64)
			if err != nil {
				t.Fatalf("y tick %q: %v", e.Text, err)
			}
			yt = append(yt, v)
		}
	}
	if len(yt) < 3 || yt[0] != 0 || yt[len(yt)-1] < 900 {
		t.Errorf("y ticks %v: want 0 .. >= 900", yt)
	}
	for i := 2; i < len(yt); i++ {
		if math.Abs((yt[i]-yt[i-1])-(yt[1]-yt[0])) > 1e-9 {
			t.Errorf("y ticks %v are not evenly spaced", yt)
		}
	}

	var lines []svgElem
	for _, e := range es {
		if e.Name == "polyline" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d polylines, want one per series", len(lines))
	}
	if lines[1].Attr["stroke-dasharray"] == "" || lines[0].Attr["stroke-dasharray"] != "" {
		t.Errorf("only the dashed series should be dashed: %v / %v", lines[0].Attr, lines[1].Attr)
	}
	if lines[1].Attr["stroke"] != "#D55E00" {
		t.Errorf("series colour %q, want the one asked for", lines[1].Attr["stroke"])
	}
	p0, p1 := points(t, lines[0].Attr["points"]), points(t, lines[1].Attr["points"])
	if len(p0) != 5 || len(p1) != 3 {
		t.Fatalf("points: %d and %d", len(p0), len(p1))
	}
	// Log2 x: 1, 2, 4, 8, 16 are evenly spaced; higher values are higher
	// up (smaller y); everything is inside the frame.
	step := p0[1][0] - p0[0][0]
	for i := 1; i < len(p0); i++ {
		if d := p0[i][0] - p0[i-1][0]; math.Abs(d-step) > 0.2 || d <= 0 {
			t.Errorf("x positions %v are not evenly spaced on the log axis", p0)
		}
		if p0[i][1] >= p0[i-1][1] {
			t.Errorf("rising values should rise on the chart: %v", p0)
		}
	}
	if p1[0][0] != p0[0][0] || p1[2][0] != p0[4][0] || p1[1][0] != p0[2][0] {
		t.Errorf("the second series is not drawn in x order at the shared x positions: %v vs %v", p1, p0)
	}
	var frame svgElem
	for _, e := range es {
		if e.Name == "rect" && e.Attr["fill"] == "none" {
			frame = e
		}
	}
	fx, _ := strconv.ParseFloat(frame.Attr["x"], 64)
	fy, _ := strconv.ParseFloat(frame.Attr["y"], 64)
	fw, _ := strconv.ParseFloat(frame.Attr["width"], 64)
	fh, _ := strconv.ParseFloat(frame.Attr["height"], 64)
	if fw == 0 || fh == 0 {
		t.Fatal("no plot frame")
	}
	for _, p := range append(p0, p1...) {
		if p[0] < fx || p[0] > fx+fw || p[1] < fy || p[1] > fy+fh {
			t.Errorf("point %v outside the frame %v,%v %vx%v", p, fx, fy, fw, fh)
		}
	}
	// The highest point (900) is near the top, not clipped and not tiny.
	if top := p1[2][1]; top > fy+fh/3 {
		t.Errorf("the highest point is at y=%v, low in a frame from %v to %v", top, fy, fy+fh)
	}
}

func TestChartLinearAndFlat(t *testing.T) {
	// A linear x axis, and all-zero values (a failed target): still a chart.
	c := Chart{Title: "t", XLabel: "x", YLabel: "y", Series: []Series{{Name: "zero", X: []float64{0, 5, 10}, Y: []float64{0, 0, 0}}}}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	ts := texts(parseSVG(t, b))
	for _, want := range []string{"0", "10"} {
		if !has(ts, want) {
			t.Errorf("no tick %q: %q", want, ts)
		}
	}
	// One point only.
	c = Chart{Title: "t", Log2X: true, Series: []Series{{Name: "one", X: []float64{4}, Y: []float64{3.5}}}}
	if _, err := c.SVG(); err != nil {
		t.Fatal(err)
	}
}

func TestChartErrors(t *testing.T) {
	for name, c := range map[string]Chart{
		"no series":    {},
		"empty series": {Series: []Series{{Name: "a"}}},
		"x/y mismatch": {Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}},
		"NaN":          {Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{math.NaN()}}}},
		"Inf":          {Series: []Series{{Name: "a", X: []float64{math.Inf(1)}, Y: []float64{1}}}},
		"x=0 on log":   {Log2X: true, Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{1, 1}}}},
		"negative y":   {Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{-1}}}},
		"too small":    {Width: 200, Height: 100, Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1}}}},
	} {
		if _, err := c.SVG(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNiceStepAndTicks(t *testing.T) {
	for _, c := range []struct {
		span float64
		n    int
		want float64
	}{{100, 5, 20}, {7, 5, 2}, {0.3, 5, 0.1}, {1234, 5, 500}, {10, 5, 2}, {0, 5, 1}} {
		if got := niceStep(c.span, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("niceStep(%v, %d) = %v, want %v", c.span, c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		v, step float64
		want    string
	}{{0.5, 0.1, "0.5"}, {20, 5, "20"}, {0.25, 0.05, "0.25"}, {0.30000000000000004, 0.1, "0.3"}, {1500, 500, "1500"}} {
		if got := fmtTick(c.v, c.step); got != c.want {
			t.Errorf("fmtTick(%v, %v) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}
