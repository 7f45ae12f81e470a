package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/client"
)

// The S3 subresources, as aws-sdk-go-v2's service/s3 binds its operations
// (the query names of every operation's URI).
var (
	walkBucketSubs = []string{"abac", "accelerate", "acl", "analytics", "cors", "delete", "encryption", "intelligent-tiering", "inventory",
		"lifecycle", "location", "logging", "metadataConfiguration", "metadataTable", "metadataJournalTable", "metadataInventoryTable",
		"metadataAnnotationTable", "metrics", "notification", "object-lock", "ownershipControls", "policy", "policyStatus",
		"publicAccessBlock", "replication", "requestPayment", "session", "tagging", "uploads", "versioning", "versions", "website"}
	walkObjectSubs = []string{"acl", "annotation", "attributes", "encryption", "legal-hold", "renameObject", "restore", "retention",
		"select", "tagging", "torrent", "uploads", "uploadId"}
	walkMethods = []string{"GET", "HEAD", "PUT", "POST", "DELETE"}
)

// walkWant is the answer a request must get: the operation that answers it
// (the metrics label), the HTTP status and the S3 error code ("" for a
// success).
type walkWant struct {
	op     string
	status int
	code   string
}

func unimpl(op string) walkWant           { return walkWant{op, http.StatusNotImplemented, "NotImplemented"} }
func done(op string, status int) walkWant { return walkWant{op, status, ""} }
func absent(op, code string) walkWant     { return walkWant{op, http.StatusNotFound, code} }

// walkOps is every S3 operation on a bucket ("b ...") or an object ("o
// ...") with the query that selects it, and what flyfs answers for it in
// the walk: on the empty bucket "walkb", and on "walk/obj", with a body
// that is no valid document for any of them.
var walkOps = map[string]walkWant{
	"b GET abac":                                     unimpl("GetBucketAbac"),
	"b PUT abac":                                     unimpl("PutBucketAbac"),
	"b GET accelerate":                               done("GetBucketAccelerateConfiguration", 200),
	"b PUT accelerate":                               unimpl("PutBucketAccelerateConfiguration"),
	"b GET acl":                                      done("GetBucketAcl", 200),
	"b PUT acl":                                      {"PutBucketAcl", 400, "MalformedACLError"},
	"b GET analytics":                                unimpl("ListBucketAnalyticsConfigurations"),
	"b GET analytics&id=x":                           unimpl("GetBucketAnalyticsConfiguration"),
	"b PUT analytics":                                unimpl("PutBucketAnalyticsConfiguration"),
	"b PUT analytics&id=x":                           unimpl("PutBucketAnalyticsConfiguration"),
	"b DELETE analytics":                             unimpl("DeleteBucketAnalyticsConfiguration"),
	"b DELETE analytics&id=x":                        unimpl("DeleteBucketAnalyticsConfiguration"),
	"b GET cors":                                     absent("GetBucketCors", "NoSuchCORSConfiguration"),
	"b PUT cors":                                     {"PutBucketCors", 400, "MalformedXML"},
	"b DELETE cors":                                  done("DeleteBucketCors", 204),
	"b POST delete":                                  {"DeleteObjects", 400, "MalformedXML"},
	"b GET encryption":                               absent("GetBucketEncryption", "ServerSideEncryptionConfigurationNotFoundError"),
	"b PUT encryption":                               {"PutBucketEncryption", 400, "MalformedXML"},
	"b DELETE encryption":                            done("DeleteBucketEncryption", 204),
	"b GET intelligent-tiering":                      unimpl("ListBucketIntelligentTieringConfigurations"),
	"b GET intelligent-tiering&id=x":                 unimpl("GetBucketIntelligentTieringConfiguration"),
	"b PUT intelligent-tiering":                      unimpl("PutBucketIntelligentTieringConfiguration"),
	"b PUT intelligent-tiering&id=x":                 unimpl("PutBucketIntelligentTieringConfiguration"),
	"b DELETE intelligent-tiering":                   unimpl("DeleteBucketIntelligentTieringConfiguration"),
	"b DELETE intelligent-tiering&id=x":              unimpl("DeleteBucketIntelligentTieringConfiguration"),
	"b GET inventory":                                unimpl("ListBucketInventoryConfigurations"),
	"b GET inventory&id=x":                           unimpl("GetBucketInventoryConfiguration"),
	"b PUT inventory":                                unimpl("PutBucketInventoryConfiguration"),
	"b PUT inventory&id=x":                           unimpl("PutBucketInventoryConfiguration"),
	"b DELETE inventory":                             unimpl("DeleteBucketInventoryConfiguration"),
	"b DELETE inventory&id=x":                        unimpl("DeleteBucketInventoryConfiguration"),
	"b GET lifecycle":                                absent("GetBucketLifecycleConfiguration", "NoSuchLifecycleConfiguration"),
	"b PUT lifecycle":                                {"PutBucketLifecycleConfiguration", 400, "MalformedXML"},
	"b DELETE lifecycle":                             done("DeleteBucketLifecycle", 204),
	"b GET location":                                 done("GetBucketLocation", 200),
	"b GET logging":                                  done("GetBucketLogging", 200),
	"b PUT logging":                                  unimpl("PutBucketLogging"),
	"b GET metadataConfiguration":                    unimpl("GetBucketMetadataConfiguration"),
	"b POST metadataConfiguration":                   unimpl("CreateBucketMetadataConfiguration"),
	"b DELETE metadataConfiguration":                 unimpl("DeleteBucketMetadataConfiguration"),
	"b GET metadataTable":                            unimpl("GetBucketMetadataTableConfiguration"),
	"b POST metadataTable":                           unimpl("CreateBucketMetadataTableConfiguration"),
	"b DELETE metadataTable":                         unimpl("DeleteBucketMetadataTableConfiguration"),
	"b PUT metadataJournalTable":                     unimpl("UpdateBucketMetadataJournalTableConfiguration"),
	"b PUT metadataInventoryTable":                   unimpl("UpdateBucketMetadataInventoryTableConfiguration"),
	"b PUT metadataAnnotationTable":                  unimpl("UpdateBucketMetadataAnnotationTableConfiguration"),
	"b GET metrics":                                  unimpl("ListBucketMetricsConfigurations"),
	"b GET metrics&id=x":                             unimpl("GetBucketMetricsConfiguration"),
	"b PUT metrics":                                  unimpl("PutBucketMetricsConfiguration"),
	"b PUT metrics&id=x":                             unimpl("PutBucketMetricsConfiguration"),
	"b DELETE metrics":                               unimpl("DeleteBucketMetricsConfiguration"),
	"b DELETE metrics&id=x":                          unimpl("DeleteBucketMetricsConfiguration"),
	"b GET notification":                             done("GetBucketNotificationConfiguration", 200),
	"b PUT notification":                             unimpl("PutBucketNotificationConfiguration"),
	"b GET object-lock":                              absent("GetObjectLockConfiguration", "ObjectLockConfigurationNotFoundError"),
	"b PUT object-lock":                              {"PutObjectLockConfiguration", 400, "MalformedXML"},
	"b GET ownershipControls":                        absent("GetBucketOwnershipControls", "OwnershipControlsNotFoundError"),
	"b PUT ownershipControls":                        {"PutBucketOwnershipControls", 400, "MalformedXML"},
	"b DELETE ownershipControls":                     done("DeleteBucketOwnershipControls", 204),
	"b GET policy":                                   absent("GetBucketPolicy", "NoSuchBucketPolicy"),
	"b PUT policy":                                   {"PutBucketPolicy", 400, "MalformedPolicy"},
	"b DELETE policy":                                done("DeleteBucketPolicy", 204),
	"b GET policyStatus":                             absent("GetBucketPolicyStatus", "NoSuchBucketPolicy"),
	"b GET publicAccessBlock":                        absent("GetPublicAccessBlock", "NoSuchPublicAccessBlockConfiguration"),
	"b PUT publicAccessBlock":                        {"PutPublicAccessBlock", 400, "MalformedXML"},
	"b DELETE publicAccessBlock":                     done("DeletePublicAccessBlock", 204),
	"b GET replication":                              absent("GetBucketReplication", "ReplicationConfigurationNotFoundError"),
	"b PUT replication":                              unimpl("PutBucketReplication"),
	"b DELETE replication":                           unimpl("DeleteBucketReplication"),
	"b GET requestPayment":                           done("GetBucketRequestPayment", 200),
	"b PUT requestPayment":                           unimpl("PutBucketRequestPayment"),
	"b GET session":                                  unimpl("CreateSession"),
	"b GET tagging":                                  absent("GetBucketTagging", "NoSuchTagSet"),
	"b PUT tagging":                                  {"PutBucketTagging", 400, "MalformedXML"},
	"b DELETE tagging":                               done("DeleteBucketTagging", 204),
	"b GET uploads":                                  done("ListMultipartUploads", 200),
	"b GET versioning":                               done("GetBucketVersioning", 200),
	"b PUT versioning":                               {"PutBucketVersioning", 400, "MalformedXML"},
	"b GET versions":                                 done("ListObjectVersions", 200),
	"b GET website":                                  absent("GetBucketWebsite", "NoSuchWebsiteConfiguration"),
	"b PUT website":                                  unimpl("PutBucketWebsite"),
	"b DELETE website":                               unimpl("DeleteBucketWebsite"),
	"o GET acl":                                      done("GetObjectAcl", 200),
	"o PUT acl":                                      {"PutObjectAcl", 400, "MalformedACLError"},
	"o GET annotation":                               unimpl("ListObjectAnnotations"),
	"o GET annotation&annotationName=x":              unimpl("GetObjectAnnotation"),
	"o PUT annotation":                               unimpl("PutObjectAnnotation"),
	"o PUT annotation&annotationName=x":              unimpl("PutObjectAnnotation"),
	"o DELETE annotation":                            unimpl("DeleteObjectAnnotation"),
	"o DELETE annotation&annotationName=x":           unimpl("DeleteObjectAnnotation"),
	"o GET attributes":                               done("GetObjectAttributes", 200),
	"o PUT encryption":                               unimpl("UpdateObjectEncryption"),
	"o GET legal-hold":                               {"GetObjectLegalHold", 400, "InvalidRequest"},
	"o PUT legal-hold":                               {"PutObjectLegalHold", 400, "InvalidRequest"},
	"o PUT renameObject":                             {"RenameObject", 400, "InvalidArgument"},
	"o POST restore":                                 unimpl("RestoreObject"),
	"o GET retention":                                {"GetObjectRetention", 400, "InvalidRequest"},
	"o PUT retention":                                {"PutObjectRetention", 400, "InvalidRequest"},
	"o POST select&select-type=2":                    unimpl("SelectObjectContent"),
	"o GET tagging":                                  done("GetObjectTagging", 200),
	"o PUT tagging":                                  {"PutObjectTagging", 400, "MalformedXML"},
	"o DELETE tagging":                               done("DeleteObjectTagging", 204),
	"o GET torrent":                                  unimpl("GetObjectTorrent"),
	"o POST uploads":                                 done("CreateMultipartUpload", 200),
	"o GET uploadId=nope":                            absent("ListParts", "NoSuchUpload"),
	"o PUT uploadId=nope":                            {"UploadPart", 400, "InvalidArgument"},
	"o PUT uploadId=nope&partNumber=1":               absent("UploadPart", "NoSuchUpload"),
	"o POST uploadId=nope":                           absent("CompleteMultipartUpload", "NoSuchUpload"),
	"o DELETE uploadId=nope":                         absent("AbortMultipartUpload", "NoSuchUpload"),
	"o GET uploadId=nope&partNumber=1":               absent("ListParts", "NoSuchUpload"),
	"o POST uploadId=nope&partNumber=1":              absent("CompleteMultipartUpload", "NoSuchUpload"),
	"o DELETE uploadId=nope&partNumber=1":            absent("AbortMultipartUpload", "NoSuchUpload"),
	"b GET ":                                         done("ListObjects", 200),
	"b GET list-type=2":                              done("ListObjectsV2", 200),
	"b HEAD ":                                        done("HeadBucket", 200),
	"b PUT ":                                         {"CreateBucket", 400, "MalformedXML"},
	"b POST ":                                        {"PostObject", 412, "PreconditionFailed"},
	"o GET ":                                         done("GetObject", 200),
	"o HEAD ":                                        done("HeadObject", 200),
	"o PUT x-id=PutObjectRetention&retention":        {"PutObjectRetention", 400, "InvalidRequest"},
	"o GET versionId=null":                           done("GetObject", 200),
	"o GET versionId=3HL4kqtJlcpXroDTDmJ":            {"GetObject", 400, "InvalidArgument"},
	"o HEAD versionId=3HL4kqtJlcpXroDTDmJ":           {"HeadObject", 400, ""},
	"o DELETE versionId=3HL4kqtJlcpXroDTDmJ":         {"DeleteObject", 400, "InvalidArgument"},
	"o GET tagging&versionId=3HL4kqtJlcpXroDTDmJ":    {"GetObjectTagging", 400, "InvalidArgument"},
	"o PUT tagging&versionId=3HL4kqtJlcpXroDTDmJ":    {"PutObjectTagging", 400, "InvalidArgument"},
	"o DELETE tagging&versionId=3HL4kqtJlcpXroDTDmJ": {"DeleteObjectTagging", 400, "InvalidArgument"},
	"o PUT partNumber=1":                             absent("UploadPart", "NoSuchUpload"),
}

// walkQueries are the queries a subresource is tried with.
func walkQueries(sub string) []string {
	switch sub {
	case "analytics", "inventory", "metrics", "intelligent-tiering":
		return []string{sub, sub + "&id=x"}
	case "annotation":
		return []string{sub, sub + "&annotationName=x"}
	case "select":
		return []string{sub + "&select-type=2"}
	case "uploadId":
		return []string{"uploadId=nope", "uploadId=nope&partNumber=1"}
	}
	return []string{sub}
}

// TestLiveSubresourceWalk sends every S3 subresource of buckets and
// objects with every method, on both levels, and checks that each is
// answered by its own operation (implemented, or NotImplemented naming it,
// or the error AWS gives for a configuration that does not exist), that a
// subresource a level or method does not have is refused, and that no
// request changed the object's bytes, the bucket's keys or which buckets
// exist.
func TestLiveSubresourceWalk(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "walk")
	mustBucket(t, c, "walkb")
	data := randBytes(64 << 10)
	mustPut(t, c, "walk", "obj", data)
	buckets := func() []string {
		ents, _, err := l.fs.Meta().ReadDir(ctx, l.gw.rootIno, "", 1000, false)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			if e.Name != stagingRoot {
				names = append(names, e.Name)
			}
		}
		return names
	}
	keys := func() []string {
		ents, err := l.fs.ReadDir(ctx, "/walk")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		return names
	}
	wantBuckets, wantKeys := buckets(), keys()

	type walkCase struct{ level, method, query string }
	var cases []walkCase
	seen := map[string]bool{}
	for _, level := range []string{"b", "o"} {
		for _, sub := range append(append(slices.Clone(walkBucketSubs), walkObjectSubs...), "frobnicate") {
			for _, q := range walkQueries(sub) {
				for _, m := range walkMethods {
					k := level + " " + m + " " + q
					if !seen[k] {
						seen[k] = true
						cases = append(cases, walkCase{level, m, q})
					}
				}
			}
		}
	}
	for k := range walkOps {
		if !seen[k] {
			seen[k] = true
			f := strings.SplitN(k, " ", 3)
			cases = append(cases, walkCase{f[0], f[1], f[2]})
		}
	}
	body := []byte("<Junk>not a document of any operation</Junk>")
	for _, tc := range cases {
		k := tc.level + " " + tc.method + " " + tc.query
		want, listed := walkOps[k]
		sub, _, _ := strings.Cut(tc.query, "&")
		sub, _, _ = strings.Cut(sub, "=")
		switch {
		case listed:
		case sub == "frobnicate":
			want = walkWant{"Unknown", http.StatusNotImplemented, "NotImplemented"}
		default:
			want = walkWant{"Unknown", http.StatusMethodNotAllowed, "MethodNotAllowed"}
		}
		if tc.method == "HEAD" {
			want.code = "" // no body
		}
		path := "/walkb"
		if tc.level == "o" {
			path = "/walk/obj"
		}
		if tc.query != "" {
			path += "?" + tc.query
		}
		var b []byte
		if tc.method == "PUT" || tc.method == "POST" {
			b = body
		}
		counter := l.gw.metrics.requests.WithLabelValues(want.op, strconv.Itoa(want.status))
		before := testutilCounter(counter)
		resp, err := http.DefaultClient.Do(l.signed(t, tc.method, path, b, nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e errorBody
		if resp.StatusCode >= 300 && len(raw) > 0 {
			if err := decodeXML(bytes.NewReader(raw), &e); err != nil {
				t.Errorf("%s: error body is not S3's: %s", k, raw)
			}
		}
		if resp.StatusCode != want.status || e.Code != want.code {
			t.Errorf("%s %s: %d %s %q, want %d %s (%s)", tc.method, path, resp.StatusCode, e.Code, e.Message, want.status, want.code, want.op)
		}
		// The gateway counts a request once its handler returned, which
		// can be after the client read the whole answer.
		counted := testutilCounter(counter) - before
		for wait := time.Now().Add(2 * time.Second); counted == 0 && time.Now().Before(wait); counted = testutilCounter(counter) - before {
			time.Sleep(time.Millisecond)
		}
		if counted != 1 {
			t.Errorf("%s %s: not answered as %s (%d %s: %v more)", tc.method, path, want.op, want.status, e.Code, counted)
		}
		switch {
		case want.code == "NotImplemented" && want.op != "Unknown":
			if !strings.Contains(e.Message, want.op) {
				t.Errorf("%s %s: NotImplemented %q does not name %s", tc.method, path, e.Message, want.op)
			}
		case want.code == "NotImplemented", want.code == "MethodNotAllowed":
			if !strings.Contains(e.Message, "?"+sub) {
				t.Errorf("%s %s: %s %q does not name ?%s", tc.method, path, e.Code, e.Message, sub)
			}
		}
		// Nothing changed.
		got, err := fsRead(ctx, l.fs, "/walk/obj")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s %s changed the object: %v, %d bytes", tc.method, path, err, len(got))
		}
		if b := buckets(); !slices.Equal(b, wantBuckets) {
			t.Fatalf("%s %s changed the buckets: %q, want %q", tc.method, path, b, wantBuckets)
		}
		if ks := keys(); !slices.Equal(ks, wantKeys) {
			t.Fatalf("%s %s changed the bucket's keys: %q, want %q", tc.method, path, ks, wantKeys)
		}
	}
	// The service level has no subresources.
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/?cors", 405, "MethodNotAllowed"},
		{"DELETE", "/?policy", 405, "MethodNotAllowed"},
		{"PUT", "/", 405, "MethodNotAllowed"},
		{"GET", "/?frobnicate", 501, "NotImplemented"},
		{"GET", "/?x-id=ListBuckets", 200, ""},
	} {
		resp, err := http.DefaultClient.Do(l.signed(t, tc.method, tc.path, nil, nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		e := readError(t, resp)
		if resp.StatusCode != tc.status || e.Code != tc.code {
			t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, resp.StatusCode, e, tc.status, tc.code)
		}
	}
	if b := buckets(); !slices.Equal(b, wantBuckets) {
		t.Fatalf("the service requests changed the buckets: %q", b)
	}
	// A browser form upload without a signed policy is anonymous, and
	// refused as such on a private bucket.
	resp := postFile(t, l.url+"/walkb", map[string]string{"key": "k"}, "f", []byte("x"))
	if e := readError(t, resp); resp.StatusCode != 403 || !strings.Contains(e.Message, "Anonymous access is refused") {
		t.Errorf("POST Object: %d %+v", resp.StatusCode, e)
	}
	// Two subresources at once name no one operation.
	resp, _ = http.DefaultClient.Do(l.signed(t, "GET", "/walk/obj?acl&tagging", nil, nil, rootAK, rootSK, time.Now()))
	if e := readError(t, resp); resp.StatusCode != 400 || e.Code != "InvalidRequest" || !strings.Contains(e.Message, "?acl") || !strings.Contains(e.Message, "?tagging") {
		t.Errorf("two subresources: %d %+v", resp.StatusCode, e)
	}
}

// TestLiveSubresourcesSDK calls the operations flyfs does not implement
// through the SDK, as tools (Terraform, CDK, cleanup scripts) do: none may
// touch an object or a bucket.
func TestLiveSubresourcesSDK(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "locks")
	mustBucket(t, c, "cfg")
	data := randBytes(3<<20 + 5)
	mustPut(t, c, "locks", "big", data)
	until := time.Now().Add(24 * time.Hour)
	b, k := aws.String("locks"), aws.String("big")
	_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: b, Key: k,
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: &until}})
	if errCodeOf(err) != "InvalidRequest" || !strings.Contains(err.Error(), "Object Lock Configuration") {
		t.Errorf("PutObjectRetention in a bucket without object lock: %v", err)
	}
	_, err = c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: b, Key: k, LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}})
	if errCodeOf(err) != "InvalidRequest" || !strings.Contains(err.Error(), "Object Lock Configuration") {
		t.Errorf("PutObjectLegalHold in a bucket without object lock: %v", err)
	}
	if _, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: b, Key: k}); errCodeOf(err) != "InvalidRequest" {
		t.Errorf("GetObjectRetention: %v", err)
	}
	if _, err := c.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: b, Key: k}); errCodeOf(err) != "InvalidRequest" {
		t.Errorf("GetObjectLegalHold: %v", err)
	}
	_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: k, AccessControlPolicy: &types.AccessControlPolicy{
		Owner: &types.Owner{ID: aws.String("x")}, Grants: []types.Grant{{Permission: types.PermissionRead, Grantee: &types.Grantee{Type: types.TypeGroup, URI: aws.String("http://acs.amazonaws.com/groups/global/LogDelivery")}}}}})
	if errCodeOf(err) != "NotImplemented" || !strings.Contains(err.Error(), "LogDelivery") {
		t.Errorf("PutObjectAcl granting to the LogDelivery group: %v", err)
	}
	_, err = c.RestoreObject(ctx, &s3.RestoreObjectInput{Bucket: b, Key: k, RestoreRequest: &types.RestoreRequest{Days: aws.Int32(1)}})
	if errCodeOf(err) != "NotImplemented" || !strings.Contains(err.Error(), "RestoreObject") {
		t.Errorf("RestoreObject: %v", err)
	}
	if got := mustGet(t, c, "locks", "big"); !bytes.Equal(got, data) {
		t.Fatal("an object subresource replaced the object")
	}

	cb := aws.String("cfg")
	id := aws.String("x")
	for name, call := range map[string]func() error{
		"DeleteBucketWebsite": func() error {
			_, err := c.DeleteBucketWebsite(ctx, &s3.DeleteBucketWebsiteInput{Bucket: cb})
			return err
		},
		"DeleteBucketReplication": func() error {
			_, err := c.DeleteBucketReplication(ctx, &s3.DeleteBucketReplicationInput{Bucket: cb})
			return err
		},
		"DeleteBucketMetricsConfiguration": func() error {
			_, err := c.DeleteBucketMetricsConfiguration(ctx, &s3.DeleteBucketMetricsConfigurationInput{Bucket: cb, Id: id})
			return err
		},
		"DeleteBucketAnalyticsConfiguration": func() error {
			_, err := c.DeleteBucketAnalyticsConfiguration(ctx, &s3.DeleteBucketAnalyticsConfigurationInput{Bucket: cb, Id: id})
			return err
		},
		"DeleteBucketInventoryConfiguration": func() error {
			_, err := c.DeleteBucketInventoryConfiguration(ctx, &s3.DeleteBucketInventoryConfigurationInput{Bucket: cb, Id: id})
			return err
		},
		"DeleteBucketIntelligentTieringConfiguration": func() error {
			_, err := c.DeleteBucketIntelligentTieringConfiguration(ctx, &s3.DeleteBucketIntelligentTieringConfigurationInput{Bucket: cb, Id: id})
			return err
		},
	} {
		err := call()
		if errCodeOf(err) != "NotImplemented" || !strings.Contains(err.Error(), name+" is not implemented") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: cb}); err != nil {
			t.Fatalf("%s deleted the bucket: %v", name, err)
		}
	}
	// Deleting a configuration a bucket does not have is a 204 that leaves
	// the bucket.
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: cb}); err != nil {
		t.Errorf("DeleteBucketPolicy: %v", err)
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: cb}); err != nil {
		t.Errorf("DeletePublicAccessBlock: %v", err)
	}
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: cb}); err != nil {
		t.Errorf("DeleteBucketLifecycle: %v", err)
	}
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: cb}); err != nil {
		t.Errorf("DeleteBucketEncryption: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: cb}); err != nil {
		t.Fatalf("a configuration's delete deleted the bucket: %v", err)
	}
	// What a bucket without these features reads as, as AWS answers it.
	if out, err := c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: cb}); err != nil ||
		len(out.TopicConfigurations)+len(out.QueueConfigurations)+len(out.LambdaFunctionConfigurations) != 0 || out.EventBridgeConfiguration != nil {
		t.Errorf("GetBucketNotificationConfiguration: %v %+v", err, out)
	}
	if out, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: cb}); err != nil || out.LoggingEnabled != nil {
		t.Errorf("GetBucketLogging: %v %+v", err, out)
	}
	if out, err := c.GetBucketAccelerateConfiguration(ctx, &s3.GetBucketAccelerateConfigurationInput{Bucket: cb}); err != nil || out.Status != "" {
		t.Errorf("GetBucketAccelerateConfiguration: %v %+v", err, out)
	}
	if out, err := c.GetBucketRequestPayment(ctx, &s3.GetBucketRequestPaymentInput{Bucket: cb}); err != nil || out.Payer != types.PayerBucketOwner {
		t.Errorf("GetBucketRequestPayment: %v %+v", err, out)
	}
	if _, err := c.GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: cb}); errCodeOf(err) != "ReplicationConfigurationNotFoundError" {
		t.Errorf("GetBucketReplication: %v", err)
	}
	if _, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: cb}); errCodeOf(err) != "NoSuchBucketPolicy" {
		t.Errorf("GetBucketPolicyStatus: %v", err)
	}
	if _, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: aws.String("nosuchbucket")}); errCodeOf(err) != "NoSuchBucket" {
		t.Errorf("GetBucketLogging of a missing bucket: %v", err)
	}
	// The one a bucket's cleanup must reach still works.
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: cb}); err != nil {
		t.Fatal(err)
	}
}

// fsRead reads a whole file through the namespace, bypassing path caches.
func fsRead(ctx context.Context, fs *client.FS, p string) ([]byte, error) {
	in, err := fs.Meta().Resolve(ctx, p, true)
	if err != nil {
		return nil, err
	}
	f, err := fs.OpenInode(ctx, in, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, in.Length)
	n, err := f.ReadAtContext(ctx, buf, 0)
	if err == io.EOF {
		err = nil
	}
	return buf[:n], err
}
