// Package routing holds the cluster's routing information — storage nodes,
// chains with their versions, and every target's public state — and the pure
// functions that read it. mgmtd produces it; storaged, metad and clients act on
// it, always checking its version.
package routing

import "fmt"

type (
	NodeID   uint32
	TargetID uint32
	ChainID  uint32
)

// PublicState is a target's state as published by mgmtd with the chain tables.
type PublicState uint8

const (
	Serving PublicState = iota + 1 // serves reads and writes
	Syncing                        // receives writes while being recovered; no reads
	Waiting                        // neither; recovery not started
	LastSrv                        // failed, and was the chain's last serving replica
	Offline                        // failed
)

var publicNames = map[PublicState]string{Serving: "serving", Syncing: "syncing", Waiting: "waiting", LastSrv: "lastsrv", Offline: "offline"}

func (s PublicState) String() string {
	if n, ok := publicNames[s]; ok {
		return n
	}
	return fmt.Sprintf("public(%d)", uint8(s))
}

// LocalState is a target's state as its storage service reports it.
type LocalState uint8

const (
	UpToDate LocalState = iota + 1
	Online
	LocalOffline
)

var localNames = map[LocalState]string{UpToDate: "up-to-date", Online: "online", LocalOffline: "offline"}

func (s LocalState) String() string {
	if n, ok := localNames[s]; ok {
		return n
	}
	return fmt.Sprintf("local(%d)", uint8(s))
}

// Target is one replica slot of a chain, hosted by one storage node.
type Target struct {
	ID     TargetID    `cbor:"1,keyasint"`
	Node   NodeID      `cbor:"2,keyasint"`
	Public PublicState `cbor:"3,keyasint"`
	Local  LocalState  `cbor:"4,keyasint,omitempty"`
	Disk   int         `cbor:"5,keyasint,omitempty"` // index of the node's disk that holds it
	// Full: the target's disk is out of space. It keeps serving reads; its
	// chain's head refuses writes (NoSpace) until space returns, and new
	// files are laid out elsewhere.
	Full bool `cbor:"6,keyasint,omitempty"`
}

// Chain is an ordered list of targets, head first. Version grows on every
// change of membership, order or state.
type Chain struct {
	ID      ChainID  `cbor:"1,keyasint"`
	Version uint32   `cbor:"2,keyasint"`
	Targets []Target `cbor:"3,keyasint"`
}

// Node is a storage service and where it listens.
type Node struct {
	ID   NodeID `cbor:"1,keyasint"`
	Addr string `cbor:"2,keyasint"`
}

// Info is one version of the routing information.
type Info struct {
	Version uint64             `cbor:"1,keyasint"`
	Nodes   map[NodeID]Node    `cbor:"2,keyasint"`
	Chains  map[ChainID]*Chain `cbor:"3,keyasint"`
	// Tables holds every version of every chain table: Tables[id][v-1] is
	// version v's chain list. Versions are append-only, so a file that pinned
	// (id, v) at create finds its chains forever.
	Tables map[uint32][][]ChainID `cbor:"4,keyasint,omitempty"`
}

// DefaultTable is the chain table new files are laid out over unless their
// directory names another: every chain, in id order, with a version appended
// whenever chains are added.
const DefaultTable uint32 = 1

// Table returns version v of chain table id.
func (in *Info) Table(id, v uint32) ([]ChainID, bool) {
	if in == nil || v == 0 {
		return nil, false
	}
	vs := in.Tables[id]
	if int(v) > len(vs) {
		return nil, false
	}
	return vs[v-1], true
}

// LatestTable returns the newest version of chain table id and its number.
func (in *Info) LatestTable(id uint32) ([]ChainID, uint32, bool) {
	if in == nil || len(in.Tables[id]) == 0 {
		return nil, 0, false
	}
	vs := in.Tables[id]
	return vs[len(vs)-1], uint32(len(vs)), true
}

// Chain returns the chain with the id.
func (in *Info) Chain(id ChainID) (*Chain, bool) {
	if in == nil {
		return nil, false
	}
	c, ok := in.Chains[id]
	return c, ok
}

// Addr returns the address of the node.
func (in *Info) Addr(n NodeID) (string, bool) {
	if in == nil {
		return "", false
	}
	node, ok := in.Nodes[n]
	return node.Addr, ok
}

// Head is the first serving target: where writes enter the chain.
func (c *Chain) Head() (Target, bool) {
	for _, t := range c.Targets {
		if t.Public == Serving {
			return t, true
		}
	}
	return Target{}, false
}

// Index returns the position of target id in the chain, or -1.
func (c *Chain) Index(id TargetID) int {
	for i, t := range c.Targets {
		if t.ID == id {
			return i
		}
	}
	return -1
}

// Successor is the next target after id that takes writes (serving or
// syncing); ok is false for the tail.
func (c *Chain) Successor(id TargetID) (Target, bool) {
	i := c.Index(id)
	if i < 0 {
		return Target{}, false
	}
	for _, t := range c.Targets[i+1:] {
		if t.Public == Serving || t.Public == Syncing {
			return t, true
		}
	}
	return Target{}, false
}

// Predecessor is the writable target before id, if any.
func (c *Chain) Predecessor(id TargetID) (Target, bool) {
	i := c.Index(id)
	for j := i - 1; j >= 0; j-- {
		if t := c.Targets[j]; t.Public == Serving || t.Public == Syncing {
			return t, true
		}
	}
	return Target{}, false
}

// Readable lists the targets that may serve reads: the serving ones.
func (c *Chain) Readable() []Target {
	var out []Target
	for _, t := range c.Targets {
		if t.Public == Serving {
			out = append(out, t)
		}
	}
	return out
}

// Clone returns a deep copy, so a holder can change it without racing readers.
func (in *Info) Clone() *Info {
	out := &Info{Version: in.Version, Nodes: make(map[NodeID]Node, len(in.Nodes)), Chains: make(map[ChainID]*Chain, len(in.Chains))}
	for k, v := range in.Nodes {
		out.Nodes[k] = v
	}
	for k, c := range in.Chains {
		cc := *c
		cc.Targets = append([]Target(nil), c.Targets...)
		out.Chains[k] = &cc
	}
	if in.Tables != nil {
		out.Tables = make(map[uint32][][]ChainID, len(in.Tables))
		for id, vs := range in.Tables {
			out.Tables[id] = append([][]ChainID(nil), vs...) // versions never change: share them
		}
	}
	return out
}
