package harness

import (
	"fmt"
	"os"
)

// TB is the part of testing.TB the harness uses, so benchmarks outside `go
// test` (flyfs bench) can run clusters too.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// BenchTB is a TB for benchmarks run outside `go test`: Fatal panics with a
// *BenchFatal that Guard turns into an error, and Cleanup runs at Close.
type BenchTB struct {
	dir      string
	n        int
	cleanups []func()
}

// BenchFatal is what BenchTB.Fatal panics with.
type BenchFatal struct{ Msg string }

func (f *BenchFatal) Error() string { return f.Msg }

// NewBenchTB returns a BenchTB whose temporary directories live under dir.
func NewBenchTB(dir string) *BenchTB { return &BenchTB{dir: dir} }

func (b *BenchTB) Helper() {}

func (b *BenchTB) TempDir() string {
	b.n++
	d := fmt.Sprintf("%s/t%d", b.dir, b.n)
	os.MkdirAll(d, 0o755)
	return d
}

func (b *BenchTB) Cleanup(f func())             { b.cleanups = append(b.cleanups, f) }
func (b *BenchTB) Fatal(args ...any)            { panic(&BenchFatal{fmt.Sprint(args...)}) }
func (b *BenchTB) Fatalf(f string, args ...any) { panic(&BenchFatal{fmt.Sprintf(f, args...)}) }

// Close runs the cleanups, newest first.
func (b *BenchTB) Close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

// Guard turns a BenchFatal panic into *err; use as `defer harness.Guard(&err)`.
func Guard(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(*BenchFatal)
		if !ok {
			panic(r)
		}
		*err = f
	}
}
