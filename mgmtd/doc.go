// Package mgmtd is the cluster manager: membership and heartbeats as leases,
// chain tables, target states, routing info pushed to everyone, and primary
// election among several mgmtd. Built by the cluster-manager issue.
package mgmtd
