// Package clientbench tests and measures core/client's data path over a real
// in-process cluster: the adaptive in-flight window, hedged reads, batched
// small reads, reads racing writes, and a throughput benchmark (run with
// FLYFS_BENCH=1).
package clientbench
