package gateway

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/durability"
)

// staged is a file written into the staging directory, not yet visible.
type staged struct {
	name string
	in   metaapi.Inode
	md5  string // hex
	sum  string // the additional checksum (base64), if one was asked for
	size int64
}

func newStagingName() string {
	return strings.ToLower(newRequestID()) + strings.ToLower(newRequestID())
}

// discard removes a staging file that will not be published.
func (g *Gateway) discard(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.meta.Unlink(ctx, metaapi.RemoveReq{Parent: g.stagingIno, Name: name}); err != nil && errnoOf(err) != syscall.ENOENT {
		g.log.Warn("s3 gateway: could not remove a staging file (the sweeper will)", "name", name, "err", err)
	}
}

// stagingCtx is the context of the metadata changes made to a staging file
// (its create, close, and the records set on it before its publish):
// relaxed. Nothing reads a staging file, and its publish is a durable
// commit, which makes every change before it durable with it (the
// metadata store's log is written in order). A crash before the publish
// loses only what the sweeper would remove.
func stagingCtx(ctx context.Context) context.Context { return durability.Relaxed(ctx) }

// bodyCtx is the context of a body's chunk writes: relaxed and staged,
// each acknowledged once its storage node has it, its content synced at
// the caller's SyncData (client.Staged) rather than before each chunk's
// record. The caller makes them durable with that one SyncData before the
// object's (or part's) commit point, so a large body costs one sync per
// storage node and data file, not one per chunk, and removes them if it
// fails.
func bodyCtx(ctx context.Context) context.Context {
	return client.Staged(durability.Relaxed(ctx))
}

// stage streams body into a new staging file and checks what the request
// claimed about it: length, Content-MD5, additional checksum.
func (g *Gateway) stage(ctx context.Context, rc *reqCtx, body interface{ Read([]byte) (int, error) }, size int64, limit int64, spec *checksumSpec, contentMD5 string) (*staged, error) {
	name := newStagingName()
	in, session, _, err := g.meta.Create(stagingCtx(ctx), g.stagingIno, name, fileMode, os.O_CREATE|os.O_EXCL|os.O_WRONLY, rc.creds())
	if err != nil {
		return nil, err
	}
	st := &staged{name: name}
	ok := false
	defer func() {
		if !ok {
			g.discard(name)
		}
	}()
	f, err := g.fs.OpenInode(ctx, in, session)
	if err != nil {
		return nil, err
	}
	m := etagMD5.New()
	hashes := []hash.Hash{m}
	var ch hash.Hash
	if spec != nil {
		ch = newChecksumHash(spec.algo)
		hashes = append(hashes, ch)
	}
	n, err := copyInSized(bodyCtx(ctx), f, 0, body, size, limit, hashes...)
	if cerr := f.CloseContext(stagingCtx(ctx)); err == nil {
		err = cerr
	}
	if err == nil {
		// The body's chunk writes, and the held bytes of a close that
		// metad refused, were relaxed: durable now, before the publish.
		err = g.fs.SyncData(ctx)
	}
	if err != nil {
		return nil, err
	}
	if size >= 0 && n != size {
		return nil, errCode("IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header (%d of %d).", n, size)
	}
	st.in, st.size = f.Inode(), n
	st.md5 = hex.EncodeToString(m.Sum(nil))
	if contentMD5 != "" {
		want, err := base64.StdEncoding.DecodeString(contentMD5)
		if err != nil || len(want) != md5.Size {
			return nil, errCode("InvalidDigest", "")
		}
		if hex.EncodeToString(want) != st.md5 {
			return nil, errCode("BadDigest", "")
		}
	}
	if spec != nil {
		st.sum = base64.StdEncoding.EncodeToString(ch.Sum(nil))
		want := spec.expected
		if spec.trailer {
			if rc.chunked != nil {
				want = rc.chunked.Trailer[checksumHeader(spec.algo)]
			}
			if want == "" {
				return nil, errCode("MalformedTrailerError", "The announced trailer %s did not arrive.", checksumHeader(spec.algo))
			}
		}
		if want != "" && want != st.sum {
			return nil, errCode("BadDigest", "The %s you specified did not match the calculated checksum.", checksumHeader(spec.algo))
		}
	}
	ok = true
	return st, nil
}
