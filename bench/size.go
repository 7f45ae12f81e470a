package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a byte count flag that takes 4096, 4k, 4KiB, 1m, 1MiB, 2g, 2GiB
// (K, M, G, T are powers of 1024, as in dd and fio).
type Size int64

// ParseSize reads a byte count.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 || (v > 0 && mult > (1<<62)/v) {
		return 0, fmt.Errorf("bad size %q: want a byte count like 4096, 4k, 1MiB or 2g", s)
	}
	return v * mult, nil
}

// String prints the size in the largest unit that divides it.
func (s Size) String() string { return FormatSize(int64(s)) }

// Set implements pflag.Value.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// Type implements pflag.Value.
func (s *Size) Type() string { return "size" }

// FormatSize prints a byte count in the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}
