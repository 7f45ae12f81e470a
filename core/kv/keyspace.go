package kv

import (
	"fmt"
	"strings"
)

// Space is one part of the shared key space: every key that starts with
// Prefix belongs to Owner, and no other package reads or writes it.
type Space struct {
	Prefix string
	Owner  string // the package that owns the keys
	Holds  string
}

// Keyspace lists every prefix of the metadata store, which mgmtd, metad
// and the access keys share. No prefix is a prefix of another (a test checks),
// so no two owners can ever write the same key.
var Keyspace = []Space{
	{"\x00", "core/kv engines", "the engines' own bookkeeping (etcd's versionstamp counter)"},
	{"CONF/", "core/clusterid", "cluster configuration: the cluster id (drawn by mgmtd)"},
	{"SING", "mgmtd", "single keys: the primary's lease, the routing version"},
	{"NODE", "mgmtd", "storage nodes' addresses"},
	{"CHIF", "mgmtd", "chains: targets in order with their states"},
	{"TGHD", "mgmtd", "targets an admin holds offline"},
	{"MGMD", "mgmtd", "the registry of cluster managers"},
	{"CTBL", "mgmtd", "every version of every chain table"},
	{"AUDT", "mgmtd", "the audit trail of admin actions (who, what, when, result)"},
	{"INOD", "metad/ns", "inodes"},
	{"DENT", "metad/ns", "directory entries"},
	{"IDEM", "metad/ns", "results of removes, for retried requests"},
	{"GCQU", "metad/ns", "the queue of removed files awaiting GC"},
	{"IALC", "metad/ns", "the inode id allocator's shards"},
	{"SESS", "metad/ns", "write sessions"},
	{"XATR", "metad/ns", "extended attributes"},
	{"INLN", "metad/ns", "small files' data, kept beside their inodes"},
	{"DMTI", "metad/ns", "directories' modification times and subdirectory counts"},
	{"STAB", "metad/ns", "the StatFS base"},
	{"STAD", "metad/ns", "StatFS deltas"},
	{"LOCK", "metad/ns", "files' fcntl and flock lock tables"},
	{"LKSS", "metad/ns", "the clients' lock sessions"},
	{"VBKT", "metad/ns", "buckets' versioning state"},
	{"VERS", "metad/ns", "noncurrent versions and delete markers of versioned buckets' keys"},
	{"TRSH", "metad/ns", "where the trash's entries were"},
	{"S3K/", "metad/keys", "access keys"},
	{"S3ROOT", "metad/keys", "the id of the root access key"},
}

// Tag returns the registered prefix p as bytes, for its owner to build keys
// with. An unregistered prefix is a programming error, caught as the owner's
// package initialises.
func Tag(p string) []byte {
	for _, s := range Keyspace {
		if s.Prefix == p {
			return []byte(p)
		}
	}
	panic(fmt.Sprintf("kv: key prefix %q is not in kv.Keyspace", p))
}

// overlaps returns the first two registered prefixes of which one starts
// with the other.
func overlaps(spaces []Space) (a, b Space, found bool) {
	for i, x := range spaces {
		for _, y := range spaces[i+1:] {
			if strings.HasPrefix(x.Prefix, y.Prefix) || strings.HasPrefix(y.Prefix, x.Prefix) {
				return x, y, true
			}
		}
	}
	return Space{}, Space{}, false
}
