// Package storaged is the storage service: the per-disk chunk engine and CRAQ
// replication along chains, and recovery of a returning target. Built by the
// chunk-storage issue.
package storaged
