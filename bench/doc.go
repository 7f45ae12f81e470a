// Package bench holds what every `flyfs bench` workload shares: a runner
// that drives workers through a phase with a progress bar (Run), fixed-time
// and fixed-count drivers (Drive, Spread), latency histograms, and the
// report printed as a table or as JSON.
//
// The benchmarks themselves live below it, one package per subcommand:
//
//	bench/load/files    flyfs bench fs      any mounted path: big files and small files
//	bench/load/objects  flyfs bench s3      any S3 endpoint: PUT, GET, LIST, DELETE
//	bench/load/mdtest   flyfs bench mdtest  any cluster: mdtest-style metadata load
//
//	bench/vs/kvtxn       flyfs bench kv          KV transactions vs raw Pebble batches
//	bench/vs/rpccall     flyfs bench rpc         RPC calls and payloads vs raw TCP
//	bench/vs/chunkengine flyfs bench engine      the chunk engine vs plain file I/O
//	bench/vs/chain       flyfs bench storage     a CRAQ chain of 3 vs one chunk engine
//	bench/vs/recovery    flyfs bench recovery    rebuilding a target vs the write rate
//	bench/vs/metaops     flyfs bench meta        namespace operations vs the local file system
//	bench/vs/fusemount   flyfs bench fuse        the FUSE mount vs a FUSE loopback and the disk
//	bench/vs/s3gateway   flyfs bench s3-gateway  the S3 gateway vs its ceilings
//
// A load package measures whatever target it is given; a vs package runs a
// part of flyfs and its baseline side by side in one run and prints both.
// Go micro-benchmarks stay in _test.go files beside the code they measure.
package bench
