package main

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool   // for reference lines (ceilings, baselines)
	Color  string // empty: the palette's next colour
}

// Chart is a line chart of a few series over a shared x axis, rendered as a
// self-contained SVG (no scripts, no external fonts or styles) so it shows
// the same on GitHub, in a browser and in image converters.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	// Log2X spaces the x axis by log2 (1, 2, 4, 8, 16 evenly) and puts a
	// tick at every x value of the data.
	Log2X  bool
	Series []Series
	Width  int // default 800
	Height int // default 440
}

// The palette is colour-blind friendly (Okabe–Ito) and readable on white.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

const (
	marginLeft   = 78
	marginRight  = 230 // room for the legend
	marginTop    = 48
	marginBottom = 62
)

func (c *Chart) check() error {
	if len(c.Series) == 0 {
		return errors.New("chart: no series")
	}
	for _, s := range c.Series {
		if len(s.X) == 0 || len(s.X) != len(s.Y) {
			return fmt.Errorf("chart: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			if !finite(s.X[i]) || !finite(s.Y[i]) {
				return fmt.Errorf("chart: series %q has a non-finite point", s.Name)
			}
			if c.Log2X && s.X[i] <= 0 {
				return fmt.Errorf("chart: series %q: x=%v on a log axis", s.Name, s.X[i])
			}
			if s.Y[i] < 0 {
				return fmt.Errorf("chart: series %q: negative y %v", s.Name, s.Y[i])
			}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// niceStep picks a tick step of 1, 2 or 5 times a power of ten giving about
// n intervals over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	default:
		return 10 * p
	}
}

// fmtTick prints a tick value without float noise.
func fmtTick(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// SVG renders the chart.
func (c *Chart) SVG() ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	W, H := c.Width, c.Height
	if W == 0 {
		W = 800
	}
	if H == 0 {
		H = 440
	}
	pw, ph := float64(W-marginLeft-marginRight), float64(H-marginTop-marginBottom)
	if pw < 100 || ph < 100 {
		return nil, fmt.Errorf("chart: %dx%d is too small", W, H)
	}

	// Axes' ranges. y starts at 0: throughput charts that do not start at 0
	// exaggerate differences.
	var xs []float64
	maxY := 0.0
	for _, s := range c.Series {
		xs = append(xs, s.X...)
		maxY = max(maxY, slices.Max(s.Y))
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	xt := func(v float64) float64 { return v }
	if c.Log2X {
		xt = math.Log2
	}
	x0, x1 := xt(xs[0]), xt(xs[len(xs)-1])
	var xticks []float64
	xstep := 1.0
	if c.Log2X {
		xticks = xs
	} else {
		xstep = niceStep(xs[len(xs)-1]-xs[0], 6)
		x0, x1 = math.Floor(xs[0]/xstep)*xstep, math.Ceil(xs[len(xs)-1]/xstep)*xstep
		for v := x0; v <= x1+xstep/2; v += xstep {
			xticks = append(xticks, v)
		}
	}
	if c.Log2X {
		// Keep the first and last points off the frame.
		x0, x1 = x0-0.3, x1+0.3
	}
	if x1 == x0 { // one x value: centre it
		x0, x1 = x0-1, x1+1
	}
	ystep := niceStep(maxY, 5)
	y1 := math.Ceil(maxY/ystep) * ystep
	if y1 == 0 {
		y1 = ystep
	}
	if maxY > y1*0.97 { // keep the top point off the frame
		y1 += ystep
	}
	px := func(v float64) float64 { return marginLeft + (xt(v)-x0)/(x1-x0)*pw }
	py := func(v float64) float64 { return marginTop + ph - v/y1*ph }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="26" font-size="16" font-weight="bold">%s</text>`+"\n", marginLeft, esc(c.Title))

	// Grid and ticks.
	b.WriteString(`<g stroke="#dddddd" stroke-width="1">` + "\n")
	for v := 0.0; v <= y1+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", float64(marginLeft), py(v), marginLeft+pw, py(v))
	}
	for _, v := range xticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", px(v), float64(marginTop), px(v), marginTop+ph)
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g fill="#333333" font-size="12">` + "\n")
	for v := 0.0; v <= y1+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginLeft-8, py(v)+4, fmtTick(v, ystep))
	}
	for _, v := range xticks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(v), marginTop+ph+18, fmtTick(v, xstep))
	}
	b.WriteString("</g>\n")
	// Frame and axis labels.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#555555"/>`+"\n", marginLeft, marginTop, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginLeft+pw/2, H-22, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">%s</text>`+"\n", marginTop+ph/2, marginTop+ph/2, esc(c.YLabel))

	// Lines, points and the legend.
	lx := marginLeft + pw + 20
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		if s.Color != "" {
			col = esc(s.Color)
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="7 5"`
		}
		// Points in x order, so a series given out of order still draws a line.
		idx := make([]int, len(s.X))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(s.X[a], s.X[b]) })
		var pts bytes.Buffer
		for _, j := range idx {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(s.X[j]), py(s.Y[j]))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2.5"%s points="%s"><title>%s</title></polyline>`+"\n",
			col, dash, bytes.TrimSpace(pts.Bytes()), esc(s.Name))
		for _, j := range idx {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s at %s</title></circle>`+"\n",
				px(s.X[j]), py(s.Y[j]), col, esc(s.Name), strconv.FormatFloat(s.Y[j], 'f', 1, 64), strconv.FormatFloat(s.X[j], 'f', -1, 64))
		}
		ly := float64(marginTop) + 10 + float64(i)*24
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", lx, ly, lx+28, ly, col, dash)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", lx+14, ly, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+36, ly+4.5, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func esc(s string) string { return html.EscapeString(s) }
