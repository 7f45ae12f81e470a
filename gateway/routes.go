package gateway

import (
	"net/http"

	"github.com/flyfs/flyfs/core/access"
	"github.com/gorilla/mux"
)

// handler is one S3 operation; an error it returns becomes the S3 error
// response (when nothing was written yet).
type handler func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error

// route describes an operation for the router: its name (metrics, logs),
// the permission it needs on its bucket, and whether an anonymous caller
// may use it on a public-read bucket.
type route struct {
	op         string
	need       access.Permission // "" : service level (ListBuckets, CreateBucket)
	publicRead bool
	h          handler
}

func hasQuery(names ...string) mux.MatcherFunc {
	return func(r *http.Request, _ *mux.RouteMatch) bool {
		q := r.URL.Query()
		for _, n := range names {
			if !q.Has(n) {
				return false
			}
		}
		return true
	}
}

func hasHeader(name string) mux.MatcherFunc {
	return func(r *http.Request, _ *mux.RouteMatch) bool { return r.Header.Get(name) != "" }
}

// routes builds the router. Order matters: the most specific matchers of a
// path and method come first.
func (g *Gateway) routes() *mux.Router {
	m := mux.NewRouter()
	m.SkipClean(true) // keys like "a//b" must reach the handler to be refused clearly

	obj := m
	key := "/{bucket}/{key:.+}"
	add := func(sr *mux.Router, method, path string, rt route, matchers ...mux.MatcherFunc) {
		r := sr.Methods(method).Path(path)
		for _, mt := range matchers {
			r = r.MatcherFunc(mt)
		}
		r.Handler(g.wrap(rt))
	}
	// Objects.
	add(obj, "PUT", key, route{"UploadPartCopy", access.ReadWrite, false, g.uploadPartCopy}, hasQuery("partNumber", "uploadId"), hasHeader("X-Amz-Copy-Source"))
	add(obj, "PUT", key, route{"UploadPart", access.ReadWrite, false, g.uploadPart}, hasQuery("partNumber", "uploadId"))
	add(obj, "PUT", key, route{"PutObjectTagging", access.ReadWrite, false, g.putObjectTagging}, hasQuery("tagging"))
	add(obj, "PUT", key, route{"RenameObject", access.ReadWrite, false, g.renameObject}, hasQuery("renameObject"))
	add(obj, "PUT", key, route{"PutObjectAcl", access.ReadWrite, false, g.notImplemented}, hasQuery("acl"))
	add(obj, "PUT", key, route{"CopyObject", access.ReadWrite, false, g.copyObject}, hasHeader("X-Amz-Copy-Source"))
	add(obj, "PUT", key, route{"PutObject", access.ReadWrite, false, g.putObject})
	add(obj, "GET", key, route{"ListParts", access.Read, false, g.listParts}, hasQuery("uploadId"))
	add(obj, "GET", key, route{"GetObjectTagging", access.Read, false, g.getObjectTagging}, hasQuery("tagging"))
	add(obj, "GET", key, route{"GetObjectAttributes", access.Read, false, g.getObjectAttributes}, hasQuery("attributes"))
	add(obj, "GET", key, route{"GetObjectAcl", access.Read, false, g.getObjectACL}, hasQuery("acl"))
	add(obj, "GET", key, route{"GetObject", access.Read, true, g.getObject})
	add(obj, "HEAD", key, route{"HeadObject", access.Read, true, g.getObject})
	add(obj, "DELETE", key, route{"AbortMultipartUpload", access.ReadWrite, false, g.abortMultipartUpload}, hasQuery("uploadId"))
	add(obj, "DELETE", key, route{"DeleteObjectTagging", access.ReadWrite, false, g.deleteObjectTagging}, hasQuery("tagging"))
	add(obj, "DELETE", key, route{"DeleteObject", access.ReadWrite, false, g.deleteObject})
	add(obj, "POST", key, route{"CreateMultipartUpload", access.ReadWrite, false, g.createMultipartUpload}, hasQuery("uploads"))
	add(obj, "POST", key, route{"CompleteMultipartUpload", access.ReadWrite, false, g.completeMultipartUpload}, hasQuery("uploadId"))

	// Buckets ("/b" and "/b/").
	for _, p := range []string{"/{bucket}", "/{bucket}/"} {
		add(m, "PUT", p, route{"PutBucketAcl", access.ReadWrite, false, g.putBucketACL}, hasQuery("acl"))
		for _, sub := range []string{"versioning", "policy", "cors", "lifecycle", "tagging", "encryption", "object-lock", "website", "logging", "notification", "replication", "ownershipControls", "publicAccessBlock", "accelerate", "requestPayment"} {
			add(m, "PUT", p, route{"PutBucketConfig", access.ReadWrite, false, g.notImplemented}, hasQuery(sub))
		}
		add(m, "PUT", p, route{"CreateBucket", "", false, g.createBucket})
		add(m, "GET", p, route{"GetBucketLocation", access.Read, true, g.getBucketLocation}, hasQuery("location"))
		add(m, "GET", p, route{"ListMultipartUploads", access.Read, false, g.listMultipartUploads}, hasQuery("uploads"))
		add(m, "GET", p, route{"GetBucketAcl", access.Read, false, g.getBucketACL}, hasQuery("acl"))
		add(m, "GET", p, route{"GetBucketVersioning", access.Read, false, g.getBucketVersioning}, hasQuery("versioning"))
		add(m, "GET", p, route{"ListObjectVersions", access.Read, false, g.notImplemented}, hasQuery("versions"))
		for sub, code := range map[string]string{"policy": "NoSuchBucketPolicy", "cors": "NoSuchCORSConfiguration", "lifecycle": "NoSuchLifecycleConfiguration",
			"tagging": "NoSuchTagSet", "encryption": "ServerSideEncryptionConfigurationNotFoundError", "website": "NoSuchWebsiteConfiguration",
			"object-lock": "ObjectLockConfigurationNotFoundError", "ownershipControls": "OwnershipControlsNotFoundError", "publicAccessBlock": "NoSuchPublicAccessBlockConfiguration"} {
			add(m, "GET", p, route{"GetBucketConfig", access.Read, false, g.noSuchConfig(code)}, hasQuery(sub))
		}
		add(m, "GET", p, route{"ListObjectsV2", access.Read, true, g.listObjectsV2}, func(r *http.Request, _ *mux.RouteMatch) bool { return r.URL.Query().Get("list-type") == "2" })
		add(m, "GET", p, route{"ListObjects", access.Read, true, g.listObjectsV1})
		add(m, "HEAD", p, route{"HeadBucket", access.Read, true, g.headBucket})
		add(m, "DELETE", p, route{"DeleteBucket", access.ReadWrite, false, g.deleteBucket})
		add(m, "POST", p, route{"DeleteObjects", access.ReadWrite, false, g.deleteObjects}, hasQuery("delete"))
	}
	add(m, "GET", "/", route{"ListBuckets", "", false, g.listBuckets})
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.writeError(w, r, errCode("MethodNotAllowed", ""))
	})
	m.MethodNotAllowedHandler = m.NotFoundHandler
	return m
}

// wrap checks what the caller may do and runs the handler.
func (g *Gateway) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := reqOf(r)
		rc.op = rt.op
		vars := mux.Vars(r)
		rc.bucket, rc.object = vars["bucket"], vars["key"]
		if err := g.authorize(r, rc, rt); err != nil {
			g.writeError(w, r, err)
			return
		}
		if err := rt.h(w, r, rc); err != nil {
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				// Headers are out: the connection is the only way to say it.
				g.log.Warn("s3 gateway: failed after the response started", "op", rc.op, "request_id", rc.id, "err", err)
				panic(http.ErrAbortHandler)
			}
			g.writeError(w, r, err)
		}
	})
}

func (g *Gateway) authorize(r *http.Request, rc *reqCtx, rt route) error {
	if rc.bucket != "" && !access.ValidBucketName(rc.bucket) && rt.op != "CreateBucket" {
		// A name no bucket can have: report it as missing, as S3 does.
		return errCode("NoSuchBucket", "")
	}
	if rc.key == nil {
		if rt.publicRead && rc.bucket != "" && g.bucketPublicRead(r.Context(), rc.bucket) {
			return nil
		}
		return errCode("AccessDenied", "Anonymous access is refused: sign the request, or make the bucket public-read.")
	}
	if rt.need == "" {
		if rt.op == "CreateBucket" && !rc.key.Allows(rc.bucket, access.ReadWrite) {
			return errCode("AccessDenied", "")
		}
		return nil
	}
	if !rc.key.Allows(rc.bucket, rt.need) {
		return errCode("AccessDenied", "")
	}
	return nil
}

func (g *Gateway) notImplemented(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return errCode("NotImplemented", "%s is not implemented by flyfs.", rc.op)
}

func (g *Gateway) noSuchConfig(code string) handler {
	return func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
		if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
			return err
		}
		return &APIError{Code: code, Status: http.StatusNotFound, Message: "The bucket has no such configuration."}
	}
}
