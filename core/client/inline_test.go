package client

import (
	"slices"
	"testing"
)

func TestAddSpan(t *testing.T) {
	for _, tc := range []struct {
		name     string
		have     []span
		off, end uint64
		want     []span
	}{
		{"first", nil, 3, 5, []span{{3, 5}}},
		{"before, apart", []span{{10, 20}}, 0, 5, []span{{0, 5}, {10, 20}}},
		{"after, apart", []span{{10, 20}}, 30, 40, []span{{10, 20}, {30, 40}}},
		{"touching merges", []span{{10, 20}}, 20, 25, []span{{10, 25}}},
		{"inside", []span{{10, 20}}, 12, 13, []span{{10, 20}}},
		{"bridging two", []span{{0, 5}, {10, 20}, {30, 40}}, 4, 11, []span{{0, 20}, {30, 40}}},
		{"covering all", []span{{2, 3}, {5, 6}}, 0, 10, []span{{0, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := addSpan(slices.Clone(tc.have), tc.off, tc.end); !slices.Equal(got, tc.want) {
				t.Fatalf("addSpan(%v, %d, %d) = %v, want %v", tc.have, tc.off, tc.end, got, tc.want)
			}
		})
	}
}
