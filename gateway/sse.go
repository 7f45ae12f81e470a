package gateway

import (
	"context"
	"encoding/xml"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Server-side encryption is SSE-S3 or nothing. A cluster whose storage
// nodes encrypt every disk (storaged --encryption-key-file) keeps every
// chunk encrypted at rest, whichever view wrote it: the gateway then says
// so (x-amz-server-side-encryption: AES256 on the object operations),
// accepts that header on writes and answers the bucket encryption calls
// with AES256. A cluster with a plain disk gives no such protection, and
// the header stays refused. SSE-KMS (there is no KMS) and SSE-C (the mount
// could not read what only the client holds the key to) are refused
// always.

const (
	xattrEncryption = "user.s3.encryption"
	sseAES256       = "AES256"
	atRestTTL       = 5 * time.Second
)

// sseOps are the operations whose answer names the object's encryption.
var sseOps = map[string]bool{
	"PutObject": true, "CopyObject": true, "CreateMultipartUpload": true, "UploadPart": true, "UploadPartCopy": true,
	"CompleteMultipartUpload": true, "GetObject": true, "HeadObject": true, "PostObject": true,
}

// atRestCache remembers whether every disk of the cluster encrypts.
type atRestCache struct {
	mu         sync.Mutex
	yes        bool
	exp        time.Time
	refreshing bool
}

// encryptedAtRest says whether every disk the cluster's storage nodes
// report encrypts its content (false while any is plain or unreported).
// One request at a time asks mgmtd, at most every atRestTTL; the others
// take the last answer meanwhile, and a failed ask keeps it.
func (g *Gateway) encryptedAtRest(ctx context.Context) bool {
	c := &g.atRest
	c.mu.Lock()
	if time.Now().Before(c.exp) || c.refreshing {
		yes := c.yes
		c.mu.Unlock()
		return yes
	}
	c.refreshing = true
	last := c.yes
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	yes, ok := last, false
	if m := g.fs.Mgmtd(); m != nil {
		if resp, err := m.ListNodes(ctx); err == nil && !resp.Partial {
			disks := 0
			yes, ok = true, true
			for _, n := range resp.Nodes {
				for _, d := range n.Disks {
					disks++
					yes = yes && d.Encrypted
				}
			}
			yes = yes && disks > 0
		}
	}
	ttl := atRestTTL
	if !ok {
		ttl = time.Second
	}
	c.mu.Lock()
	c.yes, c.exp, c.refreshing = yes, time.Now().Add(ttl), false
	c.mu.Unlock()
	return yes
}

// checkSSE decides the request's x-amz-server-side-encryption: AES256 on a
// cluster that encrypts at rest is what it gives anyway; anything else is
// refused, naming why. It returns the headers left for the other
// refusals to judge.
func (g *Gateway) checkSSE(ctx context.Context, h http.Header, op string) (http.Header, error) {
	v := h.Get("X-Amz-Server-Side-Encryption")
	if v == "" || !sseOps[op] {
		return h, nil
	}
	switch v {
	case sseAES256:
		if h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") != "" || h.Get("X-Amz-Server-Side-Encryption-Context") != "" {
			return nil, errCode("InvalidArgument", "x-amz-server-side-encryption-aws-kms-key-id and -context go with aws:kms, not AES256.")
		}
		if !g.encryptedAtRest(ctx) {
			return nil, errCode("NotImplemented", "The x-amz-server-side-encryption header asks for SSE-S3, and this cluster does not encrypt at rest (every storaged needs --encryption-key-file); nothing was stored.")
		}
		h = h.Clone()
		h.Del("X-Amz-Server-Side-Encryption")
		h.Del("X-Amz-Server-Side-Encryption-Bucket-Key-Enabled")
		return h, nil
	case "aws:kms", "aws:kms:dsse":
		return nil, errCode("NotImplemented", "The x-amz-server-side-encryption header asks for SSE-KMS (%s); flyfs has no KMS: use AES256 on a cluster that encrypts at rest. Nothing was stored.", v)
	}
	return nil, errCode("InvalidArgument", "The encryption method specified is not supported: %q (AES256 is).", v)
}

type sseConfiguration struct {
	XMLName xml.Name  `xml:"ServerSideEncryptionConfiguration"`
	NS      string    `xml:"xmlns,attr,omitempty"`
	Rules   []sseRule `xml:"Rule"`
}

type sseRule struct {
	Default struct {
		SSEAlgorithm   string `xml:"SSEAlgorithm"`
		KMSMasterKeyID string `xml:"KMSMasterKeyID,omitempty"`
	} `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKeyEnabled *bool `xml:"BucketKeyEnabled"`
}

// getBucketEncryption: on a cluster that encrypts at rest every bucket is
// AES256 (as every S3 bucket now is); otherwise there is none.
func (g *Gateway) getBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	if !g.encryptedAtRest(r.Context()) {
		return errCode("ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found (this cluster does not encrypt at rest).")
	}
	cfg := sseConfiguration{NS: s3NS, Rules: []sseRule{{}}}
	cfg.Rules[0].Default.SSEAlgorithm = sseAES256
	f := false
	cfg.Rules[0].BucketKeyEnabled = &f
	return writeXML(w, cfg)
}

func (g *Gateway) putBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	var cfg sseConfiguration
	if err := decodeXML(rc.body, &cfg); err != nil {
		return err
	}
	if len(cfg.Rules) != 1 {
		return errCode("MalformedXML", "A ServerSideEncryptionConfiguration has one Rule.")
	}
	switch alg := cfg.Rules[0].Default.SSEAlgorithm; alg {
	case sseAES256:
	case "aws:kms", "aws:kms:dsse":
		return errCode("NotImplemented", "SSE-KMS (%s) is not supported: flyfs has no KMS; AES256 is.", alg)
	default:
		return errCode("MalformedXML", "SSEAlgorithm %q is not AES256, aws:kms or aws:kms:dsse.", alg)
	}
	if b := cfg.Rules[0].BucketKeyEnabled; b != nil && *b {
		return errCode("NotImplemented", "S3 Bucket Keys belong to SSE-KMS, which flyfs does not have.")
	}
	if !g.encryptedAtRest(r.Context()) {
		return errCode("NotImplemented", "This cluster does not encrypt at rest (every storaged needs --encryption-key-file): AES256 cannot be promised; nothing was changed.")
	}
	if err := g.meta.SetXattr(r.Context(), in.ID, xattrEncryption, []byte(sseAES256), 0); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deleteBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	if err := g.meta.RemoveXattr(r.Context(), in.ID, xattrEncryption); err != nil && errnoOf(err) != syscall.ENODATA {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
