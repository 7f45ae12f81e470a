// Package storaged is the storage service: a chunk engine per disk
// (storaged/engine), CRAQ replication along chains (the write path in
// write.go, a client's update relayed to the head in relay.go, reads in
// read.go), recovery of a returning target (resync.go), repair of corrupt
// replicas and the scrub. The version rules, the recovery plan and the
// forward-retry decisions are pure functions in storaged/craq.
package storaged
