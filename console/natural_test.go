package console

import (
	"slices"
	"testing"
)

func TestNaturalLess(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"numbers by value", []string{"part-10", "part-2", "part-1"}, []string{"part-1", "part-2", "part-10"}},
		{"leading zeros after the same value", []string{"a01", "a1", "a001", "a2"}, []string{"a1", "a01", "a001", "a2"}},
		{"text by bytes", []string{"b", "B", "a"}, []string{"B", "a", "b"}},
		{"a prefix first", []string{"file10.txt", "file1", "file1.txt"}, []string{"file1", "file1.txt", "file10.txt"}},
		{"several runs", []string{"v1.10.0", "v1.9.3", "v1.9.10"}, []string{"v1.9.3", "v1.9.10", "v1.10.0"}},
		{"long numbers", []string{"x123456789012345678901", "x99"}, []string{"x99", "x123456789012345678901"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Clone(tc.in)
			slices.SortFunc(got, func(a, b string) int {
				switch {
				case naturalLess(a, b):
					return -1
				case naturalLess(b, a):
					return 1
				}
				return 0
			})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
