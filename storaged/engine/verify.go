package engine

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Chunks         int   // records checked
	Bytes          int64 // content bytes read and verified
	CorruptRecords int   // records that do not decode or validate
	ChecksumErrors int   // chunks whose content does not match its CRCs
	SharedBlocks   int   // blocks claimed by more than one record
	Inconsistent   int   // records the in-memory index or allocator disagrees with
	Problems       []string
}

// OK reports whether Verify found nothing wrong.
func (r VerifyReport) OK() bool {
	return r.CorruptRecords == 0 && r.ChecksumErrors == 0 && r.SharedBlocks == 0 && r.Inconsistent == 0
}

func (r *VerifyReport) problem(format string, args ...any) {
	if len(r.Problems) < 100 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Verify checks every committed record: it decodes, its block is claimed by
// no other record and marked used in the allocator, the in-memory index
// agrees with it, and its whole content matches its CRCs. Run it on a
// quiescent engine: concurrent updates show up as inconsistencies.
func (e *Engine) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	if err := e.begin(); err != nil {
		return rep, err
	}
	defer e.end()
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixChunk}, UpperBound: []byte{prefixChunk + 1}})
	if err != nil {
		return rep, fmt.Errorf("engine: verify: %w", err)
	}
	defer it.Close()
	owner := map[blockLoc]Key{}
	buf := make([]byte, verifyRead)
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Chunks++
		k, kok := decodeKey(it.Key())
		if !kok {
			rep.CorruptRecords++
			rep.problem("malformed key %x", it.Key())
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return rep, fmt.Errorf("engine: verify: %w", err)
		}
		r, err := decodeRecord(val, e.seg)
		if err != nil {
			rep.CorruptRecords++
			rep.problem("%v: %v", k, err)
			continue
		}
		cur := e.current(k)
		if cur == nil || cur.meta != r.meta || cur.loc() != r.loc {
			rep.Inconsistent++
			rep.problem("%v: index does not match record", k)
		}
		if r.meta.Len == 0 {
			continue
		}
		if r.loc.class == inlineClass {
			if _, err := e.loadInline(k, &version{meta: r.meta, crcs: r.crcs, inline: true, iv: r.loc.iv}); err != nil {
				rep.ChecksumErrors++
				rep.problem("%v: %v", k, err)
				continue
			}
			rep.Bytes += int64(r.meta.Len)
			continue
		}
		if other, dup := owner[r.loc.place()]; dup {
			rep.SharedBlocks++
			rep.problem("%v: block %v also used by %v", k, r.loc, other)
		}
		owner[r.loc.place()] = k
		if !e.alloc.isUsed(r.loc) {
			rep.Inconsistent++
			rep.problem("%v: block %v is free in the allocator", k, r.loc)
		}
		v := &version{meta: r.meta, crcs: r.crcs, blk: &block{loc: r.loc}}
		for off := int64(0); off < int64(r.meta.Len); off += int64(len(buf)) {
			p := buf[:min(int64(len(buf)), int64(r.meta.Len)-off)]
			if err := e.readVerified(k, v, p, off, false); err != nil {
				rep.ChecksumErrors++
				rep.problem("%v: %v", k, err)
				break
			}
			rep.Bytes += int64(len(p))
		}
	}
	return rep, nil
}
