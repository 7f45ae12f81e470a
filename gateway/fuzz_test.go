package gateway

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
		}
		r.Header.Set("X-Amz-Date", "20250101T000000Z")
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
