// Package mgmtd is the cluster manager: membership and heartbeats as leases,
// chain tables and target states, routing information served to everyone, and
// primary election among several mgmtd sharing one KV store.
//
// Invariants:
//
//   - At most one mgmtd acts as primary: the holder of the lease record in the
//     KV store (lease.go), and only while its lease has a safety margin left.
//   - Every write a primary makes re-reads the lease in the same transaction
//     and aborts unless this process still holds it in the same term, so a
//     deposed primary cannot change anything (write.go).
//   - Every write that changes routing (chains, nodes) bumps the routing
//     version in the same transaction; the version never goes backwards, and
//     every write checks that the routing it changed is still the newest, so
//     in-memory copies are never written back stale.
//   - A new primary reloads everything from the KV store, resets every node's
//     liveness clock, and for the bootstrapping window declares nobody failed
//     and tells readers so (GetRouting's Bootstrapping).
//
// Files: server.go (wiring and loops), config.go, store.go (key schema and
// encodings), lease.go (election), write.go (lease-checked writes),
// term.go (the primary's in-memory view: liveness and reported states),
// heartbeat.go, scan.go (failure detection and chain updates), routing.go
// (GetRouting and the routing cache), admin.go (SetChains, SetTargetHeld,
// ListNodes, GetPrimary).
package mgmtd
