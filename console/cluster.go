package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// routing returns the newest routing from any mgmtd.
func (c *Console) routing(ctx context.Context) (*routing.Info, error) {
	info, _, err := c.routingBoot(ctx)
	return info, err
}

func (c *Console) routingBoot(ctx context.Context) (*routing.Info, bool, error) {
	c.rmu.Lock()
	have := uint64(0)
	if c.rinfo != nil {
		have = c.rinfo.Version
	}
	c.rmu.Unlock()
	resp, err := c.mgmtd.GetRouting(ctx, have)
	if err != nil {
		return nil, false, err
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rboot = resp.Bootstrapping
	if resp.Info != nil && (c.rinfo == nil || resp.Info.Version > c.rinfo.Version) {
		c.rinfo = resp.Info
	}
	if c.rinfo == nil {
		return nil, false, errors.New("the cluster manager sent no routing")
	}
	return c.rinfo, c.rboot, nil
}

// clusterDown answers 503 cluster_unavailable: the page shows its banner.
func clusterDown(w http.ResponseWriter, err error) {
	apiError(w, http.StatusServiceUnavailable, "cluster_unavailable", "cannot reach the cluster managers: "+err.Error())
}

// chainState: ok (all serving), degraded (some target not serving, data
// still readable), unavailable (no serving target: reads and writes stop).
func chainState(ch *routing.Chain) string {
	serving := 0
	for _, t := range ch.Targets {
		if t.Public == routing.Serving {
			serving++
		}
	}
	switch {
	case serving == 0:
		return "unavailable"
	case serving < len(ch.Targets):
		return "degraded"
	}
	return "ok"
}

type healthJSON struct {
	State   string   `json:"state"` // healthy, degraded, unavailable
	Reasons []string `json:"reasons"`
}

type mgmtdJSON struct {
	ID      string `json:"id"`
	Addr    string `json:"addr"`
	Primary bool   `json:"primary"`
}

type diskJSON struct {
	Node      uint32 `json:"node"`
	Index     int    `json:"index"`
	Path      string `json:"path"`
	UsedBytes uint64 `json:"usedBytes"` // its data files
	FreeBytes uint64 `json:"freeBytes"` // free on its file system
	// CapacityBytes is the size of its file system (0: not reported);
	// UsedPercent that file system's use, 100 * (1 - free / capacity).
	CapacityBytes uint64   `json:"capacityBytes"`
	UsedPercent   *float64 `json:"usedPercent"`
	// SharedFS is how many disks (this one included) share its file
	// system: their free space and size are one file system's.
	SharedFS int    `json:"sharedFS"`
	Chunks   uint64 `json:"chunks"`
	ReadOnly bool   `json:"readOnly"`
	Reason   string `json:"readOnlyReason,omitempty"`
	Full     bool   `json:"full"` // out of space: reads go on, writes fail until space returns
}

type nodeTargetJSON struct {
	Target uint32 `json:"target"`
	Chain  uint32 `json:"chain"`
	Local  string `json:"local"`            // as its node reports it
	Public string `json:"public,omitempty"` // as mgmtd publishes it (what clients use)
	Held   bool   `json:"held,omitempty"`   // held offline by an admin
	HeldBy string `json:"heldBy,omitempty"` // who (as the audit trail names them)
}

type storageNodeJSON struct {
	Node          uint32           `json:"node"`
	Addr          string           `json:"addr"`
	State         string           `json:"state"` // alive, failed, no heartbeat, unknown
	LastHeartbeat *time.Time       `json:"lastHeartbeat"`
	Targets       []nodeTargetJSON `json:"targets"`
	Disks         []diskJSON       `json:"disks"`
}

// capacityJSON counts every file system under the disks once, however
// many disks share it.
type capacityJSON struct {
	UsedBytes   uint64 `json:"usedBytes"`   // the disks' data files: flyfs's share
	FreeBytes   uint64 `json:"freeBytes"`   // free on the file systems
	TotalBytes  uint64 `json:"totalBytes"`  // their size
	FSUsedBytes uint64 `json:"fsUsedBytes"` // totalBytes - freeBytes: in use on them, by flyfs or anything else
	// UsedPercent is 100 * fsUsedBytes / totalBytes; null unless every
	// file system reported its size.
	UsedPercent *float64 `json:"usedPercent"`
	Disks       int      `json:"disks"`
	FileSystems int      `json:"fileSystems"`
	// FreeKnown and TotalKnown: every file system reported its free space,
	// its size (storaged reports used bytes always, the others where it
	// measures them).
	FreeKnown  bool `json:"freeKnown"`
	TotalKnown bool `json:"totalKnown"`
}

type chainCountJSON struct {
	Total       int `json:"total"`
	Degraded    int `json:"degraded"`
	Unavailable int `json:"unavailable"`
	Syncing     int `json:"syncingTargets"`
}

type overviewJSON struct {
	Health         healthJSON        `json:"health"`
	RoutingVersion uint64            `json:"routingVersion"`
	Bootstrapping  bool              `json:"bootstrapping"`
	Mgmtds         []mgmtdJSON       `json:"mgmtds"`
	Storage        []storageNodeJSON `json:"storage"`
	Services       []serviceJSON     `json:"services"`
	Capacity       capacityJSON      `json:"capacity"`
	Chains         chainCountJSON    `json:"chains"`
	Namespace      *namespaceJSON    `json:"namespace"`
	GCQueue        *int              `json:"gcQueue"`
	Samples        []point           `json:"samples"`
	RangeSeconds   float64           `json:"rangeSeconds"` // how far back samples and rates go (?range=, 5m by default, at most 24h: past the hour of samples, a point a minute)
	Rates          []ratePoint       `json:"rates"`
	SampleSeconds  float64           `json:"sampleSeconds"`
	// Unreported names figures the page would show that no service reports.
	Unreported []string `json:"unreported"`
}

type namespaceJSON struct {
	Inodes int64 `json:"inodes"`
	Bytes  int64 `json:"bytes"` // every file's length, removed ones awaiting GC included
	// GCBytes: of Bytes, what removed files awaiting GC hold.
	GCBytes uint64 `json:"gcBytes"`
	// Retained: of Bytes, what noncurrent versions, the trash and
	// snapshots hold, as last counted (nil: not counted yet).
	Retained *retainedJSON `json:"retained"`
	Error    string        `json:"error,omitempty"`
}

// serviceJSON is a service registered with mgmtd (metad, gateway, console,
// client).
type serviceJSON struct {
	Kind     string     `json:"kind"`
	ID       string     `json:"id"`
	Addr     string     `json:"addr"`
	Alive    bool       `json:"alive"`
	LastSeen *time.Time `json:"lastSeen"`
	// Cache is a client's cache tiers as it last reported them (absent:
	// no cache).
	Cache *cacheJSON `json:"cache,omitempty"`
}

type cacheJSON struct {
	Memory cacheTierJSON `json:"memory"`
	Disk   cacheTierJSON `json:"disk"`
}

// cacheTierJSON is one tier (capacityBytes 0: the tier is off).
type cacheTierJSON struct {
	CapacityBytes int64  `json:"capacityBytes"`
	UsedBytes     int64  `json:"usedBytes"`
	Hits          uint64 `json:"hits"`
	Misses        uint64 `json:"misses"`
	Evictions     uint64 `json:"evictions"`
	Corrupt       uint64 `json:"corrupt"`
}

func cacheOf(r *mgmtdapi.CacheReport) *cacheJSON {
	if r == nil {
		return nil
	}
	tier := func(t mgmtdapi.CacheTier) cacheTierJSON {
		return cacheTierJSON{CapacityBytes: t.Capacity, UsedBytes: t.Used, Hits: t.Hits, Misses: t.Misses, Evictions: t.Evictions, Corrupt: t.Corrupt}
	}
	return &cacheJSON{Memory: tier(r.Memory), Disk: tier(r.Disk)}
}

func (c *Console) handleOverview(w http.ResponseWriter, r *http.Request) {
	span := 5 * time.Minute
	if v := r.URL.Query().Get("range"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > coarseWindow {
			apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("range %q: give a duration up to %s, such as 5m, 1h or 24h", v, coarseWindow))
			return
		}
		span = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	info, boot, err := c.routingBoot(ctx)
	if err != nil {
		clusterDown(w, err)
		return
	}
	nodes, err := c.mgmtd.ListNodes(ctx)
	if err != nil {
		clusterDown(w, err)
		return
	}
	if !c.sampler.hasPoints() {
		c.sampler.sample(ctx)
	}
	last, _ := c.sampler.stats(ctx, info)
	out := overviewJSON{RoutingVersion: info.Version, Bootstrapping: boot, SampleSeconds: c.cfg.SampleInterval.Seconds(),
		Mgmtds: []mgmtdJSON{}, Storage: []storageNodeJSON{}, Services: []serviceJSON{}}
	out.Health.Reasons = []string{}
	bad := func(state, why string) {
		if state == "unavailable" || out.Health.State != "unavailable" {
			out.Health.State = state
		}
		out.Health.Reasons = append(out.Health.Reasons, why)
	}
	out.Health.State = "healthy"

	primary := false
	for _, m := range nodes.Mgmtds {
		out.Mgmtds = append(out.Mgmtds, mgmtdJSON{ID: m.ID, Addr: m.Addr, Primary: m.Primary})
		primary = primary || m.Primary
	}
	if nodes.Partial || !primary {
		bad("unavailable", "no primary cluster manager is elected: chain states cannot change")
	}

	_, fsOf := fileSystems(nodes.Nodes)
	public := map[routing.TargetID]routing.PublicState{}
	for _, ch := range info.Chains {
		for _, t := range ch.Targets {
			public[t.ID] = t.Public
		}
	}
	held := map[routing.TargetID]bool{}
	for _, id := range nodes.Held {
		held[id] = true
	}
	heldBy := holdersOf(nodes)
	for _, n := range nodes.Nodes {
		sn := storageNodeJSON{Node: uint32(n.Node), Addr: n.Addr, Targets: []nodeTargetJSON{}, Disks: []diskJSON{}}
		switch {
		case nodes.Partial:
			sn.State = "unknown"
		case n.Alive:
			sn.State = "alive"
		case n.LastHeartbeat == 0:
			sn.State = "no heartbeat"
		default:
			sn.State = "failed"
		}
		if n.LastHeartbeat != 0 {
			t := time.Unix(0, n.LastHeartbeat).UTC()
			sn.LastHeartbeat = &t
		}
		if !nodes.Partial && !n.Alive {
			bad("degraded", fmt.Sprintf("storage node %d (%s) is %s", n.Node, dash(n.Addr), sn.State))
		}
		for _, t := range n.Targets {
			tj := nodeTargetJSON{Target: uint32(t.Target), Chain: uint32(t.Chain), Local: t.Local.String(), Held: held[t.Target], HeldBy: heldBy[t.Target]}
			if p, ok := public[t.Target]; ok {
				tj.Public = p.String()
			}
			sn.Targets = append(sn.Targets, tj)
		}
		var st = nodeStatsOf(last, n.Node)
		for i, d := range n.Disks {
			dj := diskJSON{Node: uint32(n.Node), Index: i, Path: d.Path, UsedBytes: d.UsedBytes, FreeBytes: d.FreeBytes,
				CapacityBytes: d.CapacityBytes, SharedFS: len(fsOf[mgmtdapi.FSKey(n.Node, d)].disks), ReadOnly: d.ReadOnly, Full: d.Full}
			if f, ok := d.UsedFraction(); ok {
				pct := 100 * f
				dj.UsedPercent = &pct
			}
			if st != nil && i < len(st.Disks) {
				dj.Chunks = st.Disks[i].Chunks
				dj.Reason = st.Disks[i].ReadOnlyReason
			}
			if d.ReadOnly {
				bad("degraded", fmt.Sprintf("disk %s of storage node %d is read-only after a write error%s", d.Path, n.Node, prefixed(": ", dj.Reason)))
			}
			if d.Full {
				bad("degraded", fmt.Sprintf("disk %s of storage node %d is full: its chains refuse writes until space returns (remove files, then flyfs admin gc)", d.Path, n.Node))
			}
			sn.Disks = append(sn.Disks, dj)
		}
		out.Storage = append(out.Storage, sn)
	}
	slices.SortFunc(out.Storage, func(a, b storageNodeJSON) int { return cmp.Compare(a.Node, b.Node) })
	var almostFull []string
	out.Capacity, almostFull = capacityOf(nodes.Nodes)
	for _, why := range almostFull {
		bad("degraded", why)
	}

	var unavailable, degraded []routing.ChainID
	var offline []string
	for _, ch := range info.Chains {
		out.Chains.Total++
		for _, t := range ch.Targets {
			if t.Public == routing.Offline {
				why := ""
				if held[t.ID] {
					why = ", held offline by an admin"
					if by := heldBy[t.ID]; by != "" {
						why = ", held offline by " + by
					}
				}
				offline = append(offline, fmt.Sprintf("%d (chain %d, node %d%s)", t.ID, ch.ID, t.Node, why))
			}
		}
		switch chainState(ch) {
		case "unavailable":
			out.Chains.Unavailable++
			unavailable = append(unavailable, ch.ID)
		case "degraded":
			out.Chains.Degraded++
			degraded = append(degraded, ch.ID)
		}
		for _, t := range ch.Targets {
			if t.Public == routing.Syncing {
				out.Chains.Syncing++
			}
		}
	}
	if len(unavailable) > 0 {
		bad("unavailable", fmt.Sprintf("%d chain(s) have no serving replica (data on them cannot be read or written): %s", len(unavailable), idList(unavailable)))
	}
	if len(degraded) > 0 {
		bad("degraded", fmt.Sprintf("%d chain(s) run with fewer replicas than configured: %s", len(degraded), idList(degraded)))
	}
	if len(offline) > 0 {
		slices.Sort(offline)
		bad("degraded", fmt.Sprintf("%d target(s) offline: %s", len(offline), strings.Join(offline, ", ")))
	}
	if out.Chains.Total == 0 {
		bad("unavailable", "no chains are configured: nothing can be stored")
	}

	metads := 0
	if svcs, err := c.mgmtd.Services(ctx, ""); err == nil {
		for _, s := range svcs.Services {
			sj := serviceJSON{Kind: s.Kind, ID: s.ID, Addr: s.Addr, Alive: s.Alive, Cache: cacheOf(s.Cache)}
			if s.LastSeen != 0 {
				t := time.Unix(0, s.LastSeen).UTC()
				sj.LastSeen = &t
			}
			if s.Kind == mgmtdapi.KindMetad && s.Alive {
				metads++
			}
			out.Services = append(out.Services, sj)
		}
		slices.SortFunc(out.Services, func(a, b serviceJSON) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
		})
		if metads == 0 && svcs.Complete {
			bad("unavailable", "no metadata service (metad) is registered: the namespace cannot be used")
		}
	} else {
		out.Unreported = append(out.Unreported, "registered services (metad, gateways): "+err.Error())
	}
	tot, err := c.namespaceTotalsErr(ctx)
	nj := &namespaceJSON{Inodes: tot.inodes, Bytes: tot.bytes, GCBytes: tot.gcBytes, Retained: c.retained.get()}
	if err != nil {
		nj.Error = err.Error()
		bad("unavailable", "the metadata service does not answer: "+err.Error())
	} else {
		gc := int(tot.gc)
		out.GCQueue = &gc
	}
	out.Namespace = nj
	out.Samples, out.Rates = c.sampler.series(time.Now().Add(-span))
	out.RangeSeconds = span.Seconds()
	if out.Unreported == nil {
		out.Unreported = []string{} // never null in the JSON: the page reads its length
	}
	writeJSON(w, http.StatusOK, out)
}

func nodeStatsOf(ns *nodeStats, id routing.NodeID) *client.NodeStats {
	if ns == nil {
		return nil
	}
	return ns.nodes[id]
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// idList names up to ten ids, then how many more.
func idList(ids []routing.ChainID) string {
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(ids)-10)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	return b.String()
}

type recoveryJSON struct {
	From         uint32   `json:"from"`
	ChunksDone   uint64   `json:"chunksDone"`
	Chunks       uint64   `json:"chunks"`
	BytesDone    uint64   `json:"bytesDone"`
	Bytes        uint64   `json:"bytes"` // to send in all (0: not reported)
	BytesPerSec  *float64 `json:"bytesPerSec"`
	ChunksPerSec *float64 `json:"chunksPerSec"`
	SecondsLeft  *float64 `json:"secondsLeft"`
}

type targetJSON struct {
	ID       uint32        `json:"id"`
	Node     uint32        `json:"node"`
	NodeAddr string        `json:"nodeAddr"`
	Disk     int           `json:"disk"`
	Public   string        `json:"public"`
	Local    string        `json:"local"`
	Held     *bool         `json:"held"`             // held offline by an admin (null: mgmtd did not say)
	HeldBy   string        `json:"heldBy,omitempty"` // who held it
	Recovery *recoveryJSON `json:"recovery"`
}

type chainJSON struct {
	ID      uint32       `json:"id"`
	Version uint32       `json:"version"`
	State   string       `json:"state"`
	Tables  []uint32     `json:"tables"`
	Targets []targetJSON `json:"targets"`
}

type tableJSON struct {
	ID       uint32 `json:"id"`
	Versions int    `json:"versions"`
	Chains   int    `json:"chains"` // in the newest version
}

type chainsJSON struct {
	RoutingVersion uint64      `json:"routingVersion"`
	Bootstrapping  bool        `json:"bootstrapping"`
	Tables         []tableJSON `json:"tables"`
	Total          int         `json:"total"`
	Degraded       int         `json:"degraded"`
	Matched        int         `json:"matched"`
	Offset         int         `json:"offset"`
	Limit          int         `json:"limit"`
	Chains         []chainJSON `json:"chains"`
}

func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// handleChains lists chains, unhealthy first then by id, a page at a time:
// ?offset=&limit= (≤ 1000), ?state=all|degraded, ?table=ID (its newest
// version), ?q=N (chains with id N or a target or node N).
func (c *Console) handleChains(w http.ResponseWriter, r *http.Request) {
	offset, err := queryInt(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	table, err := queryInt(r, "table", 0, 0, 1<<31-1)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	state := r.URL.Query().Get("state")
	if state != "" && state != "all" && state != "degraded" {
		apiError(w, http.StatusBadRequest, "bad_request", "state: want all or degraded")
		return
	}
	var q uint64
	hasQ := false
	if qs := strings.TrimSpace(r.URL.Query().Get("q")); qs != "" {
		if q, err = strconv.ParseUint(qs, 10, 32); err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", "q: search by a chain, target or node id (a number)")
			return
		}
		hasQ = true
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	info, boot, err := c.routingBoot(ctx)
	if err != nil {
		clusterDown(w, err)
		return
	}
	inTables := map[routing.ChainID][]uint32{}
	out := chainsJSON{RoutingVersion: info.Version, Bootstrapping: boot, Offset: offset, Limit: limit, Tables: []tableJSON{}, Chains: []chainJSON{}}
	tids := make([]uint32, 0, len(info.Tables))
	for id := range info.Tables {
		tids = append(tids, id)
	}
	slices.Sort(tids)
	var only map[routing.ChainID]bool
	for _, id := range tids {
		chains, v, _ := info.LatestTable(id)
		out.Tables = append(out.Tables, tableJSON{ID: id, Versions: int(v), Chains: len(chains)})
		for _, ch := range chains {
			inTables[ch] = append(inTables[ch], id)
		}
		if uint32(table) == id {
			only = map[routing.ChainID]bool{}
			for _, ch := range chains {
				only[ch] = true
			}
		}
	}
	if table != 0 && only == nil {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no chain table %d", table))
		return
	}
	var list []*routing.Chain
	for _, ch := range info.Chains {
		out.Total++
		st := chainState(ch)
		if st != "ok" {
			out.Degraded++
		}
		if only != nil && !only[ch.ID] || state == "degraded" && st == "ok" {
			continue
		}
		if hasQ && !chainMatches(ch, q) {
			continue
		}
		list = append(list, ch)
	}
	rank := map[string]int{"unavailable": 0, "degraded": 1, "ok": 2}
	slices.SortFunc(list, func(a, b *routing.Chain) int {
		if d := rank[chainState(a)] - rank[chainState(b)]; d != 0 {
			return d
		}
		return cmp.Compare(a.ID, b.ID)
	})
	out.Matched = len(list)
	if offset > len(list) {
		offset = len(list)
	}
	page := list[offset:min(len(list), offset+limit)]
	var last, prev *nodeStats
	if slices.ContainsFunc(page, func(ch *routing.Chain) bool {
		return slices.ContainsFunc(ch.Targets, func(t routing.Target) bool { return t.Public == routing.Syncing })
	}) {
		last, prev = c.sampler.stats(ctx, info)
	}
	var held map[routing.TargetID]bool // nil: unknown
	var heldBy map[routing.TargetID]string
	if nodes, err := c.mgmtd.ListNodes(ctx); err == nil {
		held, heldBy = map[routing.TargetID]bool{}, holdersOf(nodes)
		for _, id := range nodes.Held {
			held[id] = true
		}
	}
	for _, ch := range page {
		cj := chainJSON{ID: uint32(ch.ID), Version: ch.Version, State: chainState(ch), Tables: inTables[ch.ID], Targets: []targetJSON{}}
		if cj.Tables == nil {
			cj.Tables = []uint32{}
		}
		for _, t := range ch.Targets {
			addr, _ := info.Addr(t.Node)
			tj := targetJSON{ID: uint32(t.ID), Node: uint32(t.Node), NodeAddr: addr, Disk: t.Disk, Public: t.Public.String(), Local: t.Local.String()}
			if t.Local == 0 {
				tj.Local = "unknown"
			}
			if held != nil {
				h := held[t.ID]
				tj.Held, tj.HeldBy = &h, heldBy[t.ID]
			}
			if t.Public == routing.Syncing {
				tj.Recovery = recoveryOf(t.ID, last, prev)
			}
			cj.Targets = append(cj.Targets, tj)
		}
		out.Chains = append(out.Chains, cj)
	}
	writeJSON(w, http.StatusOK, out)
}

func chainMatches(ch *routing.Chain, q uint64) bool {
	if uint64(ch.ID) == q {
		return true
	}
	for _, t := range ch.Targets {
		if uint64(t.ID) == q || uint64(t.Node) == q {
			return true
		}
	}
	return false
}

// recoveryOf reports the recovery feeding target id, with rates from the
// two newest stats samples when both saw it.
func recoveryOf(id routing.TargetID, last, prev *nodeStats) *recoveryJSON {
	if last == nil {
		return nil
	}
	p, ok := last.sync[id]
	if !ok {
		return nil
	}
	rj := &recoveryJSON{From: uint32(p.From), ChunksDone: p.ChunksDone, Chunks: p.Chunks, BytesDone: p.BytesDone, Bytes: p.Bytes}
	if prev != nil {
		if q, ok := prev.sync[id]; ok && q.From == p.From && q.ChunksDone <= p.ChunksDone {
			if dt := last.at.Sub(prev.at).Seconds(); dt > 0 {
				br := float64(p.BytesDone-q.BytesDone) / dt
				cr := float64(p.ChunksDone-q.ChunksDone) / dt
				rj.BytesPerSec, rj.ChunksPerSec = &br, &cr
				switch {
				case br > 0 && p.Bytes >= p.BytesDone && p.Bytes > 0:
					left := float64(p.Bytes-p.BytesDone) / br
					rj.SecondsLeft = &left
				case cr > 0 && p.Chunks >= p.ChunksDone:
					left := float64(p.Chunks-p.ChunksDone) / cr
					rj.SecondsLeft = &left
				}
			}
		}
	}
	return rj
}

// handleHold takes a target offline by hand (hold) or releases it, through
// the primary mgmtd, like `flyfs admin offline-target/online-target`.
func (c *Console) handleHold(hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
		if err != nil || id == 0 {
			apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q is not a target id", r.PathValue("id")))
			return
		}
		// A hold that would leave a chain with no serving replica is refused
		// (409 last_serving); the admin forces it by typing the chain's id.
		var body struct {
			Force bool   `json:"force"`
			Chain uint32 `json:"chain"`
		}
		if r.ContentLength != 0 && !readJSON(w, r, &body) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		target := routing.TargetID(id)
		if hold && body.Force {
			info, _, err := c.routingBoot(ctx)
			if err != nil {
				clusterDown(w, err)
				return
			}
			chain := chainOfTarget(info, target)
			if chain == nil {
				apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no chain has target %d", id))
				return
			}
			if routing.ChainID(body.Chain) != chain.ID {
				apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("to force target %d offline, give the id of its chain (%d)", id, chain.ID))
				return
			}
		}
		resp, err := c.mgmtd.SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: target, Held: hold, Force: hold && body.Force, By: consoleWho(r)})
		switch rpc.CodeOf(err) {
		case mgmtdapi.CodeUnknownTarget:
			apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no chain has target %d", id))
			return
		case mgmtdapi.CodeLastServing:
			msg := err.Error()
			var re *rpc.Error
			if errors.As(err, &re) {
				msg = re.Message
			}
			apiError(w, http.StatusConflict, "last_serving", msg)
			return
		}
		if err != nil {
			clusterDown(w, err)
			return
		}
		c.log.Info("console: target hold changed", "target", id, "held", hold, "forced", hold && body.Force, "by", sessionOf(r).who.AccessKey)
		writeJSON(w, http.StatusOK, map[string]any{"target": id, "held": hold, "routingVersion": resp.RoutingVersion})
	}
}

// chainOfTarget is the chain that has target t (nil: none).
func chainOfTarget(info *routing.Info, t routing.TargetID) *routing.Chain {
	for _, c := range info.Chains {
		if c.Index(t) >= 0 {
			return c
		}
	}
	return nil
}

// nodeHoldJSON is one target of a node's maintenance.
type nodeHoldJSON struct {
	Target       uint32 `json:"target"`
	Chain        uint32 `json:"chain"`
	Changed      bool   `json:"changed"`
	Skipped      string `json:"skipped,omitempty"`
	ChainServing int    `json:"chainServing"`
}

// handleMaintenance puts a storage node into maintenance (POST, {"dryRun":
// true} to preview) or ends it (DELETE), like `flyfs admin maintenance`.
func (c *Console) handleMaintenance(held bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
		if err != nil || id == 0 {
			apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q is not a node id", r.PathValue("id")))
			return
		}
		var body struct {
			DryRun bool `json:"dryRun"`
		}
		if r.ContentLength != 0 && !readJSON(w, r, &body) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		resp, err := c.mgmtd.SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: routing.NodeID(id), Held: held, DryRun: held && body.DryRun, By: consoleWho(r)})
		if err != nil {
			clusterDown(w, err)
			return
		}
		if len(resp.Targets) == 0 {
			apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("node %d has no targets in any chain", id))
			return
		}
		out := make([]nodeHoldJSON, 0, len(resp.Targets))
		for _, t := range resp.Targets {
			out = append(out, nodeHoldJSON{Target: uint32(t.Target), Chain: uint32(t.Chain), Changed: t.Changed, Skipped: t.Skipped, ChainServing: t.ChainServing})
		}
		if !(held && body.DryRun) {
			c.log.Info("console: node maintenance changed", "node", id, "held", held, "by", sessionOf(r).who.AccessKey)
		}
		writeJSON(w, http.StatusOK, map[string]any{"node": id, "held": held, "dryRun": held && body.DryRun, "targets": out, "routingVersion": resp.RoutingVersion})
	}
}

// consoleWho names the signed-in key, for the audit trail.
func consoleWho(r *http.Request) string { return "console: " + sessionOf(r).who.AccessKey }

// auditAction records an action the console did itself in mgmtd's audit
// trail (holds and maintenance mgmtd records on its own). A failure to record
// is logged, not the action's.
func (c *Console) auditAction(r *http.Request, action string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := c.mgmtd.Audit(ctx, mgmtdapi.AuditRecord{By: consoleWho(r), Action: action, Result: "ok"}); err != nil {
		c.log.Warn("console: audit record not written", "action", action, "err", err)
	}
}

// auditJSON is one record of the audit trail.
type auditJSON struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Action string    `json:"action"`
	Result string    `json:"result"`
}

// handleAudit lists the audit trail, newest first: ?limit= (≤ 1000),
// ?before= (an RFC 3339 time) for older pages.
func (c *Console) handleAudit(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 200, 1, 1000)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	req := &mgmtdapi.ListAuditReq{Limit: limit}
	if v := r.URL.Query().Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", "before: an RFC 3339 time")
			return
		}
		req.Before = t.UnixNano()
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.mgmtd.ListAudit(ctx, req)
	if err != nil {
		clusterDown(w, err)
		return
	}
	out := make([]auditJSON, 0, len(resp.Records))
	for _, rec := range resp.Records {
		out = append(out, auditJSON{At: time.Unix(0, rec.At).UTC(), By: rec.By, Action: rec.Action, Result: rec.Result})
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": out})
}

// holdersOf maps each held target to who held it ("" when not recorded).
func holdersOf(nodes *mgmtdapi.ListNodesResp) map[routing.TargetID]string {
	out := map[routing.TargetID]string{}
	for _, h := range nodes.Holds {
		out[h.Target] = h.By
	}
	return out
}
