package main

import "testing"

func TestParseCacheMem(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0"},
		{in: ""},
		{in: "512MiB", want: 512 << 20},
		{in: "4GiB", want: 4 << 30},
		{in: "1G", want: 1e9},
		{in: "lots", bad: true},
		{in: "-1GiB", bad: true},
		{in: "2PiB", bad: true},
	} {
		got, err := parseCacheMem(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseCacheMem(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
