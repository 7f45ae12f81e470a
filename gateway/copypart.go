package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Parts copied from objects (UploadPartCopy) share chunks instead of moving
// bytes. The first copy from an object clones it into the upload's
// directory (metad's Clone: no byte moves, and the clone keeps the object's
// bytes as they were whatever happens to the object after); the part record
// names the clone and the offset. The part's ETag is the MD5 of its bytes,
// as S3's, so those are read once (not written). When the completed parts
// are one clone end to end, in order (what `aws s3 cp` of a large object
// between keys sends), the clone is the completed object; otherwise Complete
// assembles, copying these parts' bytes from the clone.

// pinnedName is the clone of object in at its generation.
func pinnedName(in metaapi.Inode) string { return fmt.Sprintf("src.%d.%d", in.ID, in.Gen) }

// copyPartShared stores part n of u as the range [start, start+length) of
// a clone of sin, or returns nil when the bytes must be copied instead (the
// object is open for writing, reads through the most layers a file may, or
// the part is empty).
func (g *Gateway) copyPartShared(ctx context.Context, rc *reqCtx, u *upload, n int, sin metaapi.Inode, start, length int64) (*partRecord, error) {
	if length <= 0 || sin.Type != metaapi.TypeFile {
		return nil, nil
	}
	name := pinnedName(sin)
	pin, err := g.meta.Lookup(ctx, u.dir.ID, name)
	if errnoOf(err) == syscall.ENOENT {
		pin, err = g.meta.Clone(ctx, sin.ID, u.dir.ID, name, false, fileMode, rc.creds())
		if errnoOf(err) == syscall.EEXIST { // another part's copy made it meanwhile
			pin, err = g.meta.Lookup(ctx, u.dir.ID, name)
		}
	}
	switch errnoOf(err) {
	case 0:
	case syscall.EBUSY, syscall.EINVAL:
		return nil, nil
	default:
		return nil, err
	}
	if uint64(start+length) > pin.Length {
		return nil, nil // the object changed between its stat and the clone: copy what the stat saw
	}
	if _, err := g.stride(ctx, u, length); err != nil {
		return nil, err
	}
	f, err := g.fs.OpenInode(ctx, pin, nil)
	if err != nil {
		return nil, err
	}
	// Read in the PUT pipeline's 8 MiB buffers (io.Copy's own 32 KiB would
	// be a client read per 32 KiB) and hashed in the lanes beside
	// concurrent uploads' and copies'.
	m := etagMD5.New()
	bp := bufPool.Get().(*[]byte)
	_, err = io.CopyBuffer(m, &fileReader{ctx: ctx, f: f, off: start, end: start + length}, *bp)
	bufPool.Put(bp)
	if err != nil {
		return nil, err
	}
	rec := &partRecord{Size: length, ETag: hex.EncodeToString(m.Sum(nil)), Src: name, SrcOff: start, Modified: time.Now().UTC()}
	old, _ := g.loadPart(ctx, u, n)
	v, _ := json.Marshal(rec)
	if err := g.meta.SetXattr(ctx, u.dir.ID, partXattr(n), v, 0); err != nil {
		return nil, err
	}
	if old != nil && old.File != "" {
		g.meta.Unlink(ctx, metaapi.RemoveReq{Parent: u.dir.ID, Name: old.File})
	}
	return rec, nil
}

// wholeSharedCopy reports whether the completed parts are parts 1..N of
// one clone, end to end from its first byte to its last, and returns it.
func (g *Gateway) wholeSharedCopy(ctx context.Context, u *upload, recs []*partRecord, nums []int) (metaapi.Inode, bool) {
	if len(recs) == 0 || recs[0].Src == "" {
		return metaapi.Inode{}, false
	}
	var off int64
	for i, rec := range recs {
		if rec.Src != recs[0].Src || rec.SrcOff != off || nums[i] != i+1 {
			return metaapi.Inode{}, false
		}
		off += rec.Size
	}
	pin, err := g.meta.Lookup(ctx, u.dir.ID, recs[0].Src)
	if err != nil || pin.Length != uint64(off) {
		return metaapi.Inode{}, false
	}
	return pin, true
}
