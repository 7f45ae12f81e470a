package client

import "testing"

// Each row is a sequence of reads; the fetch asked for by the last one,
// and whether it was part of the stream, are checked.
func TestAheadWindow(t *testing.T) {
	const B = aheadBlock
	type read struct{ off, n uint64 }
	for _, tc := range []struct {
		name     string
		size     uint64
		reads    []read
		from, to uint64
		inStream bool
	}{
		{"a first read only starts watching", 64 * B, []read{{0, B}}, 0, 0, false},
		{"the second sequential read fetches two blocks past the front", 64 * B, []read{{0, B}, {B, B}}, 1, 4, true},
		{"the window doubles: what was asked is not asked again", 64 * B, []read{{0, B}, {B, B}, {2 * B, B}}, 4, 7, true},
		{"it stops at the file's end", 5 * B, []read{{0, B}, {B, B}, {2 * B, B}}, 4, 5, true},
		{"small sequential reads grow the window too, and ask only for what is new", 64 * B, []read{{0, 4096}, {4096, 4096}, {8192, 4096}}, 3, 5, true},
		{"kernel read-ahead arriving out of order stays in the stream", 64 * B, []read{{0, B}, {2 * B, B}, {B, B}}, 5, 7, true},
		{"a jump far ahead starts a new stream", 64 * B, []read{{0, B}, {B, B}, {40 * B, B}}, 0, 0, false},
		{"random reads near each other are no stream", 64 * B, []read{{10 * B, 4096}, {11 * B, 4096}, {12*B + 5000, 4096}}, 0, 0, false},
		{"a jump back starts a new stream", 64 * B, []read{{0, B}, {B, B}, {2 * B, B}, {3 * B, B}, {4 * B, B}, {5 * B, B}, {6 * B, B}, {7 * B, B}, {8 * B, B}, {9 * B, B}, {10 * B, B}, {11 * B, B}, {12 * B, B}, {13 * B, B}, {14 * B, B}, {15 * B, B}, {16 * B, B}, {17 * B, B}, {18 * B, B}, {19 * B, B}, {20 * B, B}, {0, B}}, 0, 0, false},
		{"at its cap the window moves a block per block read", 1024 * B, []read{{0, B}, {B, B}, {2 * B, B}, {3 * B, B}, {4 * B, B}, {5 * B, B}, {6 * B, B}}, 22, 23, true},
	} {
		var w aheadWindow
		var from, to uint64
		var in bool
		for _, r := range tc.reads {
			from, to, in = w.observe(r.off, r.n, tc.size)
		}
		if from != tc.from || to != tc.to || in != tc.inStream {
			t.Errorf("%s: fetch [%d, %d), in stream %v; want [%d, %d), %v", tc.name, from, to, in, tc.from, tc.to, tc.inStream)
		}
	}
}
