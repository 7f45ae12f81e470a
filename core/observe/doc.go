// Package observe holds what every flyfs role shares to be observed: a
// Prometheus registry with the Go runtime and process collectors, the
// /metrics endpoint (standard exposition through promhttp), net/http/pprof on
// demand, and the slog.Logger built from --log-level and --log-format.
//
// Metric names follow docs/metrics.md: flyfs_<role>_<what>_<unit>, _total
// for counters, base units. A process serving several roles (flyfs server)
// registers each role's metrics through Role, which labels them role=<name>;
// a role with several instances in one process (storage nodes, cluster
// managers of the in-process cluster) adds a label naming the instance.
package observe
