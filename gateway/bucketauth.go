package gateway

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/client"
)

// What a bucket lets callers do besides their keys' grants: its policy
// (bucketpolicy.go), its ACL and its ownership controls (acl.go) and its
// public access block, which overrides both for anonymous callers. They are read once a
// second per bucket (a change holds at once on the gateway that made it,
// within a second on the others).

const (
	xattrPolicy       = "user.s3.policy"
	xattrPublicAccess = "user.s3.public-access-block"
)

type publicAccessBlock struct {
	XMLName               xml.Name `xml:"PublicAccessBlockConfiguration" json:"-"`
	NS                    string   `xml:"xmlns,attr,omitempty" json:"-"`
	BlockPublicAcls       bool     `xml:"BlockPublicAcls" json:"block_public_acls,omitempty"`
	IgnorePublicAcls      bool     `xml:"IgnorePublicAcls" json:"ignore_public_acls,omitempty"`
	BlockPublicPolicy     bool     `xml:"BlockPublicPolicy" json:"block_public_policy,omitempty"`
	RestrictPublicBuckets bool     `xml:"RestrictPublicBuckets" json:"restrict_public_buckets,omitempty"`
}

type bucketAuth struct {
	exists bool
	owner  client.Creds // the bucket directory's owner: what anonymous writes are stamped with
	policy *bucketPolicy
	acl    acl
	// enforced: the ownership controls say BucketOwnerEnforced (ACLs off).
	enforced bool
	pab      *publicAccessBlock
}

type authCache struct {
	mu sync.Mutex
	m  map[string]cachedAuth
}

type cachedAuth struct {
	a   *bucketAuth
	exp time.Time
}

func (c *authCache) drop(bucket string) {
	c.mu.Lock()
	delete(c.m, bucket)
	c.mu.Unlock()
}

// bucketAuthOf returns what the bucket allows (exists false for a bucket
// that is not there); an error is the metadata service's.
func (g *Gateway) bucketAuthOf(ctx context.Context, bucket string) (*bucketAuth, error) {
	c := &g.acache
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[bucket]
	c.mu.Unlock()
	if ok && now.Before(e.exp) {
		return e.a, nil
	}
	a := &bucketAuth{}
	in, err := g.bucketInode(ctx, bucket)
	switch {
	case err == nil:
		a.exists, a.owner = true, client.Creds{UID: in.UID, GID: in.GID}
		v, err := g.meta.GetXattr(ctx, in.ID, xattrPolicy)
		switch errnoOf(err) {
		case 0:
			if a.policy, err = parseBucketPolicy(v, bucket); err != nil {
				// Stored only after the same check: a policy that no longer
				// parses refuses everything it might have allowed.
				g.log.Warn("s3 gateway: a stored bucket policy does not parse; only its key grants apply", "bucket", bucket, "err", err)
				a.policy = &bucketPolicy{stmts: []policyStatement{{deny: true, principals: []string{"*"}, actions: []string{"*"}, resources: []string{"*"}}}}
			}
		case syscall.ENODATA:
		default:
			return nil, err
		}
		v, err = g.meta.GetXattr(ctx, in.ID, xattrACL)
		switch errnoOf(err) {
		case 0:
			a.acl = parseACLRecord(v)
		case syscall.ENODATA:
		default:
			return nil, err
		}
		v, err = g.meta.GetXattr(ctx, in.ID, xattrOwnership)
		switch errnoOf(err) {
		case 0:
			a.enforced = string(v) == "BucketOwnerEnforced"
		case syscall.ENODATA:
		default:
			return nil, err
		}
		v, err = g.meta.GetXattr(ctx, in.ID, xattrPublicAccess)
		switch errnoOf(err) {
		case 0:
			a.pab = &publicAccessBlock{}
			if err := json.Unmarshal(v, a.pab); err != nil {
				// Unreadable: block everything public.
				a.pab = &publicAccessBlock{BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true}
			}
		case syscall.ENODATA:
		default:
			return nil, err
		}
	case toAPIError(err).Code == "NoSuchBucket":
	default:
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]cachedAuth{}
	}
	c.m[bucket] = cachedAuth{a: a, exp: now.Add(bucketCacheTTL)}
	c.mu.Unlock()
	return a, nil
}

// policyOps are the operations the root key may always make, whatever the
// policy denies, so that a policy cannot lock the bucket's owner out.
var policyOps = map[string]bool{"GetBucketPolicy": true, "PutBucketPolicy": true, "DeleteBucketPolicy": true}

// decide says whether the request may make action on bucket (and key, ""
// for the bucket itself), given the permission its key would need:
// nil, or AccessDenied.
func (g *Gateway) decide(r *http.Request, rc *reqCtx, op, bucket, key string, need access.Permission) error {
	a, err := g.bucketAuthOf(r.Context(), bucket)
	if err != nil {
		return err
	}
	eff := policyNone
	if a.policy != nil {
		res := bucket
		if key != "" {
			res += "/" + key
		}
		eff = a.policy.decide(policyRequest{principal: rc.ownerKeyID(), action: actionOf(op), resource: res,
			value: g.policyValues(r, rc, bucket, key)})
	}
	if rc.key != nil {
		if eff == policyDeny && !(rc.key.Root && policyOps[op]) {
			return errCode("AccessDenied", "Access Denied by the bucket policy of %s.", bucket)
		}
		if eff == policyAllow || rc.key.Allows(bucket, need) || g.aclAllows(r.Context(), a, rc, op, bucket, key) {
			return nil
		}
		return errCode("AccessDenied", "")
	}
	if eff == policyDeny {
		return errCode("AccessDenied", "Access Denied by the bucket policy of %s.", bucket)
	}
	restricted := a.pab != nil && a.pab.RestrictPublicBuckets
	if eff == policyAllow && !(restricted && a.policy.public()) || g.aclAllows(r.Context(), a, rc, op, bucket, key) {
		rc.anonOwner = a.owner
		return nil
	}
	return errCode("AccessDenied", "Anonymous access is refused: sign the request, or give the bucket a policy or an ACL allowing it.")
}

func (rc *reqCtx) ownerKeyID() string {
	if rc.key == nil {
		return ""
	}
	return rc.key.ID
}

// policyValues looks up the condition keys of a request.
func (g *Gateway) policyValues(r *http.Request, rc *reqCtx, bucket, key string) func(string) ([]string, bool) {
	one := func(v string) ([]string, bool) { return []string{v}, true }
	return func(k string) ([]string, bool) {
		q := r.URL.Query()
		switch k {
		case "aws:sourceip":
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				host = r.RemoteAddr
			}
			return one(host)
		case "aws:securetransport":
			return one(strconv.FormatBool(r.TLS != nil))
		case "aws:currenttime":
			return one(g.now().UTC().Format(time.RFC3339))
		case "aws:epochtime":
			return one(strconv.FormatInt(g.now().Unix(), 10))
		case "aws:useragent", "aws:referer":
			if v := r.Header.Get(strings.TrimPrefix(k, "aws:")); v != "" {
				return one(v)
			}
		case "aws:username", "aws:userid":
			if rc.key != nil {
				return one(rc.key.ID)
			}
		case "aws:principaltype":
			if rc.key == nil {
				return one("Anonymous")
			}
			return one("User")
		case "s3:prefix", "s3:delimiter", "s3:max-keys":
			if name := strings.TrimPrefix(k, "s3:"); q.Has(name) {
				return one(q.Get(name))
			}
		case "s3:versionid":
			if q.Has("versionId") {
				return one(q.Get("versionId"))
			}
		case "s3:signatureversion":
			if rc.key != nil {
				return one(sigAlgorithm)
			}
		case "s3:authtype":
			switch {
			case rc.op == "PostObject":
				return one("POST")
			case rc.sig != nil && rc.sig.kind == authHeader:
				return one("REST-HEADER")
			case rc.sig != nil && rc.sig.kind == authPresigned:
				return one("REST-QUERY-STRING")
			}
		default:
			if h, ok := strings.CutPrefix(k, "s3:x-amz-"); ok {
				if v := r.Header.Get("X-Amz-" + h); v != "" {
					return one(v)
				}
				return nil, false
			}
			if name, ok := strings.CutPrefix(k, "s3:existingobjecttag/"); ok && key != "" {
				return g.existingTag(r.Context(), bucket, key, name)
			}
		}
		return nil, false
	}
}

// existingTag is the value of the object's tag name (absent without the
// object or the tag).
func (g *Gateway) existingTag(ctx context.Context, bucket, key, name string) ([]string, bool) {
	o, err := parseKey(bucket, key)
	if err != nil {
		return nil, false
	}
	in, _, err := g.statPath(ctx, o)
	if err != nil {
		return nil, false
	}
	tags, err := g.loadTags(ctx, in.ID)
	if err != nil {
		return nil, false
	}
	for _, t := range tags {
		if t.Key == name {
			return []string{t.Value}, true
		}
	}
	return nil, false
}

// storedPolicy is the bucket's policy document as it was put
// (NoSuchBucketPolicy without one).
func (g *Gateway) storedPolicy(ctx context.Context, bucket string) ([]byte, error) {
	in, err := g.bucketInode(ctx, bucket)
	if err != nil {
		return nil, err
	}
	v, err := g.meta.GetXattr(ctx, in.ID, xattrPolicy)
	if errnoOf(err) == syscall.ENODATA {
		return nil, errCode("NoSuchBucketPolicy", "The bucket policy does not exist")
	}
	return v, err
}

func (g *Gateway) getBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	v, err := g.storedPolicy(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(v)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(v)
	return err
}

// putBucketPolicy stores a policy that parses for this bucket, unless the
// bucket's public access block refuses public policies and it is one.
func (g *Gateway) putBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	doc, err := readConfigBody(rc, maxPolicyDoc)
	if err != nil {
		if toAPIError(err).Code == "MaxMessageLengthExceeded" {
			return malformedPolicy("The policy is larger than %d bytes.", maxPolicyDoc)
		}
		return err
	}
	p, err := parseBucketPolicy(doc, rc.bucket)
	if err != nil {
		return err
	}
	pab, err := g.loadPublicAccessBlock(ctx, in.ID)
	if err != nil {
		return err
	}
	if pab != nil && pab.BlockPublicPolicy && p.public() {
		return errCode("AccessDenied", "The bucket's public access block (BlockPublicPolicy) refuses a policy that lets anyone in.")
	}
	if err := g.meta.SetXattr(ctx, in.ID, xattrPolicy, doc, 0); err != nil {
		return err
	}
	g.acache.drop(rc.bucket)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) deleteBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.removeBucketConfig(w, r, rc, xattrPolicy)
}

// removeBucketConfig deletes a configuration kept as an xattr of the
// bucket (204 whether it was there or not, as S3 answers).
func (g *Gateway) removeBucketConfig(w http.ResponseWriter, r *http.Request, rc *reqCtx, name string) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	if err := g.meta.RemoveXattr(r.Context(), in.ID, name); err != nil && errnoOf(err) != syscall.ENODATA {
		return err
	}
	g.acache.drop(rc.bucket)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	NS       string   `xml:"xmlns,attr"`
	IsPublic bool     `xml:"IsPublic"`
}

func (g *Gateway) getBucketPolicyStatus(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	v, err := g.storedPolicy(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	p, err := parseBucketPolicy(v, rc.bucket)
	if err != nil {
		return err
	}
	return writeXML(w, policyStatus{NS: s3NS, IsPublic: p.public()})
}

func (g *Gateway) loadPublicAccessBlock(ctx context.Context, bucketIno uint64) (*publicAccessBlock, error) {
	v, err := g.meta.GetXattr(ctx, bucketIno, xattrPublicAccess)
	if errnoOf(err) == syscall.ENODATA {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pab publicAccessBlock
	if err := json.Unmarshal(v, &pab); err != nil {
		return nil, err
	}
	return &pab, nil
}

func (g *Gateway) getPublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	pab, err := g.loadPublicAccessBlock(r.Context(), in.ID)
	if err != nil {
		return err
	}
	if pab == nil {
		return errCode("NoSuchPublicAccessBlockConfiguration", "The public access block configuration was not found")
	}
	pab.NS = s3NS
	return writeXML(w, pab)
}

func (g *Gateway) putPublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	var pab publicAccessBlock
	if err := decodeXML(rc.body, &pab); err != nil {
		return err
	}
	v, _ := json.Marshal(pab)
	if err := g.meta.SetXattr(r.Context(), in.ID, xattrPublicAccess, v, 0); err != nil {
		return err
	}
	g.acache.drop(rc.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deletePublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.removeBucketConfig(w, r, rc, xattrPublicAccess)
}
