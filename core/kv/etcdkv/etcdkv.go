// Package etcdkv is the KV engine on a replicated etcd cluster, for clusters of
// many flyfs processes (several mgmtd and metad) up to etcd's database quota.
//
// Serializable by optimistic concurrency, checked by etcd itself: a transaction
// reads at one etcd revision (its read version) and commits its buffered writes
// in one etcd Txn guarded by compares:
//   - every key read: its mod revision is still the one seen (0 when absent), which
//     catches updates, creations and deletions;
//   - every range read: no key in the range has a mod revision after the read
//     version (inserts and updates), plus the per-key compare above for each key
//     seen in it (deletions).
//
// Limits, against FoundationDB: etcd keeps the whole database in memory-mapped
// bbolt with a default quota of 2 GiB (8 GiB recommended maximum), enough for
// tens of millions of small inodes but not billions; every write goes through
// one Raft group (no sharding), so write throughput is that of one leader; a
// transaction is bounded by the server's --max-txn-ops (default 128: run etcd
// with --max-txn-ops=100000 or more for flyfs's large transactions) and
// --max-request-bytes (default 1.5 MiB); history is kept until compaction, and a
// transaction whose read revision was compacted fails with ErrTooOld. FoundationDB
// shards, scales to petabytes of metadata and has none of these per-transaction
// op limits (10 MB per transaction).
//
// Versionstamps come from a counter key bumped in the same etcd Txn (guarded by
// its mod revision), so stamping transactions serialise on it; their stamps grow
// with commit order but are not etcd revisions.
package etcdkv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Options configure the engine.
type Options struct {
	Endpoints   []string
	Prefix      string // every key is stored under it; default "/flyfs/"
	DialTimeout time.Duration
	KV          kv.Options
}

type engine struct {
	cli      *clientv3.Client
	own      bool // we made cli and close it
	prefix   []byte
	stampKey string
}

// Open connects to etcd.
func Open(ctx context.Context, opts Options) (*kv.DB, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcdkv: no endpoints given (--etcd-endpoints)")
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          opts.Endpoints,
		DialTimeout:        opts.DialTimeout,
		MaxCallSendMsgSize: 64 << 20,
		MaxCallRecvMsgSize: 64 << 20,
		Context:            ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("etcdkv: connect %v: %w", opts.Endpoints, err)
	}
	// Fail fast on a wrong endpoint instead of at the first transaction.
	sctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	if _, err := cli.Get(sctx, "\x00flyfs-ping"); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcdkv: reach %v: %w", opts.Endpoints, err)
	}
	return OpenClient(cli, true, opts), nil
}

// OpenClient uses an existing etcd client; closeClient says whether closing the
// DB closes it.
func OpenClient(cli *clientv3.Client, closeClient bool, opts Options) *kv.DB {
	if opts.Prefix == "" {
		opts.Prefix = "/flyfs/"
	}
	p := []byte(opts.Prefix)
	return kv.New(&engine{cli: cli, own: closeClient, prefix: p, stampKey: string(p) + "\x00meta/versionstamp"}, opts.KV)
}

// dataKey maps a user key into the engine's key space: prefix + 0x01 + key.
func (e *engine) dataKey(k []byte) string {
	return string(e.prefix) + "\x01" + string(k)
}

func (e *engine) dataEnd(k []byte) string {
	if k == nil {
		return string(e.prefix) + "\x02"
	}
	return e.dataKey(k)
}

func (e *engine) userKey(k []byte) []byte { return bytes.Clone(k[len(e.prefix)+1:]) }

func (e *engine) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	// A linearizable read returns the newest revision: our read version.
	resp, err := e.cli.Get(ctx, string(e.prefix)+"\x00meta/rv", clientv3.WithCountOnly())
	if err != nil {
		return nil, mapErr(err, "get read version")
	}
	return &snapshot{e: e, rv: resp.Header.Revision, seen: map[string]int64{}}, nil
}

func (e *engine) Close() error {
	if e.own {
		return e.cli.Close()
	}
	return nil
}

// snapshot reads at revision rv and remembers the mod revision of every key it
// saw, and which ranges it saw whole, for the commit's compares.
type snapshot struct {
	e       *engine
	rv      int64
	seen    map[string]int64 // engine key -> mod revision at rv (0: absent)
	covered []kv.KeyRange    // user ranges whose every key at rv is in seen
}

func (s *snapshot) Version() int64 { return s.rv }
func (s *snapshot) Release()       {}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	k := s.e.dataKey(key)
	resp, err := s.e.cli.Get(ctx, k, clientv3.WithRev(s.rv))
	if err != nil {
		return nil, false, mapErr(err, "get")
	}
	if len(resp.Kvs) == 0 {
		s.seen[k] = 0
		return nil, false, nil
	}
	x := resp.Kvs[0]
	s.seen[k] = x.ModRevision
	v := x.Value
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

func (s *snapshot) Scan(ctx context.Context, begin, end []byte, limit int, reverse bool) ([]kv.KeyValue, bool, error) {
	order := clientv3.SortAscend
	if reverse {
		order = clientv3.SortDescend
	}
	resp, err := s.e.cli.Get(ctx, s.e.dataKey(begin),
		clientv3.WithRange(s.e.dataEnd(end)), clientv3.WithRev(s.rv),
		clientv3.WithLimit(int64(limit)), clientv3.WithSort(clientv3.SortByKey, order))
	if err != nil {
		return nil, false, mapErr(err, "range")
	}
	out := make([]kv.KeyValue, 0, len(resp.Kvs))
	for _, x := range resp.Kvs {
		s.seen[string(x.Key)] = x.ModRevision
		v := x.Value
		if v == nil {
			v = []byte{}
		}
		out = append(out, kv.KeyValue{Key: s.e.userKey(x.Key), Value: v})
	}
	// The span this page covered whole.
	span := kv.KeyRange{Begin: bytes.Clone(begin), End: bytes.Clone(end)}
	if resp.More && len(out) > 0 {
		last := out[len(out)-1].Key
		if reverse {
			span.Begin = last
		} else {
			span.End = kv.KeyAfter(last)
		}
	}
	s.covered = append(s.covered, span)
	return out, resp.More, nil
}

func (s *snapshot) isCovered(r kv.KeyRange) bool {
	for _, c := range s.covered {
		if bytes.Compare(c.Begin, r.Begin) <= 0 && compareEnd(c.End, r.End) >= 0 {
			return true
		}
	}
	return false
}

func compareEnd(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}

func (e *engine) Commit(ctx context.Context, req *kv.CommitRequest) (int64, error) {
	var cmps []clientv3.Cmp
	if req.HasReads() {
		s, ok := req.Snapshot.(*snapshot)
		if !ok || s == nil {
			return 0, kv.Errorf(kv.CodeInvalid, "etcdkv: commit without this engine's snapshot")
		}
		var err error
		if cmps, err = e.readCompares(ctx, s, req); err != nil {
			return 0, err
		}
	}
	ops := e.writeOps(req)
	if len(req.Stamped) > 0 {
		resp, err := e.cli.Get(ctx, e.stampKey)
		if err != nil {
			return 0, mapErr(err, "get versionstamp counter")
		}
		var last uint64
		var mod int64
		if len(resp.Kvs) == 1 && len(resp.Kvs[0].Value) == 8 {
			last, mod = binary.BigEndian.Uint64(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
		}
		next := last + 1
		req.Stamp = kv.MakeStamp(int64(next), 0)
		var nb [8]byte
		binary.BigEndian.PutUint64(nb[:], next)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(e.stampKey), "=", mod))
		ops = append(ops, clientv3.OpPut(e.stampKey, string(nb[:])))
		for _, op := range req.Stamped {
			k, v := op.Resolve(req.Stamp)
			ops = append(ops, clientv3.OpPut(e.dataKey(k), string(v)))
		}
	}
	resp, err := e.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, mapErr(err, "commit")
	}
	if !resp.Succeeded {
		return 0, kv.Errorf(kv.CodeConflict, "a key or range read at revision %d changed", req.ReadVersion)
	}
	return resp.Header.Revision, nil
}

// readCompares turns the read set into etcd compares, first fetching (at the
// read revision) what the transaction named without reading.
func (e *engine) readCompares(ctx context.Context, s *snapshot, req *kv.CommitRequest) ([]clientv3.Cmp, error) {
	for _, k := range req.ReadKeys {
		if _, ok := s.seen[e.dataKey(k)]; !ok {
			if _, _, err := s.Get(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range req.ReadRanges {
		if s.isCovered(r) {
			continue
		}
		resp, err := e.cli.Get(ctx, e.dataKey(r.Begin), clientv3.WithRange(e.dataEnd(r.End)),
			clientv3.WithRev(s.rv), clientv3.WithKeysOnly())
		if err != nil {
			return nil, mapErr(err, "range for conflict check")
		}
		for _, x := range resp.Kvs {
			s.seen[string(x.Key)] = x.ModRevision
		}
		s.covered = append(s.covered, r)
	}
	need := map[string]bool{}
	for _, k := range req.ReadKeys {
		need[e.dataKey(k)] = true
	}
	var cmps []clientv3.Cmp
	for _, r := range req.ReadRanges {
		b, en := e.dataKey(r.Begin), e.dataEnd(r.End)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(b).WithRange(en), "<", s.rv+1))
		for k, mod := range s.seen {
			if mod != 0 && k >= b && k < en {
				need[k] = true
			}
		}
	}
	keys := make([]string, 0, len(need))
	for k := range need {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", s.seen[k]))
	}
	return cmps, nil
}

// writeOps turns the normalised writes into etcd ops. etcd refuses a Txn whose
// delete range overlaps a put, so clear ranges are split around the sets in them.
func (e *engine) writeOps(req *kv.CommitRequest) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(req.Sets)+len(req.Clears)+len(req.ClearRanges))
	si := 0
	for _, r := range req.ClearRanges {
		begin := r.Begin
		for si < len(req.Sets) && bytes.Compare(req.Sets[si].Key, r.Begin) < 0 {
			si++
		}
		for ; si < len(req.Sets) && r.Contains(req.Sets[si].Key); si++ {
			k := req.Sets[si].Key
			if bytes.Compare(begin, k) < 0 {
				ops = append(ops, clientv3.OpDelete(e.dataKey(begin), clientv3.WithRange(e.dataKey(k))))
			}
			begin = kv.KeyAfter(k)
		}
		if compareEnd(begin, r.End) < 0 {
			ops = append(ops, clientv3.OpDelete(e.dataKey(begin), clientv3.WithRange(e.dataEnd(r.End))))
		}
	}
	for _, k := range req.Clears {
		ops = append(ops, clientv3.OpDelete(e.dataKey(k)))
	}
	for _, x := range req.Sets {
		ops = append(ops, clientv3.OpPut(e.dataKey(x.Key), string(x.Value)))
	}
	return ops
}

// mapErr maps etcd client errors onto kv error codes.
func mapErr(err error, what string) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted), errors.Is(err, rpctypes.ErrGRPCCompacted):
		return kv.Wrap(kv.CodeTooOld, err, "etcd "+what)
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrGRPCTooManyOps),
		errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrGRPCRequestTooLarge):
		return kv.Wrap(kv.CodeTxnTooLarge, err, "etcd "+what+" (raise --max-txn-ops / --max-request-bytes)")
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("etcdkv: %s: %w", what, err)
	case what == "commit":
		// The Txn may have been applied before the connection failed.
		return kv.Wrap(kv.CodeMaybeCommitted, err, "etcd "+what)
	default:
		return kv.Wrap(kv.CodeRetryable, err, "etcd "+what)
	}
}
