// Package mgmtdapi is the cluster manager's wire API: methods, messages, error
// codes and a typed client stub.
package mgmtdapi

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// Methods of the cluster manager (service 1).
const (
	MethodHeartbeat     rpc.Method = 0x0101 // primary only
	MethodGetRouting    rpc.Method = 0x0102 // any mgmtd
	MethodGetPrimary    rpc.Method = 0x0103 // any mgmtd: the primary, and the cluster id
	MethodSetChains     rpc.Method = 0x0104 // primary only: create or replace chains
	MethodSetTargetHeld rpc.Method = 0x0105 // primary only: take a target offline by hand, or release it
	MethodListNodes     rpc.Method = 0x0106 // the primary; another mgmtd answers NotPrimary, or a partial list when no primary is elected
	MethodRegister      rpc.Method = 0x0107 // primary only: a service (metad, gateway, client) says it is alive
	MethodListServices  rpc.Method = 0x0108 // primary only: the registered services
	MethodSetNodeHeld   rpc.Method = 0x0109 // primary only: a node's maintenance: hold its targets as chains allow, or release them
	MethodAudit         rpc.Method = 0x010A // primary only: record an admin action a front end did (the console's key and namespace changes)
	MethodListAudit     rpc.Method = 0x010B // any mgmtd: the audit trail, newest first
)

// Error codes.
const (
	// CodeNotPrimary: this mgmtd is not the primary; the error message names
	// the primary's address when it is known (see NotPrimaryAddr).
	CodeNotPrimary = rpc.CodeServiceBase + 0x100 + iota
	// CodeStaleHeartbeat: the heartbeat's sequence number is not newer than one
	// already seen from the node.
	CodeStaleHeartbeat
	// CodeUnknownTarget names a target no chain has.
	CodeUnknownTarget
	// CodeLastServing: holding the target would leave its chain with no
	// serving replica (no reads or writes); SetTargetHeldReq.Force does it
	// anyway.
	CodeLastServing
)

func init() {
	rpc.RegisterCode(CodeNotPrimary, "NotPrimary")
	rpc.RegisterCode(CodeStaleHeartbeat, "StaleHeartbeat")
	rpc.RegisterCode(CodeUnknownTarget, "UnknownTarget")
	rpc.RegisterCode(CodeLastServing, "LastServingReplica")
	rpc.RegisterMethod(MethodHeartbeat, "mgmtd.Heartbeat")
	rpc.RegisterMethod(MethodGetRouting, "mgmtd.GetRouting")
	rpc.RegisterMethod(MethodGetPrimary, "mgmtd.GetPrimary")
	rpc.RegisterMethod(MethodSetChains, "mgmtd.SetChains")
	rpc.RegisterMethod(MethodSetTargetHeld, "mgmtd.SetTargetHeld")
	rpc.RegisterMethod(MethodSetNodeHeld, "mgmtd.SetNodeHeld")
	rpc.RegisterMethod(MethodAudit, "mgmtd.Audit")
	rpc.RegisterMethod(MethodListAudit, "mgmtd.ListAudit")
	rpc.RegisterMethod(MethodListNodes, "mgmtd.ListNodes")
	rpc.RegisterMethod(MethodRegister, "mgmtd.Register")
	rpc.RegisterMethod(MethodListServices, "mgmtd.ListServices")
}

// notPrimaryMark precedes the primary's address in a NotPrimary message.
const notPrimaryMark = "primary is at "

// NotPrimary returns the error a mgmtd that is not the primary answers with;
// primaryAddr is the primary's address, or "" when none is known.
func NotPrimary(primaryAddr string) *rpc.Error {
	if primaryAddr == "" {
		return rpc.NewError(CodeNotPrimary, "not the primary mgmtd; no primary is elected right now")
	}
	return rpc.NewError(CodeNotPrimary, "not the primary mgmtd; "+notPrimaryMark+primaryAddr)
}

// NotPrimaryAddr returns the primary's address named by a NotPrimary error,
// or "" when err is not one or names no primary.
func NotPrimaryAddr(err error) string {
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != CodeNotPrimary {
		return ""
	}
	_, addr, ok := strings.Cut(e.Message, notPrimaryMark)
	if !ok {
		return ""
	}
	return strings.TrimSpace(addr)
}

// TargetReport is a storage target's state as its storage service sees it.
type TargetReport struct {
	Target routing.TargetID   `cbor:"1,keyasint"`
	Chain  routing.ChainID    `cbor:"2,keyasint"`
	Local  routing.LocalState `cbor:"3,keyasint"`
	Disk   int                `cbor:"4,keyasint,omitempty"`
	Full   bool               `cbor:"5,keyasint,omitempty"` // its disk is out of space
}

// DiskReport is one disk's usage.
type DiskReport struct {
	Path      string `cbor:"1,keyasint"`
	UsedBytes uint64 `cbor:"2,keyasint,omitempty"` // bytes of the disk's data files
	FreeBytes uint64 `cbor:"3,keyasint,omitempty"` // what the file system under it can still give (statfs f_bavail)
	ReadOnly  bool   `cbor:"4,keyasint,omitempty"` // a write I/O error: its targets are reported offline
	Full      bool   `cbor:"5,keyasint,omitempty"` // out of space: its targets keep serving reads, writes fail
	// CapacityBytes is the size of the file system under the disk less
	// the blocks reserved for root, which storaged does not write (statfs
	// f_blocks - f_bfree + f_bavail: df's Used + Avail), so that
	// CapacityBytes - FreeBytes is df's Used; 0: not reported (an older
	// storaged, or statfs failed).
	CapacityBytes uint64 `cbor:"6,keyasint,omitempty"`
	// FS names the file system under the disk, the same for every disk on
	// it whichever node reports it (its id within the kernel that mounts
	// it: statfs f_fsid, else the device id, with the kernel's boot id),
	// so that space is counted once per file system; "": not reported.
	FS string `cbor:"7,keyasint,omitempty"`
	// Encrypted: the disk keeps chunk content encrypted at rest
	// (storaged --encryption-key-file).
	Encrypted bool `cbor:"8,keyasint,omitempty"`
}

// UsedFraction is the share of the disk's file system in use, 1 - free /
// capacity: df's Use%, and what the rule FlyfsDiskAlmostFull reads; ok is
// false without a reported capacity.
func (d DiskReport) UsedFraction() (f float64, ok bool) {
	if d.CapacityBytes == 0 {
		return 0, false
	}
	return 1 - float64(min(d.FreeBytes, d.CapacityBytes))/float64(d.CapacityBytes), true
}

// FSKey names the file system under disk d of node for adding up space
// (disks with one key share a file system): d.FS, or for a disk that does
// not report it, the disk itself.
func FSKey(node routing.NodeID, d DiskReport) string {
	if d.FS != "" {
		return "fs " + d.FS
	}
	return "disk " + strconv.FormatUint(uint64(node), 10) + " " + d.Path
}

// Space is the space of the file systems under some disks, each counted
// once however many disks share it.
type Space struct {
	CapacityBytes uint64 // of the file systems that report their capacity
	FreeBytes     uint64
	FileSystems   int
	Disks         int
	// CapacityKnown and FreeKnown: every file system reported it.
	CapacityKnown, FreeKnown bool
}

// SpaceOf adds up the space under the disks of nodes, counting a file
// system several disks share (several targets' directories on one volume,
// the nodes of flyfs server on one machine) once.
func SpaceOf(nodes []NodeStatus) Space {
	sp := Space{CapacityKnown: true, FreeKnown: true}
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, d := range n.Disks {
			sp.Disks++
			k := FSKey(n.Node, d)
			if seen[k] {
				continue
			}
			seen[k] = true
			sp.FileSystems++
			sp.CapacityBytes += d.CapacityBytes
			sp.FreeBytes += d.FreeBytes
			sp.CapacityKnown = sp.CapacityKnown && d.CapacityBytes > 0
			sp.FreeKnown = sp.FreeKnown && d.FreeBytes > 0
		}
	}
	if sp.FileSystems == 0 {
		sp.CapacityKnown, sp.FreeKnown = false, false
	}
	return sp
}

// HeartbeatReq renews a storage node's lease and reports its targets.
type HeartbeatReq struct {
	Node    routing.NodeID `cbor:"1,keyasint"`
	Addr    string         `cbor:"2,keyasint"`
	Seq     uint64         `cbor:"3,keyasint"` // grows with every heartbeat of one process (stale ones are refused)
	Targets []TargetReport `cbor:"4,keyasint,omitempty"`
	Disks   []DiskReport   `cbor:"5,keyasint,omitempty"`
	// Incarnation is a random number the node draws once per process start:
	// a new incarnation starts its Seq over, so a restarted node is not
	// refused as stale.
	Incarnation uint64 `cbor:"6,keyasint,omitempty"`
}

// HeartbeatResp tells the node the newest routing version, so it fetches
// routing when it is behind.
type HeartbeatResp struct {
	RoutingVersion uint64 `cbor:"1,keyasint"`
	LeaseSeconds   uint32 `cbor:"2,keyasint"`           // T rounded up to whole seconds: a node silent this long is declared failed
	LeaseMillis    uint64 `cbor:"3,keyasint,omitempty"` // T in milliseconds (exact for sub-second T)
}

// GetRoutingReq asks for routing newer than Have; Have 0 (nothing yet)
// always gets the routing, even the empty version 0 of a new cluster.
type GetRoutingReq struct {
	Have uint64 `cbor:"1,keyasint,omitempty"`
}

// GetRoutingResp carries the routing info, or nothing when Have is current.
type GetRoutingResp struct {
	Info          *routing.Info `cbor:"1,keyasint,omitempty"`
	Bootstrapping bool          `cbor:"2,keyasint,omitempty"` // a new primary is still hearing from everyone
}

// GetPrimaryReq asks who is primary.
type GetPrimaryReq struct{}

// GetPrimaryResp names the primary mgmtd (none while no primary is
// elected) and the cluster every mgmtd answering belongs to.
type GetPrimaryResp struct {
	ID        string `cbor:"1,keyasint,omitempty"`
	Addr      string `cbor:"2,keyasint,omitempty"`
	ClusterID string `cbor:"3,keyasint,omitempty"`
}

// SetChainsReq creates chains or replaces their target lists (targets in
// order, head first). New chains' targets start serving.
type SetChainsReq struct {
	Chains []routing.Chain `cbor:"1,keyasint"`
	By     string          `cbor:"2,keyasint,omitempty"` // who asked, for the audit trail
}

// SetChainsResp returns the routing version that holds the change.
type SetChainsResp struct {
	RoutingVersion uint64 `cbor:"1,keyasint"`
}

// SetTargetHeldReq takes a target offline by hand (Held) or lets it return.
type SetTargetHeldReq struct {
	Target routing.TargetID `cbor:"1,keyasint"`
	Held   bool             `cbor:"2,keyasint"`
	// Force holds the target even if it is its chain's last serving replica
	// (else that is refused with CodeLastServing).
	Force bool   `cbor:"3,keyasint,omitempty"`
	By    string `cbor:"4,keyasint,omitempty"` // who asked, for the audit trail
}

// SetNodeHeldReq puts a storage node into maintenance (Held: every target
// of it that its chain can spare is held offline; a chain's last serving
// replica is not) or ends it (every held target of it is released).
// DryRun answers what would happen and changes nothing.
type SetNodeHeldReq struct {
	Node   routing.NodeID `cbor:"1,keyasint"`
	Held   bool           `cbor:"2,keyasint"`
	DryRun bool           `cbor:"3,keyasint,omitempty"`
	By     string         `cbor:"4,keyasint,omitempty"` // who asked, for the audit trail
}

// AuditRecord is one admin action: who, what, when and how it ended.
type AuditRecord struct {
	At     int64  `cbor:"1,keyasint"` // unix ns, set by mgmtd
	By     string `cbor:"2,keyasint"` // "console: KEY", "flyfs admin: user@host"
	Action string `cbor:"3,keyasint"` // what was asked, in words
	Result string `cbor:"4,keyasint"` // "ok", or the error
}

// AuditReq records an action a front end did itself.
type AuditReq struct {
	Record AuditRecord `cbor:"1,keyasint"`
}

// AuditResp acknowledges an AuditReq.
type AuditResp struct{}

// ListAuditReq asks for up to Limit records (at most 1000) older than
// Before (unix ns; 0: the newest).
type ListAuditReq struct {
	Limit  int   `cbor:"1,keyasint,omitempty"`
	Before int64 `cbor:"2,keyasint,omitempty"`
}

// ListAuditResp is the trail, newest first.
type ListAuditResp struct {
	Records []AuditRecord `cbor:"1,keyasint"`
}

// SetNodeHeldResp says, target by target, what was (or would be) done.
type SetNodeHeldResp struct {
	Targets        []NodeTargetHold `cbor:"1,keyasint"`
	RoutingVersion uint64           `cbor:"2,keyasint"` // holding the change (the current one for a dry run)
}

// NodeTargetHold is one target of a SetNodeHeld.
type NodeTargetHold struct {
	Target routing.TargetID `cbor:"1,keyasint"`
	Chain  routing.ChainID  `cbor:"2,keyasint"`
	// Changed: held (or released) by this call; else Skipped says why not
	// (already so, or the chain's last serving replica).
	Changed bool   `cbor:"3,keyasint,omitempty"`
	Skipped string `cbor:"4,keyasint,omitempty"`
	// ChainServing is how many of the chain's replicas serve after the call.
	ChainServing int `cbor:"5,keyasint"`
}

// SetTargetHeldResp returns the routing version that holds the change.
type SetTargetHeldResp struct {
	RoutingVersion uint64 `cbor:"1,keyasint"`
}

// ListNodesReq asks for the services mgmtd knows.
type ListNodesReq struct{}

// NodeStatus is one storage node as the primary sees it.
type NodeStatus struct {
	Node          routing.NodeID `cbor:"1,keyasint"`
	Addr          string         `cbor:"2,keyasint"`
	Alive         bool           `cbor:"3,keyasint"`
	LastHeartbeat int64          `cbor:"4,keyasint"` // unix nanoseconds
	Targets       []TargetReport `cbor:"5,keyasint,omitempty"`
	Disks         []DiskReport   `cbor:"6,keyasint,omitempty"`
}

// MgmtdStatus is one cluster manager.
type MgmtdStatus struct {
	ID      string `cbor:"1,keyasint"`
	Addr    string `cbor:"2,keyasint"`
	Primary bool   `cbor:"3,keyasint,omitempty"`
}

// ListNodesResp lists storage nodes and cluster managers.
type ListNodesResp struct {
	Nodes  []NodeStatus  `cbor:"1,keyasint"`
	Mgmtds []MgmtdStatus `cbor:"2,keyasint"`
	// Partial: no primary is elected, so the answering mgmtd listed the nodes
	// it knows from the KV store without liveness.
	Partial bool `cbor:"3,keyasint,omitempty"`
	// Held lists the targets an admin holds offline (SetTargetHeld), sorted.
	Held []routing.TargetID `cbor:"4,keyasint,omitempty"`
	// Holds says who held each (By, empty for holds recorded without it)
	// and when, in the same order.
	Holds []TargetHold `cbor:"5,keyasint,omitempty"`
}

// TargetHold is one target held offline: by whom and since when.
type TargetHold struct {
	Target routing.TargetID `cbor:"1,keyasint"`
	By     string           `cbor:"2,keyasint,omitempty"`
	At     int64            `cbor:"3,keyasint,omitempty"` // unix ns
}

// Client is a typed stub over an rpc.Client.
type Client struct{ RPC *rpc.Client }

func (c Client) Heartbeat(ctx context.Context, addr string, req *HeartbeatReq) (*HeartbeatResp, error) {
	resp, _, err := rpc.Call[HeartbeatReq, HeartbeatResp](ctx, c.RPC, addr, MethodHeartbeat, req, nil)
	return resp, err
}

func (c Client) GetRouting(ctx context.Context, addr string, have uint64) (*GetRoutingResp, error) {
	resp, _, err := rpc.Call[GetRoutingReq, GetRoutingResp](ctx, c.RPC, addr, MethodGetRouting, &GetRoutingReq{Have: have}, nil)
	return resp, err
}

func (c Client) GetPrimary(ctx context.Context, addr string) (*GetPrimaryResp, error) {
	resp, _, err := rpc.Call[GetPrimaryReq, GetPrimaryResp](ctx, c.RPC, addr, MethodGetPrimary, &GetPrimaryReq{}, nil)
	return resp, err
}

func (c Client) SetChains(ctx context.Context, addr string, req *SetChainsReq) (*SetChainsResp, error) {
	resp, _, err := rpc.Call[SetChainsReq, SetChainsResp](ctx, c.RPC, addr, MethodSetChains, req, nil)
	return resp, err
}

func (c Client) Audit(ctx context.Context, addr string, req *AuditReq) (*AuditResp, error) {
	resp, _, err := rpc.Call[AuditReq, AuditResp](ctx, c.RPC, addr, MethodAudit, req, nil)
	return resp, err
}

func (c Client) ListAudit(ctx context.Context, addr string, req *ListAuditReq) (*ListAuditResp, error) {
	resp, _, err := rpc.Call[ListAuditReq, ListAuditResp](ctx, c.RPC, addr, MethodListAudit, req, nil)
	return resp, err
}

func (c Client) SetNodeHeld(ctx context.Context, addr string, req *SetNodeHeldReq) (*SetNodeHeldResp, error) {
	resp, _, err := rpc.Call[SetNodeHeldReq, SetNodeHeldResp](ctx, c.RPC, addr, MethodSetNodeHeld, req, nil)
	return resp, err
}

func (c Client) SetTargetHeld(ctx context.Context, addr string, req *SetTargetHeldReq) (*SetTargetHeldResp, error) {
	resp, _, err := rpc.Call[SetTargetHeldReq, SetTargetHeldResp](ctx, c.RPC, addr, MethodSetTargetHeld, req, nil)
	return resp, err
}

func (c Client) ListNodes(ctx context.Context, addr string) (*ListNodesResp, error) {
	resp, _, err := rpc.Call[ListNodesReq, ListNodesResp](ctx, c.RPC, addr, MethodListNodes, &ListNodesReq{}, nil)
	return resp, err
}

// Service kinds that register with mgmtd.
const (
	KindMetad   = "metad"
	KindGateway = "gateway"
	KindClient  = "client" // a client holding write sessions (a mount, a gateway's client)
	KindConsole = "console"
)

// RegisterReq says a service is alive; services repeat it every TTL/3. The
// registry is the primary's memory: a new primary learns it anew.
type RegisterReq struct {
	Kind string `cbor:"1,keyasint"`
	ID   string `cbor:"2,keyasint"`
	Addr string `cbor:"3,keyasint,omitempty"`
	// Cache is a client's cache counters, for the console's client view
	// (nil: no cache, or not a client).
	Cache *CacheReport `cbor:"4,keyasint,omitempty"`
}

// CacheReport is what a client's cache tiers hold and did.
type CacheReport struct {
	Memory CacheTier `cbor:"1,keyasint"`
	Disk   CacheTier `cbor:"2,keyasint"`
}

// CacheTier is one tier's counters (Capacity 0: the tier is off).
type CacheTier struct {
	Capacity  int64  `cbor:"1,keyasint,omitempty"`
	Used      int64  `cbor:"2,keyasint,omitempty"`
	Hits      uint64 `cbor:"3,keyasint,omitempty"`
	Misses    uint64 `cbor:"4,keyasint,omitempty"`
	Evictions uint64 `cbor:"5,keyasint,omitempty"`
	Corrupt   uint64 `cbor:"6,keyasint,omitempty"`
}

// RegisterResp gives the TTL after which a silent service counts as gone.
type RegisterResp struct {
	TTLMillis uint64 `cbor:"1,keyasint"`
}

// ListServicesReq asks for the services of one kind ("" for all).
type ListServicesReq struct {
	Kind string `cbor:"1,keyasint,omitempty"`
}

// ServiceStatus is one registered service.
type ServiceStatus struct {
	Kind     string `cbor:"1,keyasint"`
	ID       string `cbor:"2,keyasint"`
	Addr     string `cbor:"3,keyasint,omitempty"`
	LastSeen int64  `cbor:"4,keyasint"` // unix ns
	Alive    bool   `cbor:"5,keyasint,omitempty"`
	// Cache is the last cache report of a client (nil: none).
	Cache *CacheReport `cbor:"6,keyasint,omitempty"`
}

// ListServicesResp lists services. Complete is false while the primary is
// younger than the TTL: a live service may not have re-registered yet, so
// nobody may conclude from its absence that it is gone (session reaping).
type ListServicesResp struct {
	Services []ServiceStatus `cbor:"1,keyasint"`
	Complete bool            `cbor:"2,keyasint,omitempty"`
}

func (c Client) Register(ctx context.Context, addr string, req *RegisterReq) (*RegisterResp, error) {
	resp, _, err := rpc.Call[RegisterReq, RegisterResp](ctx, c.RPC, addr, MethodRegister, req, nil)
	return resp, err
}

func (c Client) ListServices(ctx context.Context, addr string, req *ListServicesReq) (*ListServicesResp, error) {
	resp, _, err := rpc.Call[ListServicesReq, ListServicesResp](ctx, c.RPC, addr, MethodListServices, req, nil)
	return resp, err
}
