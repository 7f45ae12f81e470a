package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// Buckets are the top-level directories of the namespace whose names are
// valid bucket names.

const xattrBucket = "user.s3.bucket"

type bucketRecord struct {
	Created time.Time `json:"created"`
}

// bucketCache keeps bucket directories for a second: every request needs
// its bucket's, and buckets come and go rarely. Deletes through this gateway
// drop the entry; a stale one costs a retry (publish drops it on ENOENT).
type bucketCache struct {
	mu sync.Mutex
	m  map[string]cachedBucket
}

type cachedBucket struct {
	in         metaapi.Inode
	versioning metaapi.Versioning
	known      bool // versioning was read
	exp        time.Time
}

const bucketCacheTTL = time.Second

func (c *bucketCache) drop(bucket string) {
	c.mu.Lock()
	delete(c.m, bucket)
	c.mu.Unlock()
}

// bucketInode returns a bucket's directory (NoSuchBucket if there is none).
func (g *Gateway) bucketInode(ctx context.Context, bucket string) (metaapi.Inode, error) {
	if !access.ValidBucketName(bucket) {
		return metaapi.Inode{}, errCode("NoSuchBucket", "")
	}
	c := &g.bcache
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[bucket]
	c.mu.Unlock()
	if ok && now.Before(e.exp) {
		return e.in, nil
	}
	in, err := g.lookupBucket(ctx, bucket)
	if err == nil {
		c.put(bucket, cachedBucket{in: in, exp: now.Add(bucketCacheTTL)})
	}
	return in, err
}

func (c *bucketCache) put(bucket string, e cachedBucket) {
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]cachedBucket{}
	}
	c.m[bucket] = e
	c.mu.Unlock()
}

// bucketVersioning returns a bucket's directory and versioning state,
// cached as bucketInode is: a state set through another gateway shows
// within bucketCacheTTL (S3 itself takes a while to apply one).
func (g *Gateway) bucketVersioning(ctx context.Context, bucket string) (metaapi.Inode, metaapi.Versioning, error) {
	c := &g.bcache
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[bucket]
	c.mu.Unlock()
	if ok && e.known && now.Before(e.exp) {
		return e.in, e.versioning, nil
	}
	in, err := g.bucketInode(ctx, bucket)
	if err != nil {
		return in, 0, err
	}
	st, err := g.meta.GetVersioning(ctx, in.ID)
	if err != nil {
		return in, 0, err
	}
	c.put(bucket, cachedBucket{in: in, versioning: st, known: true, exp: now.Add(bucketCacheTTL)})
	return in, st, nil
}

func (g *Gateway) lookupBucket(ctx context.Context, bucket string) (metaapi.Inode, error) {
	in, err := g.meta.Lookup(ctx, g.rootIno, bucket)
	if err != nil {
		return metaapi.Inode{}, nsError(err, bucketLookup, "")
	}
	if in.Type != metaapi.TypeDir {
		return metaapi.Inode{}, errCode("NoSuchBucket", "")
	}
	return in, nil
}

// listBuckets is ListBuckets: the buckets the key sees, in name order;
// prefix, bucket-region, max-buckets and continuation-token (the last name
// of the page before, opaque to clients) as S3 has them.
func (g *Gateway) listBuckets(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	q := r.URL.Query()
	prefix := q.Get("prefix")
	maxBuckets := 0 // all
	if v := q.Get("max-buckets"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return errCode("InvalidArgument", "max-buckets must be an integer between 1 and 10000.")
		}
		maxBuckets = n
	}
	after := ""
	if q.Has("continuation-token") {
		raw, err := base64.RawURLEncoding.DecodeString(q.Get("continuation-token"))
		if err != nil || len(raw) == 0 {
			return errCode("InvalidArgument", "The continuation token provided is incorrect.")
		}
		after = string(raw)
	}
	res := listAllMyBucketsResult{NS: s3NS, Owner: owner{ID: rc.ownerID(), DisplayName: rc.ownerID()}, Buckets: []bucketInfo{}, Prefix: prefix}
	if region := q.Get("bucket-region"); region != "" && region != g.cfg.Region {
		return writeXML(w, res) // every bucket is in this gateway's region
	}
	if prefix > after {
		// Names up to the prefix's predecessor cannot match it.
		after = prefix[:len(prefix)-1]
	}
	for {
		ents, more, err := g.meta.ReadDir(ctx, g.rootIno, after, 1000, true)
		if err != nil {
			return err
		}
		for _, e := range ents {
			after = e.Name
			if e.Type != metaapi.TypeDir || !access.ValidBucketName(e.Name) || !rc.key.SeesBucket(e.Name) || !strings.HasPrefix(e.Name, prefix) {
				continue
			}
			created := time.Now()
			if e.Inode != nil {
				created = time.Unix(0, e.Inode.Mtime)
			}
			if v, err := g.meta.GetXattr(ctx, e.Ino, xattrBucket); err == nil {
				var br bucketRecord
				if json.Unmarshal(v, &br) == nil && !br.Created.IsZero() {
					created = br.Created
				}
			}
			res.Buckets = append(res.Buckets, bucketInfo{Name: e.Name, CreationDate: s3Time(created)})
		}
		if !more || len(ents) == 0 || (prefix != "" && after > prefix && !strings.HasPrefix(after, prefix)) {
			break
		}
	}
	sort.Slice(res.Buckets, func(i, j int) bool { return res.Buckets[i].Name < res.Buckets[j].Name })
	if maxBuckets > 0 && len(res.Buckets) > maxBuckets {
		res.Buckets = res.Buckets[:maxBuckets]
		res.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Buckets[maxBuckets-1].Name))
	}
	return writeXML(w, res)
}

func (g *Gateway) createBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	if !access.ValidBucketName(rc.bucket) {
		return errCode("InvalidBucketName", "The bucket name %q is not valid: 3-63 of a-z 0-9 . -, starting and ending with a letter or digit.", rc.bucket)
	}
	if r.ContentLength != 0 && rc.body != nil {
		var cfg createBucketConfiguration
		if err := decodeXML(rc.body, &cfg); err != nil {
			if ae := toAPIError(err); !(ae.Code == "MalformedXML" && r.ContentLength <= 0) {
				return err
			}
		}
		// Every bucket is in the gateway's region: one asked for elsewhere
		// would not be where its creator put it.
		if lc := cfg.LocationConstraint; lc != "" && lc != g.cfg.Region {
			return errCode("IllegalLocationConstraintException", "The %s location constraint is incompatible for the region specific endpoint this request was sent to: this gateway serves %s (flyfs gateway --region); the bucket was not created.", lc, g.cfg.Region)
		}
	}
	bacl, _, err := aclFromHeaders(r.Header)
	if err != nil {
		return err
	}
	ownership := r.Header.Get("X-Amz-Object-Ownership")
	if ownership != "" && !validOwnership(ownership) {
		return errCode("InvalidArgument", "x-amz-object-ownership is BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter.")
	}
	if ownership == "BucketOwnerEnforced" && len(bacl.Grants) > 0 {
		return errCode("InvalidBucketAclWithObjectOwnership", "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")
	}
	in, err := g.meta.Mkdir(ctx, g.rootIno, rc.bucket, 0o755, rc.creds())
	if errnoOf(err) == syscall.EEXIST {
		return g.bucketTaken(ctx, rc)
	}
	if err != nil {
		return nsError(err, bucketCreate, "")
	}
	v, _ := json.Marshal(bucketRecord{Created: time.Now().UTC()})
	if err := g.meta.SetXattr(ctx, in.ID, xattrBucket, v, 0); err != nil {
		return err
	}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Amz-Bucket-Object-Lock-Enabled")), "true") {
		if err := g.enableObjectLock(ctx, in.ID); err != nil {
			return err
		}
		g.bcache.drop(rc.bucket)
	}
	if err := g.storeACL(ctx, in.ID, bacl, false); err != nil {
		return err
	}
	if ownership != "" {
		if err := g.meta.SetXattr(ctx, in.ID, xattrOwnership, []byte(ownership), 0); err != nil {
			return err
		}
	}
	g.acache.drop(rc.bucket)
	w.Header().Set("Location", "/"+rc.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

// bucketTaken answers a CreateBucket of a name that is taken: the
// requester's own bucket (the root key's, or one it sees whose directory
// its UID owns) is BucketAlreadyOwnedByYou; anything else that holds the
// name (another owner's bucket, a file at the top of the namespace) is
// BucketAlreadyExists.
func (g *Gateway) bucketTaken(ctx context.Context, rc *reqCtx) error {
	in, err := g.meta.Lookup(ctx, g.rootIno, rc.bucket)
	if err != nil {
		if errnoOf(err) == syscall.ENOENT {
			return errCode("ConditionalRequestConflict", "") // gone again at once: let the client retry
		}
		return err
	}
	if in.Type == metaapi.TypeDir && rc.key != nil && (rc.key.Root || (rc.key.SeesBucket(rc.bucket) && in.UID == rc.key.UID)) {
		return errCode("BucketAlreadyOwnedByYou", "")
	}
	return errCode("BucketAlreadyExists", "")
}

// nameTaken says whether anything holds the top-level name of a bucket.
func (g *Gateway) nameTaken(ctx context.Context, bucket string) bool {
	_, err := g.meta.Lookup(ctx, g.rootIno, bucket)
	return err == nil
}

func (g *Gateway) headBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	w.Header().Set("X-Amz-Bucket-Region", g.cfg.Region)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deleteBucket(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	g.bcache.drop(rc.bucket)
	g.acache.drop(rc.bucket)
	if err := g.meta.Rmdir(ctx, g.rootIno, rc.bucket); err != nil {
		return nsError(err, bucketDelete, "")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) getBucketLocation(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	loc := g.cfg.Region
	if loc == "us-east-1" {
		loc = "" // S3 answers an empty constraint for us-east-1
	}
	return writeXML(w, locationConstraint{NS: s3NS, Region: loc})
}

var _ = client.Creds{}
