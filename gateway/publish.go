package gateway

import (
	"context"
	"net/http"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// ensureParent returns the directory that holds o, creating missing
// directories as implicit ones in one transaction.
func (g *Gateway) ensureParent(ctx context.Context, o objectPath, cr client.Creds) (metaapi.Inode, error) {
	if len(o.segs) == 1 {
		return g.bucketInode(ctx, o.bucket)
	}
	in, err := g.meta.MkdirAll(ctx, o.parentPath(), dirMode, cr, true)
	return in, nsError(err, keyParents, o.key)
}

// publish renames the staging file (or directory) src into o's place in one
// metadata transaction; the preconditions are decided in that transaction.
// In a versioned bucket it sets x-amz-version-id in h (nil: nowhere) to
// the id the new version got.
func (g *Gateway) publish(ctx context.Context, h http.Header, srcParent uint64, srcName string, o objectPath, cr client.Creds, cond writeCond, pruneSrc bool) error {
	var srcIno uint64
	if _, st, err := g.bucketVersioning(ctx, o.bucket); err == nil && st != metaapi.Unversioned && h != nil && !o.dir {
		if in, err := g.meta.Lookup(ctx, srcParent, srcName); err == nil {
			srcIno = in.ID
		}
	}
	err := g.rename(ctx, srcParent, srcName, o, cr, cond, pruneSrc)
	if err == nil && srcIno != 0 {
		if id := g.publishedVersion(ctx, o.bucket, srcIno); id != "" {
			h.Set("X-Amz-Version-Id", id)
		}
	}
	return err
}

// rename is publish's transaction, retried when the parent it made vanished.
func (g *Gateway) rename(ctx context.Context, srcParent uint64, srcName string, o objectPath, cr client.Creds, cond writeCond, pruneSrc bool) error {
	scope := keyWrite
	if cond.ifNoneMatch == "*" {
		scope = keyWriteNew
	}
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		parent, err := g.ensureParent(ctx, o, cr)
		if err != nil {
			return err
		}
		req := metaapi.RenameReq{SrcParent: srcParent, SrcName: srcName, DstParent: parent.ID, DstName: o.name(), PruneImplicit: pruneSrc, Lock: cond.lock}
		if cond.ifNoneMatch == "*" {
			req.Flags = metaapi.RenameNoReplace
		}
		if cond.ifMatch != "" {
			cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
			if err != nil {
				return err
			}
			if (cur.Type == metaapi.TypeDir) != o.dir {
				return errCode("PreconditionFailed", "")
			}
			om, err := g.loadMeta(ctx, cur.ID)
			if err != nil {
				return err
			}
			if !etagMatches(cond.ifMatch, etagFor(cur, om)) {
				return errCode("PreconditionFailed", "")
			}
			req.IfDstIno, req.IfDstGen = cur.ID, cur.Gen
		}
		err = g.meta.Rename(ctx, req)
		switch errnoOf(err) {
		case 0:
			return nil
		case syscall.ENOENT:
			// A concurrent delete pruned the parent we just made (or the
			// bucket we knew went): again, looking it up afresh.
			g.bcache.drop(o.bucket)
			last = err
			continue
		}
		return nsError(err, scope, o.key)
	}
	return last
}
