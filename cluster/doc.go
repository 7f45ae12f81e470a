// Package cluster runs a whole flyfs cluster in one process: cluster
// managers, storage services (one disk directory each), metadata services
// and, when asked, the front ends (S3 gateway, console, FUSE mount). Every
// role is wired exactly as its stand-alone subcommand wires it and talks to
// the others over loopback RPC, so what runs here is what runs in a cluster
// of many machines.
//
// `flyfs server`, the benchmarks that need a cluster, and the tests (through
// e2e/harness, which adds testing.TB and network cuts) all start clusters
// here. Roles can be stopped and started again on their address and data,
// which is how faults are injected in-process.
//
// State layout under Config.Dir:
//
//	meta/      the embedded Pebble store (when Config.KV is not given)
//	disk<N>/   storage node N+1's chunk engine
package cluster
