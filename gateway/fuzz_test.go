package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Fuzzers: whatever the bytes, the parsers answer with a value or an S3
// error, never a panic or a hang. The seed corpora live in testdata/fuzz.

func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + strings.Repeat("0", 64))
	f.Add("AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=;, Signature=")
	f.Add("AWS AKIA:c2ln")
	f.Fuzz(func(t *testing.T, v string) {
		cred, sh, sig, err := parseAuthorization(v)
		if err != nil {
			if toAPIError(err).Code == "InternalError" {
				t.Fatalf("%q: an internal error for bad input", v)
			}
			return
		}
		if cred.AccessKey == "" || len(sh) == 0 || !validSignature(sig) {
			t.Fatalf("%q accepted with %+v %v %q", v, cred, sh, sig)
		}
	})
}

func FuzzParseSigRequest(f *testing.F) {
	f.Add("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature="+strings.Repeat("a", 64), "", "")
	f.Add("/b", "AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature="+strings.Repeat("a", 64), "UNSIGNED-PAYLOAD")
	f.Add("/b?X-Amz-Expires=-1&X-Amz-Algorithm=x", "", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD")
	f.Fuzz(func(t *testing.T, target, authz, payload string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t#") {
			return
		}
		defer func() {
			if p := recover(); p != nil && !strings.Contains(strings.ToLower(toString(p)), "invalid") {
				t.Fatalf("panic: %v", p)
			}
		}()
		r := httptest.NewRequest("GET", "http://h"+target, nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
			// Only with header auth: a presigned URL carries its date in
			// the query, and an x-amz-date header would be an unsigned
			// x-amz-* header, refused before the signature is computed.
			r.Header.Set("X-Amz-Date", "20250101T000000Z")
		}
		r.Header.Set("X-Amz-Content-Sha256", payload)
		sr, err := parseSigRequest(r)
		if err != nil {
			return
		}
		_ = sr.checkTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		_, _ = verifySignature(r, sr, "secret")
	})
}

func toString(p any) string {
	if e, ok := p.(error); ok {
		return e.Error()
	}
	if s, ok := p.(string); ok {
		return s
	}
	return ""
}

func FuzzChunkedDecoder(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), false, true)
	f.Add([]byte("5;chunk-signature="+strings.Repeat("a", 64)+"\r\nhello\r\n0;chunk-signature="+strings.Repeat("b", 64)+"\r\n\r\n"), true, false)
	f.Add([]byte("ffffffffffffffff\r\n"), false, false)
	f.Add([]byte("3\r\nab"), false, false)
	f.Fuzz(func(t *testing.T, body []byte, signed, trailers bool) {
		var s *chunkSigner
		if signed {
			s = &chunkSigner{key: []byte("k"), amzDate: "20250101T000000Z", scope: "20250101/us-east-1/s3/aws4_request", prevSig: strings.Repeat("c", 64)}
		}
		cr := newChunkedReader(bytes.NewReader(body), s, trailers)
		out, err := io.ReadAll(io.LimitReader(cr, 1<<20))
		if err == nil && len(out) > len(body) {
			t.Fatalf("decoded %d bytes from a %d-byte body", len(out), len(body))
		}
	})
}

func FuzzXMLBodies(f *testing.F) {
	f.Add([]byte(`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>`))
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`))
	f.Add([]byte(`<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><Delete>&a;</Delete>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var d deleteRequest
		if err := decodeXML(bytes.NewReader(body), &d); err == nil && d.XMLName.Local != "Delete" {
			t.Fatalf("accepted a <%s> as Delete", d.XMLName.Local)
		}
		var c completeMultipartUpload
		_ = decodeXML(bytes.NewReader(body), &c)
		var tg tagging
		if decodeXML(bytes.NewReader(body), &tg) == nil {
			_ = validateTags(tg.TagSet)
		}
		var cb createBucketConfiguration
		_ = decodeXML(bytes.NewReader(body), &cb)
		_, _ = xml.Marshal(d)
	})
}

func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"a", "a/b/", "a//b", "../x", "/x", "x/.", strings.Repeat("a", 300), "ключ/файл"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		o, err := parseKey("bucket", key)
		if err != nil {
			return
		}
		// An accepted key maps to a clean path that maps back to the key.
		p := o.path()
		if strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
			t.Fatalf("%q -> unclean path %q", key, p)
		}
		back := strings.TrimPrefix(p, "/bucket/")
		if o.dir {
			back += "/"
		}
		if back != key {
			t.Fatalf("%q -> %q -> %q", key, p, back)
		}
	})
}

// FuzzParseRange: a Range header against an object size. An accepted range
// lies within the object; a refused one is InvalidRange; the range the
// parser settles on, written back as a header, parses to itself.
func FuzzParseRange(f *testing.F) {
	for _, s := range []struct {
		v    string
		size int64
	}{{"bytes=0-9", 100}, {"bytes=-10", 100}, {"bytes=90-", 100}, {"bytes=100-", 100}, {"bytes=-0", 5}, {"bytes=0-", 0},
		{"bytes=1-2,4-5", 10}, {" bytes= 3 - 7 ", 10}, {"bytes=9223372036854775807-", 9223372036854775807}, {"items=0-1", 3}} {
		f.Add(s.v, s.size)
	}
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 {
			return
		}
		start, length, err := parseRange(v, size)
		if err != nil {
			if c := toAPIError(err).Code; c != "InvalidRange" {
				t.Fatalf("%q against %d: %v", v, size, err)
			}
			return
		}
		if start < 0 || length < 0 || start > size-length {
			t.Fatalf("%q against %d: start %d length %d outside the object", v, size, start, length)
		}
		if length == 0 {
			return
		}
		s2, l2, err := parseRange(fmt.Sprintf("bytes=%d-%d", start, start+length-1), size)
		if err != nil || s2 != start || l2 != length {
			t.Fatalf("%q against %d -> (%d, %d), written back -> (%d, %d, %v)", v, size, start, length, s2, l2, err)
		}
		if start+length == size {
			s2, l2, err = parseRange(fmt.Sprintf("bytes=-%d", length), size)
			if err != nil || s2 != start || l2 != length {
				t.Fatalf("%q against %d -> (%d, %d), as a suffix -> (%d, %d, %v)", v, size, start, length, s2, l2, err)
			}
		}
	})
}

// FuzzCopySource: x-amz-copy-source. An accepted source names a bucket
// (no '/') and a key, both non-empty; encoded again they parse to
// themselves, with or without a leading '/' and ?versionId=null, which
// is then the version named.
func FuzzCopySource(f *testing.F) {
	for _, s := range []string{"b/k", "/b/dir/k.txt", "b/a%20b%2Fc", "b/k?versionId=null", "b/k?versionId=3", "b", "/b/", "b/%zz", "%2Fb/k", "b/k%3FversionId%3Dnull", "../b/k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		bucket, key, _, err := copySource(v)
		if err != nil {
			if c := toAPIError(err).Code; c != "InvalidArgument" {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if bucket == "" || key == "" || strings.Contains(bucket, "/") {
			t.Fatalf("%q -> bucket %q key %q", v, bucket, key)
		}
		enc := awsURIEncode(bucket, false) + "/" + awsURIEncode(key, true)
		for _, w := range []string{enc, "/" + enc, enc + "?versionId=null"} {
			b2, k2, v2, err := copySource(w)
			if err != nil || b2 != bucket || k2 != key || (v2 == nullVersion) != strings.HasSuffix(w, "?versionId=null") {
				t.Fatalf("%q -> (%q, %q); %q -> (%q, %q, %q, %v)", v, bucket, key, w, b2, k2, v2, err)
			}
		}
	})
}

// FuzzParseCopyRange: x-amz-copy-source-range. An accepted range is
// 0 <= first <= last, and written back it parses to itself.
func FuzzParseCopyRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=5-5", "bytes=9-0", "bytes=-5", "bytes=0-", "bytes=0-9223372036854775807", "bytes=+1-+2", "0-9", "bytes=1-2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		first, last, ok := parseCopyRange(v)
		if !ok {
			return
		}
		if first < 0 || last < first {
			t.Fatalf("%q -> %d-%d", v, first, last)
		}
		f2, l2, ok := parseCopyRange(fmt.Sprintf("bytes=%d-%d", first, last))
		if !ok || f2 != first || l2 != last {
			t.Fatalf("%q -> %d-%d, written back -> %d-%d %v", v, first, last, f2, l2, ok)
		}
	})
}

// FuzzCanonicalQuery: the canonical query string of SigV4, built from a raw
// query as received. The result is well formed (sorted key=value pairs of
// unreserved characters and %XX), canonical already (a fixed point), and
// without the skipped parameter. Where the raw query is one a client could
// send (it parses as a query), the result is what the AWS SDK's signer
// builds, and a request the SDK signed with it verifies.
func FuzzCanonicalQuery(f *testing.F) {
	for _, s := range []string{"", "list-type=2&prefix=a%2Fb&delimiter=%2F", "uploads", "tagging&versionId=null", "a=1&a=0&b", "x=a+b&y=%7e%20", "k=%zz&%=1",
		"X-Amz-Signature=abc&X-Amz-Date=20250101T000000Z", "&&=&=x&a=b=c", "partNumber=3&uploadId=abc%3D%3D", "%E2%82%AC=%C3%A9", "a;b=c"} {
		f.Add(s)
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		out := canonicalQuery(raw, "")
		checkCanonicalQuery(t, raw, out)
		if again := canonicalQuery(out, ""); again != out {
			t.Fatalf("%q -> %q -> %q: not a fixed point", raw, out, again)
		}
		skipped := canonicalQuery(raw, "X-Amz-Signature")
		checkCanonicalQuery(t, raw, skipped)
		for _, p := range strings.Split(skipped, "&") {
			if strings.HasPrefix(p, "X-Amz-Signature=") {
				t.Fatalf("%q -> %q keeps the skipped parameter", raw, skipped)
			}
		}
		vals, err := url.ParseQuery(raw)
		if err != nil || vals.Has("X-Amz-Signature") || vals.Has("X-Amz-Credential") || vals.Has("X-Amz-Algorithm") {
			return
		}
		r, err := http.NewRequest("GET", "http://127.0.0.1:9300/bkt/key", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.URL.RawQuery = raw
		r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		if err := signer.SignHTTP(context.Background(), testCreds, r, emptySHA256, "s3", "us-east-1", at); err != nil {
			t.Fatal(err)
		}
		// The SDK sends the query in its canonical form.
		if out != r.URL.RawQuery {
			t.Fatalf("%q: ours %q, the SDK's %q", raw, out, r.URL.RawQuery)
		}
		if err := verify(r, at, testCreds.SecretAccessKey); err != nil {
			t.Fatalf("%q: an SDK-signed request is refused: %v", raw, err)
		}
	})
}

func checkCanonicalQuery(t *testing.T, raw, out string) {
	t.Helper()
	if out == "" {
		return
	}
	type kv struct{ k, v string }
	var prev *kv
	for _, p := range strings.Split(out, "&") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !canonicalComponent(k) || !canonicalComponent(v) {
			t.Fatalf("%q -> %q: malformed pair %q", raw, out, p)
		}
		if prev != nil && (prev.k > k || prev.k == k && prev.v > v) {
			t.Fatalf("%q -> %q: not sorted at %q", raw, out, p)
		}
		prev = &kv{k, v}
	}
}

// canonicalComponent: only unreserved characters and %XX in upper hex.
func canonicalComponent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
		case c == '%' && i+2 < len(s) && isUpperHex(s[i+1]) && isUpperHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

// FuzzTagsFromHeader: x-amz-tagging. Accepted tags pass the tag rules, have
// distinct keys, and encoded again as a header parse to the same set; a
// refusal is a client error.
func FuzzTagsFromHeader(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b&c=d", "a=1&a=2", "k=", "=v", "a%20b=c%2Bd", "x=y;z", "%zz=1", strings.Repeat("k", 129) + "=v", "a=b&&c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tags, err := tagsFromHeader(v)
		if err != nil {
			if c := toAPIError(err).Code; c != "InvalidArgument" && c != "InvalidTag" {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if err := validateTags(tags); err != nil {
			t.Fatalf("%q: accepted tags %v fail the tag rules: %v", v, tags, err)
		}
		enc := url.Values{}
		for _, tg := range tags {
			if enc.Has(tg.Key) {
				t.Fatalf("%q: key %q twice", v, tg.Key)
			}
			enc.Set(tg.Key, tg.Value)
		}
		back, err := tagsFromHeader(enc.Encode())
		if len(tags) == 0 {
			if err != nil || len(back) != 0 {
				t.Fatalf("%q -> no tags, re-encoded -> %v %v", v, back, err)
			}
			return
		}
		sortTags := func(ts []tag) []tag {
			ts = append([]tag(nil), ts...)
			sort.Slice(ts, func(i, j int) bool { return ts[i].Key < ts[j].Key })
			return ts
		}
		a, b := sortTags(tags), sortTags(back)
		if err != nil || len(a) != len(b) {
			t.Fatalf("%q -> %v, re-encoded -> %v %v", v, a, b, err)
		}
		for i := range a {
			if a[i].Key != b[i].Key || a[i].Value != b[i].Value {
				t.Fatalf("%q -> %v, re-encoded -> %v", v, a, b)
			}
		}
	})
}

// FuzzCORSConfig: a PutBucketCors document. Whatever the bytes, rules of
// the schema or a client error (MalformedXML, InvalidRequest). Accepted
// rules keep S3's rules (1 to 100 rules, each with an origin and a method
// it may allow, at most one '*' in an origin or allowed header, none in an
// exposed one); written back as GetBucketCors writes them, and as
// user.s3.cors keeps them, they read as themselves; and each rule allows
// an origin its first AllowedOrigin matches, with its first method.
func FuzzCORSConfig(f *testing.F) {
	for _, s := range []string{
		`<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule><ID>site</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>` +
			`<AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>` +
			`<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>**</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<s3:CORSConfiguration xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:CORSRule><s3:AllowedOrigin><![CDATA[a&b]]></s3:AllowedOrigin><s3:AllowedMethod>GET</s3:AllowedMethod><!-- c --></s3:CORSRule></s3:CORSConfiguration>`,
		"\ufeff<CORSConfiguration><CORSRule><ID/><AllowedOrigin> \r\n&#x9;</AllowedOrigin><AllowedMethod>DELETE</AllowedMethod><MaxAgeSeconds>007</MaxAgeSeconds></CORSRule></CORSConfiguration>",
		`<!DOCTYPE x [<!ENTITY a "aaaa">]><CORSConfiguration><CORSRule><AllowedOrigin>&a;</AllowedOrigin></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>2147483648</MaxAgeSeconds></CORSRule></CORSConfiguration>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rules, err := parseCORS(body)
		if err != nil {
			if c := toAPIError(err).Code; c != "MalformedXML" && c != "InvalidRequest" {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		if len(rules) == 0 || len(rules) > maxCORSRules {
			t.Fatalf("%q: accepted %d rules", body, len(rules))
		}
		for _, r := range rules {
			if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 || (r.ID != nil && utf8.RuneCountInString(*r.ID) > 255) || (r.MaxAgeSeconds != nil && *r.MaxAgeSeconds < 0) {
				t.Fatalf("%q: accepted %+v", body, r)
			}
			for _, m := range r.AllowedMethods {
				if !corsMethods[m] {
					t.Fatalf("%q: accepted the method %q", body, m)
				}
			}
			for _, v := range append(append([]string{}, r.AllowedOrigins...), r.AllowedHeaders...) {
				if strings.Count(v, "*") > 1 {
					t.Fatalf("%q: accepted %q", body, v)
				}
			}
			for _, v := range r.ExposeHeaders {
				if strings.Contains(v, "*") {
					t.Fatalf("%q: accepted the ExposeHeader %q", body, v)
				}
			}
		}
		out, err := xml.Marshal(corsConfiguration{NS: s3NS, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseCORS(out)
		if err != nil || !reflect.DeepEqual(back, rules) {
			t.Fatalf("%q -> %+v; as GetBucketCors writes it, %s -> %+v %v", body, rules, out, back, err)
		}
		rec, err := corsRecord(rules)
		if err != nil {
			t.Fatal(err)
		}
		var stored []corsRule
		if err := json.Unmarshal(rec, &stored); err != nil || !reflect.DeepEqual(stored, rules) {
			t.Fatalf("%q -> %+v; stored as %s -> %+v %v", body, rules, rec, stored, err)
		}
		for _, r := range rules {
			origin := strings.Replace(r.AllowedOrigins[0], "*", "x", 1)
			if m, _ := matchCORS(rules, origin, r.AllowedMethods[0], nil); m == nil {
				t.Fatalf("%q: no rule allows %q %s", body, origin, r.AllowedMethods[0])
			}
		}
	})
}

// FuzzPostPolicy: any policy document and form either passes the checks
// or is refused with an S3 error; a policy that parses keeps
// 0 <= min <= max.
func FuzzPostPolicy(f *testing.F) {
	f.Add(`{"expiration": "2030-01-01T00:00:00Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", "u/"], ["content-length-range", 1, 10]]}`, "u/x", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--x--\r\n")
	f.Add(`{"expiration": 1, "conditions": [[]]}`, "", "multipart/form-data", "")
	f.Add(`{"expiration": "2030-01-01T00:00:00Z", "conditions": [["content-length-range", "9", 99999999999999999999]]}`, "k", "text/plain", "--x--")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, doc, key, contentType, form string) {
		p, err := parsePostPolicy(base64.StdEncoding.EncodeToString([]byte(doc)))
		if err == nil {
			if p.minLen < 0 || p.maxLen < p.minLen {
				t.Fatalf("%q: range %d..%d", doc, p.minLen, p.maxLen)
			}
			err = p.check(map[string]string{"key": key}, "b", now)
		}
		if err != nil && toAPIError(err).Code == "InternalError" {
			t.Fatalf("%q: an internal error for bad input: %v", doc, err)
		}
		r := httptest.NewRequest("POST", "/b", strings.NewReader(form))
		r.Header.Set("Content-Type", contentType)
		if _, _, err := readPostForm(r, r.Body); err != nil && toAPIError(err).Code == "InternalError" {
			t.Fatalf("%q: an internal error for a bad form: %v", form, err)
		}
	})
}

// FuzzBucketPolicy: any document is a policy or MalformedPolicy; a policy
// decides any request without a panic.
func FuzzBucketPolicy(f *testing.F) {
	f.Add(`{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/p/*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}, "StringLikeIfExists": {"s3:prefix": ["a*", 1, true]}}}]}`, "s3:GetObject", "b/p/x", "10.1.2.3")
	f.Add(`{"Statement": {"Effect": "Deny", "Principal": {"AWS": ["arn:aws:iam::1:user/K"]}, "NotAction": "s3:*", "NotResource": "arn:aws:s3:::b", "Condition": {"Null": {"aws:Referer": "true"}, "DateLessThan": {"aws:CurrentTime": "2030-01-01"}}}}`, "s3:ListBucket", "b", "::1")
	f.Add(`{"Statement": []}`, "", "", "")
	f.Fuzz(func(t *testing.T, doc, action, resource, ip string) {
		p, err := parseBucketPolicy([]byte(doc), "b")
		if err != nil {
			if toAPIError(err).Code != "MalformedPolicy" {
				t.Fatalf("%q: %v", doc, err)
			}
			return
		}
		p.public()
		for _, who := range []string{"", "K"} {
			p.decide(policyRequest{principal: who, action: action, resource: resource, value: func(k string) ([]string, bool) {
				if k == "aws:sourceip" || k == "s3:prefix" || k == "aws:currenttime" {
					return []string{ip}, true
				}
				return nil, false
			}})
		}
	})
}

// FuzzLifecycle: any body is rules or an S3 error; rules that parse
// decide any object without a panic.
func FuzzLifecycle(f *testing.F) {
	f.Add(`<LifecycleConfiguration><Rule><ID>a</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>`, "p/x", int64(5))
	f.Add(`<LifecycleConfiguration><Rule><Prefix></Prefix><Status>Disabled</Status><Expiration><Date>2027-01-01T00:00:00Z</Date></Expiration></Rule></LifecycleConfiguration>`, "", int64(0))
	f.Add(`<LifecycleConfiguration><Rule><Status>Enabled</Status><Transition><Days>1</Days></Transition></Rule></LifecycleConfiguration>`, "k", int64(-1))
	f.Fuzz(func(t *testing.T, doc, key string, size int64) {
		rules, err := parseLifecycle([]byte(doc))
		if err != nil {
			if toAPIError(err).Code == "InternalError" {
				t.Fatalf("%q: %v", doc, err)
			}
			return
		}
		now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		for i := range rules {
			rules[i].expiresAt(now)
			rules[i].abortsAt(now)
			rules[i].matches(lifecycleObject{key: key, size: size, modified: now, tags: func() []tag { return []tag{{Key: "k", Value: "v"}} }})
		}
	})
}

// FuzzACL: any grant header or document is an ACL or an S3 error.
func FuzzACL(f *testing.F) {
	f.Add("public-read", `id="K", uri="http://acs.amazonaws.com/groups/global/AllUsers"`, `<AccessControlPolicy><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>K</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`)
	f.Add("", `emailAddress=a@b, id=`, `<AccessControlPolicy><AccessControlList><Grant><Grantee><URI>x</URI></Grantee></Grant></AccessControlList></AccessControlPolicy>`)
	f.Fuzz(func(t *testing.T, canned, grants, body string) {
		h := http.Header{}
		if canned != "" {
			h.Set("X-Amz-Acl", canned)
		}
		if grants != "" {
			h.Set("X-Amz-Grant-Read", grants)
		}
		for _, parse := range []func() (acl, error){
			func() (acl, error) { a, _, err := aclFromHeaders(h); return a, err },
			func() (acl, error) { return aclFromBody([]byte(body)) },
		} {
			a, err := parse()
			if err != nil {
				if toAPIError(err).Code == "InternalError" {
					t.Fatalf("%q %q %q: %v", canned, grants, body, err)
				}
				continue
			}
			for _, g := range a.Grants {
				if !aclPerms[g.Perm] || (g.ID == "") == (g.Group == "") {
					t.Fatalf("a grant %+v from %q %q %q", g, canned, grants, body)
				}
			}
			a.document("o")
			a.allows("K", "READ", true)
		}
	})
}
