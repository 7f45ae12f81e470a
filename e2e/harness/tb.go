package harness

// TB is the part of testing.TB the harness uses, so benchmarks outside `go
// test` (flyfs bench) can run clusters too.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
