package mgmtd

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/fxamacker/cbor/v2"
)

// Key schema of the cluster manager's state in the shared KV store. Tags
// follow 3FS's where it has one; integers are big-endian so range reads come
// back in id order.
//
//	SINGMgmtdLease           → leaseRecord: who is primary, until when
//	SINGRoutingInfoVersion   → u64: the routing version, bumped by every routing change
//	NODE + node id (u32)     → nodeRecord: a storage node's address
//	CHIF + chain id (u32)    → routing.Chain: targets in order with states
//	TGHD + target id (u32)   → heldRecord: present while an admin holds the target offline
//	MGMD + mgmtd id          → mgmtdRecord: the registry of cluster managers
//	CTBL + table id (u32)    → [][]ChainID: every version of a chain table (append-only)
//	AUDT + unix ns (u64) + random (u32) → mgmtdapi.AuditRecord: the admin actions, kept auditKeep
var (
	leaseKey   = append(kv.Tag("SING"), "MgmtdLease"...)
	versionKey = append(kv.Tag("SING"), "RoutingInfoVersion"...)
	nodeTag    = kv.Tag("NODE")
	chainTag   = kv.Tag("CHIF")
	heldTag    = kv.Tag("TGHD")
	mgmtdTag   = kv.Tag("MGMD")
	tableTag   = kv.Tag("CTBL")
	auditTag   = kv.Tag("AUDT")
)

func idKey(tag []byte, id uint32) []byte {
	k := make([]byte, len(tag)+4)
	copy(k, tag)
	binary.BigEndian.PutUint32(k[len(tag):], id)
	return k
}

func idOf(tag, key []byte) (uint32, error) {
	if len(key) != len(tag)+4 {
		return 0, fmt.Errorf("mgmtd: malformed key %q", key)
	}
	return binary.BigEndian.Uint32(key[len(tag):]), nil
}

func nodeKey(id routing.NodeID) []byte        { return idKey(nodeTag, uint32(id)) }
func chainKey(id routing.ChainID) []byte      { return idKey(chainTag, uint32(id)) }
func heldKey(id routing.TargetID) []byte      { return idKey(heldTag, uint32(id)) }
func mgmtdKey(id string) []byte               { return append(append([]byte(nil), mgmtdTag...), id...) }
func tagRange(tag []byte) (begin, end []byte) { r := kv.PrefixRange(tag); return r.Begin, r.End }

// leaseRecord is the primary's lease. Term grows with every change of
// holder (or of holding process), so a write checked against (Instance,
// Term) fails after any takeover, even one by a restarted process of the
// same ID.
type leaseRecord struct {
	Holder   string `cbor:"1,keyasint"`
	Addr     string `cbor:"2,keyasint,omitempty"`
	Instance uint64 `cbor:"3,keyasint"`
	Term     uint64 `cbor:"4,keyasint"`
	Start    int64  `cbor:"5,keyasint"` // unix ns of the takeover
	Expiry   int64  `cbor:"6,keyasint"` // unix ns; a lease past it may be taken
}

type nodeRecord struct {
	Addr string `cbor:"1,keyasint"`
}

type heldRecord struct {
	Held bool   `cbor:"1,keyasint"`
	By   string `cbor:"2,keyasint,omitempty"` // who held it (the request's By)
	At   int64  `cbor:"3,keyasint,omitempty"` // when, unix ns
}

type mgmtdRecord struct {
	ID     string `cbor:"1,keyasint"`
	Addr   string `cbor:"2,keyasint"`
	Expiry int64  `cbor:"3,keyasint"` // unix ns; the entry is stale past it
}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{Sort: cbor.SortCanonical}).EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{}).DecMode(); err != nil {
		panic(err)
	}
}

func encode(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mgmtd: encode %T: %v", v, err)) // only our own plain structs get here
	}
	return b
}

func decode(b []byte, v any) error {
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("mgmtd: decode %T: %w", v, err)
	}
	return nil
}

// readVersion reads the routing version (0 in a new cluster).
func readVersion(ctx context.Context, tx kv.ReadTxn) (uint64, error) {
	v, found, err := tx.Get(ctx, versionKey)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("mgmtd: routing version is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func versionValue(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// readRouting reads the whole routing information in one transaction, so
// its parts belong to one version.
func readRouting(ctx context.Context, tx kv.ReadTxn) (*routing.Info, error) {
	ver, err := readVersion(ctx, tx)
	if err != nil {
		return nil, err
	}
	info := &routing.Info{Version: ver, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}}
	b, e := tagRange(nodeTag)
	nodes, err := tx.GetRange(ctx, b, e, kv.RangeOptions{})
	if err != nil {
		return nil, err
	}
	for _, kvp := range nodes.KVs {
		id, err := idOf(nodeTag, kvp.Key)
		if err != nil {
			return nil, err
		}
		var rec nodeRecord
		if err := decode(kvp.Value, &rec); err != nil {
			return nil, err
		}
		info.Nodes[routing.NodeID(id)] = routing.Node{ID: routing.NodeID(id), Addr: rec.Addr}
	}
	b, e = tagRange(chainTag)
	chains, err := tx.GetRange(ctx, b, e, kv.RangeOptions{})
	if err != nil {
		return nil, err
	}
	for _, kvp := range chains.KVs {
		var c routing.Chain
		if err := decode(kvp.Value, &c); err != nil {
			return nil, err
		}
		info.Chains[c.ID] = &c
	}
	b, e = tagRange(tableTag)
	tables, err := tx.GetRange(ctx, b, e, kv.RangeOptions{})
	if err != nil {
		return nil, err
	}
	for _, kvp := range tables.KVs {
		id, err := idOf(tableTag, kvp.Key)
		if err != nil {
			return nil, err
		}
		var vs [][]routing.ChainID
		if err := decode(kvp.Value, &vs); err != nil {
			return nil, err
		}
		if info.Tables == nil {
			info.Tables = map[uint32][][]routing.ChainID{}
		}
		info.Tables[id] = vs
	}
	return info, nil
}

// readHeld reads the targets held offline by an admin.
func readHeld(ctx context.Context, tx kv.ReadTxn) (map[routing.TargetID]bool, error) {
	recs, err := readHolds(ctx, tx)
	if err != nil {
		return nil, err
	}
	held := make(map[routing.TargetID]bool, len(recs))
	for id := range recs {
		held[id] = true
	}
	return held, nil
}

// readHolds reads the holds with who made them.
func readHolds(ctx context.Context, tx kv.ReadTxn) (map[routing.TargetID]heldRecord, error) {
	b, e := tagRange(heldTag)
	res, err := tx.GetRange(ctx, b, e, kv.RangeOptions{})
	if err != nil {
		return nil, err
	}
	held := map[routing.TargetID]heldRecord{}
	for _, kvp := range res.KVs {
		id, err := idOf(heldTag, kvp.Key)
		if err != nil {
			return nil, err
		}
		var rec heldRecord
		if err := decode(kvp.Value, &rec); err != nil {
			return nil, err
		}
		if rec.Held {
			held[routing.TargetID(id)] = rec
		}
	}
	return held, nil
}

// readMgmtds reads the registry of cluster managers.
func readMgmtds(ctx context.Context, tx kv.ReadTxn) ([]mgmtdRecord, error) {
	b, e := tagRange(mgmtdTag)
	res, err := tx.GetRange(ctx, b, e, kv.RangeOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]mgmtdRecord, 0, len(res.KVs))
	for _, kvp := range res.KVs {
		var rec mgmtdRecord
		if err := decode(kvp.Value, &rec); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// readLease reads the lease record; found is false when there is none.
func readLease(ctx context.Context, tx kv.ReadTxn) (rec leaseRecord, found bool, err error) {
	v, found, err := tx.Get(ctx, leaseKey)
	if err != nil || !found {
		return leaseRecord{}, false, err
	}
	return rec, true, decode(v, &rec)
}

// state is what a new primary loads: the routing and the held targets.
type state struct {
	info *routing.Info
	held map[routing.TargetID]bool
}

func loadState(ctx context.Context, db *kv.DB) (*state, error) {
	var st state
	err := db.RunRead(ctx, func(tx kv.ReadTxn) error {
		var err error
		if st.info, err = readRouting(ctx, tx); err != nil {
			return err
		}
		st.held, err = readHeld(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mgmtd: load cluster state: %w", err)
	}
	return &st, nil
}
