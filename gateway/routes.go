package gateway

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/flyfs/flyfs/core/access"
	"github.com/gorilla/mux"
)

// handler is one S3 operation; an error it returns becomes the S3 error
// response (when nothing was written yet).
type handler func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error

// route describes an operation for the router: its name (metrics, logs,
// the NotImplemented message, the S3 action of policies), the permission
// a key needs on its bucket, and its handler (nil: the operation is
// answered NotImplemented, naming it).
type route struct {
	op   string
	need access.Permission // "" : service level (ListBuckets, CreateBucket)
	h    handler
}

// A request is on one of three levels: the service ("/"), a bucket ("/b",
// "/b/") or an object ("/b/key"). Within a level its subresource (the
// query parameter that names a part of the resource: ?acl, ?tagging,
// ?uploadId=...; "" for none) and its method select the operation. Every
// subresource S3 has is in these tables, for every method S3 gives it, so
// nothing falls through to the plain operation of the level (PutObject,
// GetObject, DeleteBucket, a listing): a subresource or method a level does
// not have is MethodNotAllowed, a query parameter shaped like a subresource
// that S3 does not have is NotImplemented, naming it.
type level uint8

const (
	serviceLevel level = iota
	bucketLevel
	objectLevel
)

// chooser picks the operation among those that share a subresource and a
// method (GetObject and its sibling by headers or parameters).
type chooser func(r *http.Request) route

// opTable maps subresource -> method -> operation.
type opTable map[string]map[string]chooser

func one(rt route) chooser { return func(*http.Request) route { return rt } }

// byQuery picks yes when the request has the query parameter, else no.
func byQuery(name string, yes, no route) chooser {
	return func(r *http.Request) route {
		if r.URL.Query().Has(name) {
			return yes
		}
		return no
	}
}

// byHeader picks yes when the request has the header, else no.
func byHeader(name string, yes, no route) chooser {
	return func(r *http.Request) route {
		if r.Header.Get(name) != "" {
			return yes
		}
		return no
	}
}

// ni is an operation flyfs answers NotImplemented, naming it.
func ni(op string) route {
	need := access.ReadWrite
	if strings.HasPrefix(op, "Get") || strings.HasPrefix(op, "List") || op == "CreateSession" {
		need = access.Read
	}
	return route{op: op, need: need}
}

// configOps is the answer set of a bucket configuration flyfs does not
// keep: GET answers what AWS answers for a bucket without one (notFound,
// or nil for NotImplemented), PUT and DELETE are NotImplemented.
func (g *Gateway) configOps(get, put, del, notFound string) map[string]chooser {
	ops := map[string]chooser{}
	if get != "" {
		rt := ni(get)
		if notFound != "" {
			rt.h = g.noSuchConfig(notFound)
		}
		ops["GET"] = one(rt)
	}
	if put != "" {
		ops["PUT"] = one(ni(put))
	}
	if del != "" {
		ops["DELETE"] = one(ni(del))
	}
	return ops
}

// idConfigOps is configOps for the configurations kept by id (analytics,
// inventory, metrics, intelligent-tiering): GET without an id lists them.
func idConfigOps(name, list string) map[string]chooser {
	return map[string]chooser{
		"GET":    byQuery("id", ni("GetBucket"+name+"Configuration"), ni(list)),
		"PUT":    one(ni("PutBucket" + name + "Configuration")),
		"DELETE": one(ni("DeleteBucket" + name + "Configuration")),
	}
}

// opTables builds the bucket and object tables; the list of operations is
// aws-sdk-go-v2's service/s3 (every S3 operation and the query that
// selects it).
func (g *Gateway) opTables() (bucket, object opTable) {
	rw, rd := access.ReadWrite, access.Read
	bucket = opTable{
		"": {
			"GET": func(r *http.Request) route {
				if r.URL.Query().Get("list-type") == "2" {
					return route{"ListObjectsV2", rd, g.listObjectsV2}
				}
				return route{"ListObjects", rd, g.listObjectsV1}
			},
			"HEAD":   one(route{"HeadBucket", rd, g.headBucket}),
			"PUT":    one(route{"CreateBucket", "", g.createBucket}),
			"DELETE": one(route{"DeleteBucket", rw, g.deleteBucket}),
			"POST":   one(route{"PostObject", rw, g.postObject}), // a browser form upload, authorized by its policy
		},
		"abac":       g.configOps("GetBucketAbac", "PutBucketAbac", "", ""),
		"accelerate": {"GET": one(route{"GetBucketAccelerateConfiguration", rd, g.getBucketAccelerate}), "PUT": one(ni("PutBucketAccelerateConfiguration"))},
		"acl": {
			"GET": one(route{"GetBucketAcl", rd, g.getBucketACL}),
			"PUT": one(route{"PutBucketAcl", rw, g.putBucketACL}),
		},
		"analytics": idConfigOps("Analytics", "ListBucketAnalyticsConfigurations"),
		"cors": {
			"GET":    one(route{"GetBucketCors", rd, g.getBucketCors}),
			"PUT":    one(route{"PutBucketCors", rw, g.putBucketCors}),
			"DELETE": one(route{"DeleteBucketCors", rw, g.deleteBucketCors}),
		},
		"delete": {"POST": one(route{"DeleteObjects", rw, g.deleteObjects})},
		"encryption": {
			"GET":    one(route{"GetBucketEncryption", rd, g.getBucketEncryption}),
			"PUT":    one(route{"PutBucketEncryption", rw, g.putBucketEncryption}),
			"DELETE": one(route{"DeleteBucketEncryption", rw, g.deleteBucketEncryption}),
		},
		"intelligent-tiering": idConfigOps("IntelligentTiering", "ListBucketIntelligentTieringConfigurations"),
		"inventory":           idConfigOps("Inventory", "ListBucketInventoryConfigurations"),
		"lifecycle": {
			"GET":    one(route{"GetBucketLifecycleConfiguration", rd, g.getBucketLifecycle}),
			"PUT":    one(route{"PutBucketLifecycleConfiguration", rw, g.putBucketLifecycle}),
			"DELETE": one(route{"DeleteBucketLifecycle", rw, g.deleteBucketLifecycle}),
		},
		"location":                {"GET": one(route{"GetBucketLocation", rd, g.getBucketLocation})},
		"logging":                 {"GET": one(route{"GetBucketLogging", rd, g.getBucketLogging}), "PUT": one(ni("PutBucketLogging"))},
		"metadataConfiguration":   {"GET": one(ni("GetBucketMetadataConfiguration")), "POST": one(ni("CreateBucketMetadataConfiguration")), "DELETE": one(ni("DeleteBucketMetadataConfiguration"))},
		"metadataTable":           {"GET": one(ni("GetBucketMetadataTableConfiguration")), "POST": one(ni("CreateBucketMetadataTableConfiguration")), "DELETE": one(ni("DeleteBucketMetadataTableConfiguration"))},
		"metadataJournalTable":    {"PUT": one(ni("UpdateBucketMetadataJournalTableConfiguration"))},
		"metadataInventoryTable":  {"PUT": one(ni("UpdateBucketMetadataInventoryTableConfiguration"))},
		"metadataAnnotationTable": {"PUT": one(ni("UpdateBucketMetadataAnnotationTableConfiguration"))},
		"metrics":                 idConfigOps("Metrics", "ListBucketMetricsConfigurations"),
		"notification":            {"GET": one(route{"GetBucketNotificationConfiguration", rd, g.getBucketNotification}), "PUT": one(ni("PutBucketNotificationConfiguration"))},
		"object-lock": {"GET": one(route{"GetObjectLockConfiguration", rd, g.getObjectLockConfiguration}),
			"PUT": one(route{"PutObjectLockConfiguration", rw, g.putObjectLockConfiguration})},
		"ownershipControls": {
			"GET":    one(route{"GetBucketOwnershipControls", rd, g.getBucketOwnershipControls}),
			"PUT":    one(route{"PutBucketOwnershipControls", rw, g.putBucketOwnershipControls}),
			"DELETE": one(route{"DeleteBucketOwnershipControls", rw, g.deleteBucketOwnershipControls}),
		},
		"policy": {
			"GET":    one(route{"GetBucketPolicy", rd, g.getBucketPolicy}),
			"PUT":    one(route{"PutBucketPolicy", rw, g.putBucketPolicy}),
			"DELETE": one(route{"DeleteBucketPolicy", rw, g.deleteBucketPolicy}),
		},
		"policyStatus": {"GET": one(route{"GetBucketPolicyStatus", rd, g.getBucketPolicyStatus})},
		"publicAccessBlock": {
			"GET":    one(route{"GetPublicAccessBlock", rd, g.getPublicAccessBlock}),
			"PUT":    one(route{"PutPublicAccessBlock", rw, g.putPublicAccessBlock}),
			"DELETE": one(route{"DeletePublicAccessBlock", rw, g.deletePublicAccessBlock}),
		},
		"replication":    g.configOps("GetBucketReplication", "PutBucketReplication", "DeleteBucketReplication", "ReplicationConfigurationNotFoundError"),
		"requestPayment": {"GET": one(route{"GetBucketRequestPayment", rd, g.getBucketRequestPayment}), "PUT": one(ni("PutBucketRequestPayment"))},
		"session":        {"GET": one(ni("CreateSession"))},
		"tagging": {
			"GET":    one(route{"GetBucketTagging", rd, g.getBucketTagging}),
			"PUT":    one(route{"PutBucketTagging", rw, g.putBucketTagging}),
			"DELETE": one(route{"DeleteBucketTagging", rw, g.deleteBucketTagging}),
		},
		"uploads":    {"GET": one(route{"ListMultipartUploads", rd, g.listMultipartUploads})},
		"versioning": {"GET": one(route{"GetBucketVersioning", rd, g.getBucketVersioning}), "PUT": one(route{"PutBucketVersioning", rw, g.putBucketVersioning})},
		"versions":   {"GET": one(route{"ListObjectVersions", rd, g.listObjectVersions})},
		"website":    g.configOps("GetBucketWebsite", "PutBucketWebsite", "DeleteBucketWebsite", "NoSuchWebsiteConfiguration"),
	}
	object = opTable{
		"": {
			"GET":    one(route{"GetObject", rd, g.getObject}),
			"HEAD":   one(route{"HeadObject", rd, g.getObject}),
			"PUT":    byHeader("X-Amz-Copy-Source", route{"CopyObject", rw, g.copyObject}, route{"PutObject", rw, g.putObject}),
			"DELETE": one(route{"DeleteObject", rw, g.deleteObject}),
		},
		"acl": {
			"GET": one(route{"GetObjectAcl", rd, g.getObjectACL}),
			"PUT": one(route{"PutObjectAcl", rw, g.putObjectACL}),
		},
		"annotation": {
			"GET":    byQuery("annotationName", ni("GetObjectAnnotation"), ni("ListObjectAnnotations")),
			"PUT":    one(ni("PutObjectAnnotation")),
			"DELETE": one(ni("DeleteObjectAnnotation")),
		},
		"attributes": {"GET": one(route{"GetObjectAttributes", rd, g.getObjectAttributes})},
		"encryption": {"PUT": one(ni("UpdateObjectEncryption"))},
		"legal-hold": {
			"GET": one(route{"GetObjectLegalHold", rd, g.getObjectLegalHold}),
			"PUT": one(route{"PutObjectLegalHold", rw, g.putObjectLegalHold}),
		},
		"renameObject": {"PUT": one(route{"RenameObject", rw, g.renameObject})},
		"restore":      {"POST": one(ni("RestoreObject"))},
		"retention": {
			"GET": one(route{"GetObjectRetention", rd, g.getObjectRetention}),
			"PUT": one(route{"PutObjectRetention", rw, g.putObjectRetention}),
		},
		"select": {"POST": one(ni("SelectObjectContent"))},
		"tagging": {
			"GET":    one(route{"GetObjectTagging", rd, g.getObjectTagging}),
			"PUT":    one(route{"PutObjectTagging", rw, g.putObjectTagging}),
			"DELETE": one(route{"DeleteObjectTagging", rw, g.deleteObjectTagging}),
		},
		"torrent": {"GET": one(ni("GetObjectTorrent"))},
		"uploads": {"POST": one(route{"CreateMultipartUpload", rw, g.createMultipartUpload})},
		"uploadId": {
			"GET":    one(route{"ListParts", rd, g.listParts}),
			"PUT":    byHeader("X-Amz-Copy-Source", route{"UploadPartCopy", rw, g.uploadPartCopy}, route{"UploadPart", rw, g.uploadPart}),
			"POST":   one(route{"CompleteMultipartUpload", rw, g.completeMultipartUpload}),
			"DELETE": one(route{"AbortMultipartUpload", rw, g.abortMultipartUpload}),
		},
	}
	// A part number without an upload id is a part of no upload (never a
	// PutObject): UploadPart answers it.
	object["partNumber"] = map[string]chooser{"PUT": object["uploadId"]["PUT"]}
	return bucket, object
}

// queryParams are the query parameters of S3 operations that are not
// subresources (and the SDKs' x-id): they never name an operation.
var queryParams = map[string]bool{
	"versionId": true, "id": true, "partNumber": true, "annotationName": true, "annotation-prefix": true, "max-annotation-results": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
	"continuation-token": true, "bucket-region": true, "max-buckets": true, "max-directory-buckets": true, "prefix": true,
	"delimiter": true, "encoding-type": true, "key-marker": true, "max-uploads": true, "upload-id-marker": true, "marker": true,
	"max-keys": true, "list-type": true, "fetch-owner": true, "start-after": true, "version-id-marker": true, "max-parts": true,
	"part-number-marker": true, "select-type": true, "x-id": true,
}

// pick finds the operation of a request on level lv.
func (g *Gateway) pick(lv level, r *http.Request) (route, error) {
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	var subs []string
	for _, name := range names {
		vals := q[name]
		switch {
		case g.subresource[name]:
			if name == "partNumber" {
				continue // a parameter, and a subresource only of a PUT without an upload id (below)
			}
			subs = append(subs, name)
		case queryParams[name], len(name) > 6 && strings.EqualFold(name[:6], "X-Amz-"):
		case len(vals) == 0 || (len(vals) == 1 && vals[0] == ""):
			// Shaped like a subresource, and none S3 has: a feature flyfs
			// does not know of, refused rather than ignored.
			return route{}, errCode("NotImplemented", "The subresource ?%s is not one flyfs knows; the request is refused rather than served as if it were absent.", name)
		}
	}
	if len(subs) > 1 {
		return route{}, errCode("InvalidRequest", "The request names more than one subresource (?%s); an S3 operation has one.", strings.Join(subs, ", ?"))
	}
	sub := ""
	if len(subs) == 1 {
		sub = subs[0]
	} else if lv == objectLevel && r.Method == http.MethodPut && q.Has("partNumber") {
		sub = "partNumber"
	}
	var table opTable
	switch lv {
	case serviceLevel:
		if sub != "" {
			return route{}, errCode("MethodNotAllowed", "?%s is a subresource of a bucket or an object; the service (/) has none.", sub)
		}
		if r.Method == http.MethodGet {
			return route{"ListBuckets", "", g.listBuckets}, nil
		}
		return route{}, errCode("MethodNotAllowed", "")
	case bucketLevel:
		table = g.bucketOps
	default:
		table = g.objectOps
	}
	methods, ok := table[sub]
	if !ok {
		if lv == bucketLevel {
			return route{}, errCode("MethodNotAllowed", "?%s is a subresource of an object, not of a bucket.", sub)
		}
		return route{}, errCode("MethodNotAllowed", "?%s is a subresource of a bucket, not of an object.", sub)
	}
	choose, ok := methods[r.Method]
	if !ok {
		if sub == "" {
			return route{}, errCode("MethodNotAllowed", "")
		}
		what := "a bucket"
		if lv == objectLevel {
			what = "an object"
		}
		return route{}, errCode("MethodNotAllowed", "The ?%s subresource of %s has no %s operation.", sub, what, r.Method)
	}
	return choose(r), nil
}

// routes builds the router: mux finds the level and the bucket and key;
// pick finds the operation.
func (g *Gateway) routes() *mux.Router {
	g.bucketOps, g.objectOps = g.opTables()
	g.subresource = map[string]bool{}
	for _, t := range []opTable{g.bucketOps, g.objectOps} {
		for sub := range t {
			if sub != "" {
				g.subresource[sub] = true
			}
		}
	}
	m := mux.NewRouter()
	m.SkipClean(true) // keys like "a//b" must reach the handler to be refused clearly
	m.Path("/").Handler(g.dispatch(serviceLevel))
	m.Path("/{bucket}").Handler(g.dispatch(bucketLevel))
	m.Path("/{bucket}/").Handler(g.dispatch(bucketLevel))
	// (?s): a key may hold any character, a newline too.
	m.Path("/{bucket}/{key:(?s).+}").Handler(g.dispatch(objectLevel))
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.writeError(w, r, errCode("MethodNotAllowed", ""))
	})
	m.MethodNotAllowedHandler = m.NotFoundHandler
	return m
}

// dispatch serves the requests of one level.
func (g *Gateway) dispatch(lv level) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := reqOf(r)
		vars := mux.Vars(r)
		rc.bucket, rc.object = vars["bucket"], vars["key"]
		rt, err := g.pick(lv, r)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		g.serve(rt, w, r, rc)
	})
}

// serve checks what the caller may do and runs the operation.
func (g *Gateway) serve(rt route, w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	rc.op = rt.op
	if err := g.admit(r, rc, rt); err != nil {
		g.writeError(w, r, err)
		return
	}
	h := rt.h
	if h == nil {
		h = g.notImplemented
	}
	if sseOps[rt.op] && g.encryptedAtRest(r.Context()) {
		w.Header().Set("X-Amz-Server-Side-Encryption", sseAES256)
	}
	if err := h(w, r, rc); err != nil {
		if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
			// Headers are out: the connection is the only way to say it.
			g.log.Warn("s3 gateway: failed after the response started", "op", rc.op, "request_id", rc.id, "err", err)
			panic(http.ErrAbortHandler)
		}
		g.writeError(w, r, err)
	}
}

// admit is everything decided before an operation runs: the caller's
// permission, then what the request asks for that the operation cannot
// give (a version, a protection header).
func (g *Gateway) admit(r *http.Request, rc *reqCtx, rt route) error {
	if rt.op == "PostObject" {
		return nil // authorized by the signature of its form's policy (post.go)
	}
	if err := g.authorize(r, rc, rt); err != nil {
		return err
	}
	if rt.h == nil {
		return nil // NotImplemented says it all
	}
	if err := checkVersionID(r.URL.Query(), rt.op); err != nil {
		return err
	}
	h, err := g.checkSSE(r.Context(), r.Header, rt.op)
	if err != nil {
		return err
	}
	return refuseHeaders(h, rt.op)
}

// versionedOps are the implemented operations that take a versionId; its
// syntax is checked here, the version it names by the operation.
var versionedOps = map[string]bool{
	"GetObject": true, "HeadObject": true, "DeleteObject": true, "GetObjectAcl": true, "PutObjectAcl": true, "GetObjectAttributes": true,
	"GetObjectTagging": true, "PutObjectTagging": true, "DeleteObjectTagging": true, "GetObjectRetention": true, "GetObjectLegalHold": true,
	"PutObjectRetention": true, "PutObjectLegalHold": true,
}

func checkVersionID(q url.Values, op string) error {
	if !versionedOps[op] || !q.Has("versionId") {
		return nil
	}
	return checkVersionIDSyntax(q.Get("versionId"))
}

func (g *Gateway) authorize(r *http.Request, rc *reqCtx, rt route) error {
	if rc.bucket != "" && !access.ValidBucketName(rc.bucket) && rt.op != "CreateBucket" {
		// A name no bucket can have: report it as missing, as S3 does.
		return errCode("NoSuchBucket", "")
	}
	if rt.need == "" {
		if rc.key == nil {
			return errCode("AccessDenied", "Anonymous access is refused: sign the request.")
		}
		if rt.op == "CreateBucket" && !rc.key.Allows(rc.bucket, access.ReadWrite) {
			// A name that is taken is taken for everyone, as in S3.
			if access.ValidBucketName(rc.bucket) && g.nameTaken(r.Context(), rc.bucket) {
				return errCode("BucketAlreadyExists", "")
			}
			return errCode("AccessDenied", "")
		}
		return nil
	}
	if rt.op == "DeleteObjects" {
		// Decided key by key (deleteObjects): a policy may allow or deny
		// some of them.
		if a, err := g.bucketAuthOf(r.Context(), rc.bucket); err != nil || a.policy != nil {
			return err
		}
	}
	return g.decide(r, rc, rt.op, rc.bucket, rc.object, rt.need)
}

func (g *Gateway) notImplemented(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return errCode("NotImplemented", "%s is not implemented by flyfs.", rc.op)
}

func (g *Gateway) noSuchConfig(code string) handler {
	return func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
		if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
			return err
		}
		return errCode(code, noConfig)
	}
}
