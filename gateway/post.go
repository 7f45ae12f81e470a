package gateway

import (
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/access"
)

// PostObject is the browser form upload: a multipart/form-data POST to the
// bucket whose fields carry the key, the object's headers and a policy its
// signer signed (see postpolicy.go); the file is the last field that
// counts. A signed form is its signer's request, held to the policy; an
// unsigned one is anonymous, which the bucket's policy or ACL must admit.
// SigV2 forms (signature, AWSAccessKeyId) are refused naming the fix.

// maxPostFields bounds what the form's fields before the file may hold.
const maxPostFields = 64 << 10

// postFieldHeaders are the form fields stored as the object's headers, as
// a PUT's headers are.
var postFieldHeaders = map[string]bool{
	"content-type": true, "cache-control": true, "content-disposition": true, "content-encoding": true,
	"content-language": true, "expires": true,
}

type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// readPostForm reads the fields up to the file: names lower case, the
// file part (nil if the form has none).
func readPostForm(r *http.Request, body io.Reader) (map[string]string, *multipart.Part, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, errCode("PreconditionFailed", "Bucket POST must be of the enclosure-type multipart/form-data.")
	}
	mr := multipart.NewReader(body, params["boundary"])
	fields := map[string]string{}
	budget := int64(maxPostFields)
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return fields, nil, nil
		}
		if err != nil {
			return nil, nil, errCode("MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data: %v.", err)
		}
		name := strings.ToLower(p.FormName())
		if name == "" {
			return nil, nil, errCode("MalformedPOSTRequest", "A part of the form has no field name.")
		}
		if name == "file" {
			return fields, p, nil
		}
		v, err := io.ReadAll(io.LimitReader(p, budget+1))
		if err != nil {
			return nil, nil, errCode("MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data: %v.", err)
		}
		if budget -= int64(len(v)); budget < 0 {
			return nil, nil, errCode("MaxPostPreDataLengthExceededError", "Your POST request fields preceding the upload file were too large: the limit is %d bytes.", maxPostFields)
		}
		if _, dup := fields[name]; dup {
			return nil, nil, errCode("InvalidArgument", "The form field %s is given more than once.", name)
		}
		fields[name] = string(v)
	}
}

// authorizePost checks the form's signature and policy and returns the
// key that signed it and the policy.
func (g *Gateway) authorizePost(r *http.Request, fields map[string]string, bucket string) (*access.Key, *postPolicy, error) {
	_, v2sig := fields["signature"]
	_, v2key := fields["awsaccesskeyid"]
	if _, v4 := fields["x-amz-signature"]; !v4 {
		if v2sig || v2key {
			return nil, nil, errCode("InvalidRequest", "Signature Version 2 is not supported: sign the POST policy with SigV4 (AWS4-HMAC-SHA256; boto3: Config(signature_version=\"s3v4\")).")
		}
		// Unsigned: an anonymous upload, which only a bucket policy or a
		// public-read-write ACL admits (decided with the key).
		return nil, &postPolicy{maxLen: math.MaxInt64}, nil
	}
	if fields["x-amz-algorithm"] != sigAlgorithm {
		return nil, nil, errCode("InvalidArgument", "The x-amz-algorithm field must be %s.", sigAlgorithm)
	}
	cred, err := parseCredential(fields["x-amz-credential"])
	if err != nil {
		return nil, nil, err
	}
	date, err := time.Parse(amzDateFormat, fields["x-amz-date"])
	if err != nil {
		return nil, nil, errCode("InvalidArgument", "The x-amz-date field must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\".")
	}
	if date.Format("20060102") != cred.Date {
		return nil, nil, errCode("InvalidArgument", "The date of x-amz-credential (%s) is not the date of x-amz-date (%s).", cred.Date, fields["x-amz-date"])
	}
	b64, ok := fields["policy"]
	if !ok {
		return nil, nil, errCode("InvalidArgument", "A signed POST upload needs its policy field.")
	}
	k, err := g.lookupKey(r.Context(), cred.AccessKey)
	if err != nil {
		return nil, nil, err
	}
	want := hmacSHA256(signingKey(k.Secret, cred), b64)
	got, err := hex.DecodeString(fields["x-amz-signature"])
	if err != nil || !hmac.Equal(got, want) {
		return nil, nil, errCode("SignatureDoesNotMatch", "The x-amz-signature field is not the signature of the policy field under this key.")
	}
	p, err := parsePostPolicy(b64)
	if err != nil {
		return nil, nil, err
	}
	if err := p.check(fields, bucket, g.now()); err != nil {
		return nil, nil, err
	}
	return k, p, nil
}

// postHeaders turns the form's header fields into the headers a PUT would
// have had, so that a POST stores (and refuses) what the PUT would.
func postHeaders(fields map[string]string) (http.Header, error) {
	h := http.Header{}
	for name, v := range fields {
		switch {
		case postFieldHeaders[name], strings.HasPrefix(name, "x-amz-meta-"),
			strings.HasPrefix(name, "x-amz-server-side-encryption"), strings.HasPrefix(name, "x-amz-object-lock-"):
			h.Set(textproto.CanonicalMIMEHeaderKey(name), v)
		case name == "x-amz-storage-class":
			if v != "STANDARD" {
				return nil, errCode("InvalidStorageClass", "flyfs has the one storage class STANDARD; the form asks for %q.", v)
			}
		case name == "acl":
			h.Set("X-Amz-Acl", v)
		case strings.HasPrefix(name, "x-amz-checksum-"), name == "x-amz-website-redirect-location", name == "x-amz-security-token":
			return nil, errCode("NotImplemented", "The form field %s is not supported in a POST upload; the request is refused and nothing was stored.", name)
		}
	}
	return h, nil
}

// postTags reads the tagging field (a Tagging XML document).
func postTags(fields map[string]string) ([]tag, error) {
	v, ok := fields["tagging"]
	if !ok {
		return nil, nil
	}
	var t tagging
	if err := decodeXML(strings.NewReader(v), &t); err != nil {
		return nil, err
	}
	return t.TagSet, validateTags(t.TagSet)
}

func (g *Gateway) postObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	fields, file, err := readPostForm(r, rc.body)
	if err != nil {
		return err
	}
	// What flyfs would not give is refused first, naming it, whether the
	// policy names the field or not.
	hdr, err := postHeaders(fields)
	if err == nil {
		var rest http.Header
		if rest, err = g.checkSSE(ctx, hdr, "PostObject"); err == nil {
			err = refuseHeaders(rest, "PutObject")
		}
	}
	if err != nil {
		return err
	}
	k, policy, err := g.authorizePost(r, fields, rc.bucket)
	if err != nil {
		return err
	}
	rc.key = k
	if file == nil {
		return errCode("IncorrectNumberOfFilesInPostRequest", "POST requires exactly one file upload per request: the form has no file field.")
	}
	if b, ok := fields["bucket"]; ok && b != rc.bucket {
		return errCode("InvalidArgument", "The form's bucket field (%q) is not the bucket of the URL (%q).", b, rc.bucket)
	}
	key, ok := fields["key"]
	if !ok {
		return errCode("InvalidArgument", "Bucket POST must contain a field named 'key'.")
	}
	key = strings.ReplaceAll(key, "${filename}", path.Base(strings.ReplaceAll(file.FileName(), "\\", "/")))
	rc.object = key
	if err := g.decide(r, rc, rc.op, rc.bucket, key, access.ReadWrite); err != nil {
		return err
	}
	o, err := parseKey(rc.bucket, key)
	if err != nil {
		return err
	}
	if o.dir {
		return errCode("InvalidArgument", "The key %q ends in '/', a directory; a POST upload stores a file.", key)
	}
	om, err := metaFromRequest(hdr)
	if err != nil {
		return err
	}
	oacl, hasACL, err := g.requestACL(ctx, hdr, rc.bucket)
	if err != nil {
		return err
	}
	tags, err := postTags(fields)
	if err != nil {
		return err
	}
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	limit := min(int64(maxPutSize), policy.maxLen)
	st, err := g.stage(ctx, rc, file, -1, limit, nil, "")
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == "EntityTooLarge" && limit < maxPutSize {
		return policy.lengthOK(limit + 1)
	}
	if err != nil {
		return err
	}
	published := false
	defer func() {
		if !published {
			g.discard(st.name)
		}
	}()
	if err := policy.lengthOK(st.size); err != nil {
		return err
	}
	om.Gen, om.ETag, om.Tags = st.in.Gen, st.md5, len(tags)
	if len(tags) > 0 {
		v, _ := json.Marshal(tags)
		if err := g.meta.SetXattr(stagingCtx(ctx), st.in.ID, xattrTagging, v, 0); err != nil {
			return err
		}
	}
	if err := g.storeMeta(stagingCtx(ctx), st.in.ID, om); err != nil {
		return err
	}
	if hasACL {
		if err := g.storeACL(stagingCtx(ctx), st.in.ID, oacl, true); err != nil {
			return err
		}
	}
	lock, err := g.newObjectLock(ctx, hdr, rc.bucket)
	if err != nil {
		return err
	}
	if err := g.publish(ctx, w.Header(), g.stagingIno, st.name, o, rc.creds(), writeCond{lock: lock}, false); err != nil {
		return err
	}
	published = true
	return writePostResult(w, r, fields, rc.bucket, key, quoteETag(st.md5))
}

// writePostResult answers as the form asked: a redirect
// (success_action_redirect), or success_action_status 200, 201 (with a
// PostResponse document) or 204 (the default, and for any other value).
func writePostResult(w http.ResponseWriter, r *http.Request, fields map[string]string, bucket, key, etag string) error {
	loc := "/" + bucket + "/" + awsURIEncode(key, true)
	if r.Host != "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		loc = scheme + "://" + r.Host + loc
	}
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Location", loc)
	redirect := fields["success_action_redirect"]
	if redirect == "" {
		redirect = fields["redirect"]
	}
	if u, err := url.Parse(redirect); redirect != "" && err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		q := u.Query()
		q.Set("bucket", bucket)
		q.Set("key", key)
		q.Set("etag", etag)
		u.RawQuery = q.Encode()
		h.Set("Location", u.String())
		w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	switch fields["success_action_status"] {
	case "201":
		out, err := xml.Marshal(postResponse{Location: loc, Bucket: bucket, Key: key, ETag: etag})
		if err != nil {
			return err
		}
		h.Set("Content-Type", "application/xml")
		h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, xml.Header)
		_, err = w.Write(out)
		return err
	case "200":
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}
