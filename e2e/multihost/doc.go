// Package multihost runs flyfs as a cluster of real processes on separate
// hosts, and injects faults into it.
//
// Each host is a Linux network namespace with its own 10.x address, joined
// to a bridge by a veth pair; the root namespace has an address on the
// bridge, so the test process is a client like any other. Each service runs
// as its own `flyfs` process in its host's namespace (nsenter --net): a
// three-member etcd (the hidden `flyfs etcd`, etcd's embed package), 2
// mgmtd, 2 metad, 4 storaged, and on request a FUSE mount (it shares the
// root mount namespace, so the test writes through it) and the S3 gateway.
// Names carry a random run id; everything is removed when the test ends,
// and what a killed run left behind is removed by the next run.
//
// Fault controls: Proc.Kill (SIGKILL), Proc.Start (restart on the same
// data), Proc.Stop/Cont (SIGSTOP/SIGCONT), Net.CutOff/Reconnect (the host's
// link down/up), Net.Partition/Heal (blackhole routes between two hosts, or
// between a host and the root namespace's clients).
//
// The scenarios (see docs/faults.md) each start a fresh cluster, run a
// workload (files through core/client, the mount and `aws s3 cp`, and
// registers read and written by several clients), inject their fault, heal,
// and check that every acknowledged file reads back with its checksum, that
// `flyfs admin fsck` is clean, that every replica of every chain holds the
// same bytes, and that the register history is linearizable (porcupine).
//
// Running:
//
//	go test ./e2e/multihost/                      # the fast CI subset (root)
//	FLYFS_FAULTS=full go test -timeout 30m ./e2e/multihost/
//	FLYFS_FAULTS_SEED=N FLYFS_FAULTS=full go test -run '^TestName$' ./e2e/multihost/
//	FLYFS_FAULTS=off                             # skip them all
//
// Without root, ip(8) or nsenter(1) the tests skip, saying why.
package multihost
