package bench

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4k": 4096, "4KiB": 4096, "4KB": 4096, "1m": 1 << 20, "1MiB": 1 << 20,
		"2g": 2 << 30, " 3 GiB": 3 << 30, "1t": 1 << 40, "0": 0, "7b": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "-1", "1.5m", "12x", "99999999999t"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for n, want := range map[int64]string{4096: "4KiB", 1 << 20: "1MiB", 3 << 30: "3GiB", 1000: "1000", 0: "0"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
