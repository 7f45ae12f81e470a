package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a gateway.
type Config struct {
	// FS is the namespace the gateway serves (required).
	FS *client.FS
	// RootAccessKey/RootSecretKey: the root credential (FLYFS_ACCESS_KEY /
	// FLYFS_SECRET_KEY), made the cluster's root key. Empty: the cluster's
	// root key, drawn on the first start of any role (see Gateway.RootKey).
	// Access keys are the cluster's, reached through FS.
	RootAccessKey, RootSecretKey string
	// Region the gateway answers for (default us-east-1). Signatures for
	// any region are accepted: clients sign with what they are configured.
	Region string
	// Domains enable virtual-host-style addressing: a request to
	// <bucket>.<domain> addresses <bucket>. Path style always works.
	Domains []string
	// Registerer receives the gateway's metrics (flyfs_s3_*) besides the
	// gateway's own registry; nil: only the latter.
	Registerer prometheus.Registerer
	// Gatherer is what GET /_flyfs/metrics serves; nil: the gateway's own
	// families (flyfs_s3_*, without the labels Registerer adds).
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// LifecycleInterval is how often the gateway applies the buckets'
	// lifecycle rules (0: DefaultLifecycleInterval; negative: never, for
	// tests that run passes themselves).
	LifecycleInterval time.Duration
}

// Gateway is the S3 HTTP handler.
type Gateway struct {
	cfg     Config
	fs      *client.FS
	meta    namespace
	keys    *client.Keys
	root    *access.Key
	log     *slog.Logger
	router  *mux.Router
	metrics *metrics
	now     func() time.Time

	// bucketOps and objectOps map subresource -> method -> operation;
	// subresource holds every subresource name either has.
	bucketOps, objectOps opTable
	subresource          map[string]bool

	rootIno    uint64
	stagingIno uint64 // /.flyfs-s3/staging
	uploadsIno uint64 // /.flyfs-s3/uploads

	mcache metaCache
	bcache bucketCache
	acache authCache
	atRest atRestCache

	errLog errLimiter // 5xx lines at warn

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// namespace is what the gateway asks of the metadata service: the calls
// of client.Meta it makes (an interface, so that tests can stand between
// the two and fail a chosen call).
type namespace interface {
	Stat(ctx context.Context, ino uint64) (metaapi.Inode, error)
	Lookup(ctx context.Context, parent uint64, name string) (metaapi.Inode, error)
	Resolve(ctx context.Context, path string, followLast bool) (metaapi.Inode, error)
	ResolveRead(ctx context.Context, path string, followLast bool, xattr string) (metaapi.Inode, []byte, bool, error)
	Create(ctx context.Context, parent uint64, name string, mode uint32, flags int, cr client.Creds) (in metaapi.Inode, session []byte, created bool, err error)
	Open(ctx context.Context, ino uint64, flags int, cr client.Creds) (metaapi.Inode, []byte, error)
	Mkdir(ctx context.Context, parent uint64, name string, mode uint32, cr client.Creds) (metaapi.Inode, error)
	MkdirAll(ctx context.Context, path string, mode uint32, cr client.Creds, implicit bool) (metaapi.Inode, error)
	Unlink(ctx context.Context, req metaapi.RemoveReq) error
	Rmdir(ctx context.Context, parent uint64, name string) error
	RemoveAll(ctx context.Context, parent uint64, name string) error
	Rename(ctx context.Context, req metaapi.RenameReq) error
	ReadDir(ctx context.Context, dir uint64, after string, limit int, plus bool) ([]metaapi.DirEntry, bool, error)
	ReadDirXattr(ctx context.Context, dir uint64, after string, limit int, name string) ([]metaapi.DirEntry, bool, error)
	SetAttr(ctx context.Context, ino uint64, req metaapi.SetAttrReq) (metaapi.Inode, error)
	GetXattr(ctx context.Context, ino uint64, name string) ([]byte, error)
	SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags int) error
	ListXattr(ctx context.Context, ino uint64) ([]string, error)
	RemoveXattr(ctx context.Context, ino uint64, name string) error
	SetVersioning(ctx context.Context, bucket uint64, st metaapi.Versioning) error
	GetVersioning(ctx context.Context, bucket uint64) (metaapi.Versioning, error)
	ListVersions(ctx context.Context, req metaapi.ListVersionsReq) (*metaapi.ListVersionsResp, error)
	GetVersion(ctx context.Context, bucket uint64, key, id string) (*metaapi.VersionEntry, error)
	DeleteKey(ctx context.Context, req metaapi.DeleteKeyReq) (string, error)
	DeleteVersion(ctx context.Context, req metaapi.DeleteVersionReq) (*metaapi.DeleteVersionResp, error)
	SetRetention(ctx context.Context, req metaapi.RetentionReq) (metaapi.Inode, error)
	Clone(ctx context.Context, src, newParent uint64, newName string, preserve bool, mode uint32, cr client.Creds) (metaapi.Inode, error)
}

var _ namespace = (*client.Meta)(nil)

// New builds a gateway over a namespace and a key store. It creates the
// hidden staging directories and, without a configured root key, the
// generated root key.
func New(cfg Config) (*Gateway, error) {
	if cfg.FS == nil {
		return nil, errors.New("gateway: Config.FS is required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Gateway{cfg: cfg, fs: cfg.FS, meta: cfg.FS.Meta(), keys: cfg.FS.Keys(), log: cfg.Logger, now: cfg.Now, stop: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var given *access.Key
	switch {
	case cfg.RootAccessKey != "" && cfg.RootSecretKey != "":
		given = &access.Key{ID: cfg.RootAccessKey, Secret: cfg.RootSecretKey}
	case cfg.RootAccessKey != "" || cfg.RootSecretKey != "":
		return nil, errors.New("gateway: set both the root access key and the root secret key, or neither")
	}
	k, created, err := g.keys.EnsureRoot(ctx, given)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.root = k
	if created && given == nil {
		g.log.Info("s3 gateway: generated the cluster's root access key (shown once; set FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY to use your own)", "access_key", k.ID, "secret_key", k.Secret)
	}
	root, err := g.meta.Resolve(ctx, "/", true)
	if err != nil {
		return nil, fmt.Errorf("gateway: resolve /: %w", err)
	}
	g.rootIno = root.ID
	in, err := g.meta.MkdirAll(ctx, "/"+stagingRoot+"/staging", 0o700, client.Creds{}, false)
	if err != nil {
		return nil, fmt.Errorf("gateway: staging directory: %w", err)
	}
	g.stagingIno = in.ID
	if in, err = g.meta.MkdirAll(ctx, "/"+stagingRoot+"/uploads", 0o700, client.Creds{}, false); err != nil {
		return nil, fmt.Errorf("gateway: uploads directory: %w", err)
	}
	g.uploadsIno = in.ID
	g.metrics = newMetrics(cfg.Registerer, cfg.Gatherer)
	g.router = g.routes()
	g.wg.Add(1)
	go g.sweepStaging()
	if cfg.LifecycleInterval == 0 {
		cfg.LifecycleInterval = DefaultLifecycleInterval
	}
	if cfg.LifecycleInterval > 0 {
		g.wg.Add(1)
		go g.runLifecycle(cfg.LifecycleInterval)
	}
	return g, nil
}

// RootKey returns the root credential in force.
func (g *Gateway) RootKey() (accessKey, secretKey string) { return g.root.ID, g.root.Secret }

// Close stops the gateway's background work. It does not close FS or KV.
func (g *Gateway) Close() error {
	g.stopOnce.Do(func() { close(g.stop) })
	g.wg.Wait()
	return nil
}

// reqCtx is one request's state, passed to every handler.
type reqCtx struct {
	id      string
	op      string
	start   time.Time
	key     *access.Key // nil: anonymous
	bucket  string
	object  string
	sig     *sigRequest
	body    io.Reader // the decoded payload
	chunked *chunkedReader
	// size is the decoded payload length (-1: unknown).
	size int64
	// anonOwner owns what an anonymous caller creates (its bucket's owner),
	// set when a bucket policy admits it.
	anonOwner client.Creds
	// versionID is the request's versionId parameter, when hasVersion.
	versionID  string
	hasVersion bool
	// hdr is the response's header (version headers are set deep down).
	hdr http.Header
}

type ctxKey struct{}

func reqOf(r *http.Request) *reqCtx { return r.Context().Value(ctxKey{}).(*reqCtx) }

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// statusWriter records the status and bytes for metrics and logs.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ServeHTTP authenticates the request, decodes its payload and routes it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := &reqCtx{id: newRequestID(), start: time.Now(), size: -1, op: "Unknown"}
	sw := &statusWriter{ResponseWriter: w}
	h := sw.Header()
	rc.hdr = h
	if q := r.URL.Query(); q.Has("versionId") {
		rc.versionID, rc.hasVersion = q.Get("versionId"), true
	}
	h.Set("X-Amz-Request-Id", rc.id)
	h.Set("X-Amz-Id-2", rc.id)
	h.Set("Server", "flyfs")
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, rc))
	defer func() {
		if p := recover(); p != nil {
			g.log.Error("s3 gateway: panic", "op", rc.op, "request_id", rc.id, "panic", p)
			if sw.status == 0 {
				g.writeError(sw, r, errCode("InternalError", ""))
			}
		}
		g.metrics.observe(rc.op, sw.status, time.Since(rc.start), r.ContentLength, sw.bytes)
	}()

	if r.URL.Path == "/_flyfs/metrics" && r.Method == http.MethodGet {
		rc.op = "Metrics"
		g.metrics.handler().ServeHTTP(sw, r)
		return
	}
	if r.Method == http.MethodOptions {
		// A CORS preflight: a browser's, never signed.
		rc.op = "PreflightRequest"
		if err := g.preflight(sw, r, rc); err != nil {
			g.writeError(sw, r, err)
		}
		return
	}
	g.corsResponse(sw, r)
	if err := g.authenticate(r, rc); err != nil {
		g.writeError(sw, r, err)
		return
	}
	// Virtual-host style: the bucket is in the Host; route as path style.
	if b := g.hostBucket(r.Host); b != "" {
		r.URL.Path = "/" + b + r.URL.Path
		r.URL.RawPath = ""
	}
	g.router.ServeHTTP(sw, r)
}

// hostBucket returns the bucket of a virtual-host-style Host ("" if none).
func (g *Gateway) hostBucket(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	for _, d := range g.cfg.Domains {
		if b, ok := strings.CutSuffix(host, "."+strings.ToLower(d)); ok && b != "" {
			return b
		}
	}
	return ""
}

// authenticate checks the signature (or anonymity) of r and sets up the
// decoded body.
func (g *Gateway) authenticate(r *http.Request, rc *reqCtx) error {
	sr, err := parseSigRequest(r)
	if err != nil {
		return err
	}
	rc.sig = sr
	if sr.kind != authAnonymous {
		if err := sr.checkTime(g.now()); err != nil {
			return err
		}
		k, err := g.lookupKey(r.Context(), sr.cred.AccessKey)
		if err != nil {
			return err
		}
		signKey, err := verifySignature(r, sr, k.Secret)
		if err != nil {
			return err
		}
		rc.key = k
		if err := g.setupBody(r, rc, sr, signKey); err != nil {
			return err
		}
		return nil
	}
	rc.body = r.Body
	rc.size = r.ContentLength
	return nil
}

func (g *Gateway) lookupKey(ctx context.Context, id string) (*access.Key, error) {
	k, err := g.keys.Get(ctx, id)
	if errors.Is(err, access.ErrNoSuchKey) {
		return nil, errCode("InvalidAccessKeyId", "")
	}
	return k, err
}

// setupBody wraps the request body in the decoder its payload mode needs.
func (g *Gateway) setupBody(r *http.Request, rc *reqCtx, sr *sigRequest, signKey []byte) error {
	rc.body, rc.size = r.Body, r.ContentLength
	switch {
	case isChunkedPayload(sr.payloadHash):
		dl := r.Header.Get("X-Amz-Decoded-Content-Length")
		if dl != "" {
			n, err := strconv.ParseInt(dl, 10, 64)
			if err != nil || n < 0 {
				return errCode("InvalidArgument", "x-amz-decoded-content-length is not a valid length.")
			}
			rc.size = n
		} else {
			rc.size = -1
		}
		var signer *chunkSigner
		if sr.payloadHash != streamingUnsignedTrailr {
			signer = &chunkSigner{key: signKey, amzDate: sr.amzDateRaw, scope: sr.cred.scope(), prevSig: sr.signature}
		}
		trailers := sr.payloadHash != streamingSigned
		rc.chunked = newChunkedReader(r.Body, signer, trailers)
		rc.body = rc.chunked
	case sr.payloadHash == unsignedPayload:
	default:
		rc.body = newSHA256Reader(r.Body, sr.payloadHash)
	}
	return nil
}

// writeError sends err as an S3 XML error (no body for HEAD).
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	rc := reqOf(r)
	g.logError(r, rc, ae, err)
	h := w.Header()
	if ae.Code == "NotModified" {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/xml")
	h.Del("Content-Length")
	h.Del("X-Amz-Server-Side-Encryption")
	h.Del("ETag")
	h.Del("Last-Modified")
	if r.Method == http.MethodHead {
		w.WriteHeader(ae.Status)
		return
	}
	body := errorBody{Code: ae.Code, Message: ae.Message, Method: ae.Method, ResourceType: ae.ResourceType, Key: ae.Key, Bucket: ae.Bucket,
		Resource: r.URL.Path, RequestID: rc.id, HostID: rc.id}
	if body.Key == "" && rc.object != "" && ae.Status == http.StatusNotFound {
		body.Key = rc.object
	}
	if body.Bucket == "" && ae.Code == "NoSuchBucket" {
		body.Bucket = rc.bucket
	}
	out, _ := xml.Marshal(body)
	w.WriteHeader(ae.Status)
	io.WriteString(w, xml.Header)
	w.Write(out)
}

// writeXML sends a 200 with an XML body.
func writeXML(w http.ResponseWriter, v any) error {
	out, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, xml.Header)
	_, err = w.Write(out)
	return err
}

// creds are the owner ids stamped on what a request creates.
func (rc *reqCtx) creds() client.Creds {
	if rc.key == nil {
		return rc.anonOwner
	}
	return client.Creds{UID: rc.key.UID, GID: rc.key.GID}
}

func (rc *reqCtx) ownerID() string {
	if rc.key == nil {
		return "anonymous"
	}
	return rc.key.ID
}

// ensure the inode type names compile in one place.
var _ = metaapi.TypeDir
