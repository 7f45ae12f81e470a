package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
)

const (
	corsNotAllowed = "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."
	corsDisabled   = "CORSResponse: CORS is not enabled for this bucket."
	corsNoBucket   = "CORSResponse: Bucket not found"
)

func corsDoc(rules ...string) string {
	var b strings.Builder
	b.WriteString(`<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, r := range rules {
		b.WriteString("<CORSRule>" + r + "</CORSRule>")
	}
	b.WriteString("</CORSConfiguration>")
	return b.String()
}

// TestParseCORS: the configuration documents PutBucketCors accepts, and
// the refusals S3 makes (MalformedXML for what is not of the schema, before
// InvalidRequest for what its rules do not allow).
func TestParseCORS(t *testing.T) {
	const minimal = "<AllowedOrigin>https://example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
	id255 := strings.Repeat("i", 255)
	full, err := parseCORS([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <CORSRule>
    <ID>site</ID>
    <AllowedOrigin>https://*.example.com</AllowedOrigin>
    <AllowedOrigin>http://localhost:3000</AllowedOrigin>
    <AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>
    <AllowedMethod>DELETE</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>
    <AllowedHeader>*</AllowedHeader>
    <ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-request-id</ExposeHeader>
    <MaxAgeSeconds>3000</MaxAgeSeconds>
  </CORSRule>
  <!-- a public read rule -->
  <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>
</CORSConfiguration>`))
	if err != nil {
		t.Fatal(err)
	}
	site, age := "site", int32(3000)
	want := []corsRule{{ID: &site, AllowedOrigins: []string{"https://*.example.com", "http://localhost:3000"},
		AllowedMethods: []string{"GET", "PUT", "POST", "DELETE", "HEAD"}, AllowedHeaders: []string{"*"},
		ExposeHeaders: []string{"ETag", "x-amz-request-id"}, MaxAgeSeconds: &age},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}}}
	if !reflect.DeepEqual(full, want) {
		t.Fatalf("parsed %+v\nwant %+v", full, want)
	}
	for name, body := range map[string]string{
		"without a namespace":     "<CORSConfiguration><CORSRule>" + minimal + "</CORSRule></CORSConfiguration>",
		"with a namespace prefix": `<s3:CORSConfiguration xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:CORSRule><s3:AllowedOrigin>*</s3:AllowedOrigin><s3:AllowedMethod>GET</s3:AllowedMethod></s3:CORSRule></s3:CORSConfiguration>`,
		"with a byte order mark":  "\ufeff" + corsDoc(minimal),
		"with CDATA":              corsDoc("<AllowedOrigin><![CDATA[https://example.com]]></AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
		"an ID of 255":            corsDoc(minimal + "<ID>" + id255 + "</ID>"),
		"an empty ID":             corsDoc(minimal + "<ID/>"),
		"an empty AllowedOrigin":  corsDoc("<AllowedOrigin></AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
		"MaxAgeSeconds 0":         corsDoc(minimal + "<MaxAgeSeconds>0</MaxAgeSeconds>"),
		"MaxAgeSeconds 2^31-1":    corsDoc(minimal + "<MaxAgeSeconds>2147483647</MaxAgeSeconds>"),
		"one wildcard each":       corsDoc("<AllowedOrigin>https://example.com:*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>x-*-id</AllowedHeader>"),
		"100 rules":               corsDoc(strings.Split(strings.Repeat(minimal+"|", 100), "|")[:100]...),
		"elements in any order":   corsDoc("<MaxAgeSeconds>1</MaxAgeSeconds><AllowedMethod>GET</AllowedMethod><ExposeHeader>ETag</ExposeHeader><AllowedOrigin>*</AllowedOrigin>"),
	} {
		if _, err := parseCORS([]byte(body)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, body := range map[string]string{
		"an empty body":                "",
		"not XML":                      "AllowedOrigin: *",
		"not UTF-8":                    "<\xff\xfe>",
		"an unclosed element":          "<CORSConfiguration><CORSRule>" + minimal + "</CORSConfiguration>",
		"a DOCTYPE":                    "<!DOCTYPE CORSConfiguration>" + corsDoc(minimal),
		"an entity":                    `<!DOCTYPE x [<!ENTITY a "https://example.com">]>` + corsDoc("<AllowedOrigin>&a;</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
		"another root":                 "<CORSRules><CORSRule>" + minimal + "</CORSRule></CORSRules>",
		"a root in lower case":         "<corsconfiguration><CORSRule>" + minimal + "</CORSRule></corsconfiguration>",
		"a second root":                corsDoc(minimal) + corsDoc(minimal),
		"a rule of another name":       "<CORSConfiguration><Rule>" + minimal + "</Rule></CORSConfiguration>",
		"no rule":                      corsDoc(),
		"an empty root":                "<CORSConfiguration/>",
		"a rule's elements at the top": "<CORSConfiguration>" + minimal + "</CORSConfiguration>",
		"101 rules":                    corsDoc(strings.Split(strings.Repeat(minimal+"|", 101), "|")[:101]...),
		"text next to a rule":          "<CORSConfiguration>text" + "<CORSRule>" + minimal + "</CORSRule></CORSConfiguration>",
		"a rule in a rule":             corsDoc("<CORSRule>" + minimal + "</CORSRule>"),
		"an empty rule":                corsDoc(""),
		"no AllowedOrigin":             corsDoc("<AllowedMethod>GET</AllowedMethod>"),
		"no AllowedMethod":             corsDoc("<AllowedOrigin>*</AllowedOrigin>"),
		"a later rule incomplete":      corsDoc(minimal, "<AllowedOrigin>*</AllowedOrigin>"),
		"text in a rule":               corsDoc(minimal + "text"),
		"an unknown element":           corsDoc(minimal + "<AllowedHeaders>*</AllowedHeaders>"),
		"an element in another case":   corsDoc(minimal + "<allowedheader>*</allowedheader>"),
		"an element in a value":        corsDoc("<AllowedOrigin><Origin>*</Origin></AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
		"another namespace in a rule":  corsDoc(`<x:AllowedOrigin xmlns:x="urn:x">*</x:AllowedOrigin><AllowedMethod>GET</AllowedMethod>`),
		"MaxAgeSeconds empty":          corsDoc(minimal + "<MaxAgeSeconds></MaxAgeSeconds>"),
		"MaxAgeSeconds a word":         corsDoc(minimal + "<MaxAgeSeconds>hour</MaxAgeSeconds>"),
		"MaxAgeSeconds negative":       corsDoc(minimal + "<MaxAgeSeconds>-1</MaxAgeSeconds>"),
		"MaxAgeSeconds 1.5":            corsDoc(minimal + "<MaxAgeSeconds>1.5</MaxAgeSeconds>"),
		"MaxAgeSeconds 2^31":           corsDoc(minimal + "<MaxAgeSeconds>2147483648</MaxAgeSeconds>"),
		"MaxAgeSeconds twice":          corsDoc(minimal + "<MaxAgeSeconds>1</MaxAgeSeconds><MaxAgeSeconds>1</MaxAgeSeconds>"),
		"an ID of 256":                 corsDoc(minimal + "<ID>" + id255 + "i</ID>"),
		"two IDs":                      corsDoc(minimal + "<ID></ID><ID>b</ID>"),
		"a NUL by reference":           corsDoc("<AllowedOrigin>&#0;</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
		// Before any InvalidRequest of the same document.
		"incomplete, with a bad method": corsDoc("<AllowedMethod>PATCH</AllowedMethod>"),
	} {
		if _, err := parseCORS([]byte(body)); toAPIError(err).Code != "MalformedXML" {
			t.Errorf("%s: %v, want MalformedXML", name, err)
		}
	}
	for _, tc := range []struct{ rule, msg string }{
		{"<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>", "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"},
		{"<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get</AllowedMethod>", "Found unsupported HTTP method in CORS config. Unsupported method is get"},
		{"<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>OPTIONS</AllowedMethod>", "Found unsupported HTTP method in CORS config. Unsupported method is OPTIONS"},
		{"<AllowedOrigin>*</AllowedOrigin><AllowedMethod></AllowedMethod>", "Found unsupported HTTP method in CORS config. Unsupported method is "},
		{"<AllowedOrigin>https://*.example.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>", `AllowedOrigin "https://*.example.*" can not have more than one wildcard.`},
		{"<AllowedOrigin>*&lt;&amp;&gt;*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>", `AllowedOrigin "*<&>*" can not have more than one wildcard.`},
		{minimal + "<AllowedHeader>x-*-meta-*</AllowedHeader>", `AllowedHeader "x-*-meta-*" can not have more than one wildcard.`},
		{minimal + "<ExposeHeader>*</ExposeHeader>", `ExposeHeader "*" contains wildcard. We currently do not support wildcard for ExposeHeader.`},
		// The method before the origin, the origin before the headers.
		{"<ExposeHeader>x-*</ExposeHeader><AllowedHeader>*-*</AllowedHeader><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>", "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"},
		{"<ExposeHeader>x-*</ExposeHeader><AllowedHeader>*-*</AllowedHeader><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>", `AllowedOrigin "*.*" can not have more than one wildcard.`},
	} {
		_, err := parseCORS([]byte(corsDoc(minimal, tc.rule)))
		if ae := toAPIError(err); ae.Code != "InvalidRequest" || ae.Message != tc.msg {
			t.Errorf("%s: %v, want InvalidRequest %q", tc.rule, err, tc.msg)
		}
	}
}

// TestMatchCORS: the first rule that allows the origin (exactly, or with
// its one '*'), the method and every requested header (any case) answers.
func TestMatchCORS(t *testing.T) {
	rule := func(origins, methods, headers []string) corsRule {
		return corsRule{AllowedOrigins: origins, AllowedMethods: methods, AllowedHeaders: headers}
	}
	get := []string{"GET"}
	for _, tc := range []struct {
		pattern, origin string
		match           bool
	}{
		{"*", "https://example.com", true}, {"*", "null", true},
		{"https://example.com", "https://example.com", true}, {"https://example.com", "http://example.com", false},
		{"https://example.com", "https://example.com:8443", false}, {"https://example.com", "https://EXAMPLE.com", false},
		{"https://*.example.com", "https://a.b.example.com", true}, {"https://*.example.com", "https://example.com", false},
		{"https://*.example.com", "https://www.example.com.evil", false}, {"https://*.example.com", "https://WWW.example.com", true},
		{"https://example.com:*", "https://example.com:8443", true}, {"https://example.com:*", "https://example.com", false},
		{"https://a*a", "https://aa", true}, {"https://a*a", "https://a", false}, {"http*", "https://x", true},
		{"", "", true}, {"", "https://example.com", false},
	} {
		r, allow := matchCORS([]corsRule{rule([]string{tc.pattern}, get, nil)}, tc.origin, "GET", nil)
		if (r != nil) != tc.match {
			t.Errorf("%q and origin %q: %v, want %v", tc.pattern, tc.origin, r != nil, tc.match)
		}
		if r != nil && (allow == "*") != (tc.pattern == "*") {
			t.Errorf("%q and origin %q: allow %q", tc.pattern, tc.origin, allow)
		}
	}
	for _, tc := range []struct {
		allowed, requested []string
		match              bool
	}{
		{nil, nil, true}, {nil, []string{}, true}, {nil, []string{"content-type"}, false},
		{[]string{"Content-Type"}, []string{"content-type"}, true}, {[]string{"content-type"}, []string{"content-type", "x-amz-date"}, false},
		{[]string{"x-amz-*"}, []string{"x-amz-date", "x-amz-meta-a"}, true}, {[]string{"x-amz-*"}, []string{"x-amzn-trace-id"}, false},
		{[]string{"*"}, []string{"authorization", "x-custom"}, true}, {[]string{"x-*-id"}, []string{"x--id"}, true},
		{[]string{"x-*-id"}, []string{"x-id"}, false},
	} {
		r, _ := matchCORS([]corsRule{rule([]string{"*"}, get, tc.allowed)}, "https://example.com", "GET", tc.requested)
		if (r != nil) != tc.match {
			t.Errorf("allowed %q, requested %q: %v, want %v", tc.allowed, tc.requested, r != nil, tc.match)
		}
	}
	// The first rule that allows all three; "*" among a rule's origins
	// answers "*".
	rules := []corsRule{
		rule([]string{"https://example.com"}, []string{"GET", "PUT"}, nil),
		rule([]string{"https://*.com"}, get, []string{"*"}),
		rule([]string{"https://example.com", "*"}, []string{"GET", "HEAD"}, nil),
	}
	for _, tc := range []struct {
		method  string
		headers []string
		want    int
		allow   string
	}{
		{"GET", nil, 0, "https://example.com"}, {"PUT", nil, 0, "https://example.com"}, {"GET", []string{"x-amz-date"}, 1, "https://example.com"},
		{"HEAD", nil, 2, "*"}, {"DELETE", nil, -1, ""}, {"get", nil, -1, ""},
	} {
		r, allow := matchCORS(rules, "https://example.com", tc.method, tc.headers)
		got := -1
		for i := range rules {
			if r == &rules[i] {
				got = i
			}
		}
		if got != tc.want || allow != tc.allow {
			t.Errorf("%s %q: rule %d %q, want %d %q", tc.method, tc.headers, got, allow, tc.want, tc.allow)
		}
	}
}

// corsCall sends an unsigned request with the CORS request headers (an
// empty value leaves a header out) and returns the status, the CORS
// headers of the answer and its error document.
func corsCall(t *testing.T, l *liveGW, method, path, origin, reqMethod, reqHeaders string) (int, map[string]string, errorBody) {
	t.Helper()
	req, _ := http.NewRequest(method, l.url+path, nil)
	for k, v := range map[string]string{"Origin": origin, "Access-Control-Request-Method": reqMethod, "Access-Control-Request-Headers": reqHeaders} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e errorBody
	if resp.StatusCode >= 300 {
		if err := decodeXML(strings.NewReader(string(body)), &e); err != nil && method != "HEAD" {
			t.Fatalf("%s %s: the error is not an S3 error document: %s", method, path, body)
		}
	} else if method == "OPTIONS" && len(body) != 0 {
		t.Fatalf("%s %s: a preflight's answer has a body: %s", method, path, body)
	}
	h := map[string]string{}
	for k, v := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
			h[k] = strings.Join(v, ", ")
		}
	}
	return resp.StatusCode, h, e
}

// TestLiveCORS: PutBucketCors then browser requests: preflights answered
// by the rules, without a key, and the requests themselves with the
// headers of the rule that allows them, errors included.
func TestLiveCORS(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "web")
	mustBucket(t, c, "nocors")
	mustPut(t, c, "web", "key", []byte("data"))
	b := aws.String("web")
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); errCodeOf(err) != "NoSuchCORSConfiguration" {
		t.Fatalf("GetBucketCors without rules: %v", err)
	}
	rules := []types.CORSRule{
		{ID: aws.String("site"), AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"},
			AllowedHeaders: []string{"x-amz-*", "content-type"}, ExposeHeaders: []string{"ETag", "x-amz-version-id"}, MaxAgeSeconds: aws.Int32(600)},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"HEAD"}},
	}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
	if err != nil || len(got.CORSRules) != 2 || !reflect.DeepEqual(got.CORSRules[0].AllowedOrigins, rules[0].AllowedOrigins) ||
		!reflect.DeepEqual(got.CORSRules[0].AllowedHeaders, rules[0].AllowedHeaders) || !reflect.DeepEqual(got.CORSRules[0].ExposeHeaders, rules[0].ExposeHeaders) ||
		aws.ToString(got.CORSRules[0].ID) != "site" || aws.ToInt32(got.CORSRules[0].MaxAgeSeconds) != 600 || got.CORSRules[1].ID != nil ||
		!reflect.DeepEqual(got.CORSRules[1].AllowedMethods, []string{"HEAD"}) {
		t.Fatalf("GetBucketCors: %v %+v", err, got)
	}
	bin, _ := l.fs.Meta().Resolve(ctx, "/web", true)
	if raw, err := l.fs.Meta().GetXattr(ctx, bin.ID, xattrCORS); err != nil || !json.Valid(raw) || !strings.Contains(string(raw), "https://*.example.com") {
		t.Fatalf("user.s3.cors of /web: %v %s", err, raw)
	}

	const origin = "https://app.example.com"
	site := map[string]string{"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": "GET, PUT",
		"Access-Control-Expose-Headers": "ETag, x-amz-version-id", "Access-Control-Max-Age": "600",
		"Access-Control-Allow-Credentials": "true", "Vary": corsVary}
	everyone := map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "HEAD", "Vary": corsVary}
	withHeaders := map[string]string{"Access-Control-Allow-Headers": "content-type, x-amz-meta-name"}
	for k, v := range site {
		withHeaders[k] = v
	}
	none := map[string]string{}
	for _, tc := range []struct {
		path, origin, method, headers string
		status                        int
		cors                          map[string]string
		code, msg, resource           string
	}{
		{"/web", origin, "GET", "", 200, site, "", "", ""},
		{"/web/key", origin, "PUT", "Content-Type, X-Amz-Meta-Name", 200, withHeaders, "", "", ""},
		{"/web/no/such/key", "null", "HEAD", "", 200, everyone, "", "", ""},
		{"/web/key", origin, "DELETE", "", 403, none, "AccessForbidden", corsNotAllowed, "OBJECT"},
		{"/web", "https://example.org", "GET", "", 403, none, "AccessForbidden", corsNotAllowed, "BUCKET"},
		{"/web/key", origin, "GET", "authorization", 403, none, "AccessForbidden", corsNotAllowed, "OBJECT"},
		{"/nocors/key", origin, "GET", "", 403, none, "AccessForbidden", corsDisabled, "OBJECT"},
		{"/nocors", origin, "PUT", "", 403, none, "AccessForbidden", corsDisabled, "BUCKET"},
		{"/missing-bucket/key", origin, "GET", "", 403, none, "AccessForbidden", corsNoBucket, "OBJECT"},
		{"/Not_A_Bucket/key", origin, "GET", "", 403, none, "AccessForbidden", corsNoBucket, "OBJECT"},
		{"/web/key", "", "GET", "", 400, none, "BadRequest", "Insufficient information. Origin request header needed.", ""},
		{"/web/key", origin, "", "", 400, none, "BadRequest", "Invalid Access-Control-Request-Method: null", ""},
		{"/web/key", origin, "PATCH", "", 400, none, "BadRequest", "Invalid Access-Control-Request-Method: PATCH", ""},
	} {
		status, cors, e := corsCall(t, l, "OPTIONS", tc.path, tc.origin, tc.method, tc.headers)
		if status != tc.status || !reflect.DeepEqual(cors, tc.cors) || e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("OPTIONS %s from %q for %s %q: %d %v %s %q\n want %d %v %s %q", tc.path, tc.origin, tc.method, tc.headers, status, cors, e.Code, e.Message, tc.status, tc.cors, tc.code, tc.msg)
		}
		if tc.resource != "" {
			var ce struct{ Method, ResourceType string }
			req, _ := http.NewRequest("OPTIONS", l.url+tc.path, nil)
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Access-Control-Request-Method", tc.method)
			if tc.headers != "" {
				req.Header.Set("Access-Control-Request-Headers", tc.headers)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := decodeXML(resp.Body, &ce); err != nil || ce.Method != tc.method || ce.ResourceType != tc.resource {
				t.Errorf("OPTIONS %s: Method %q ResourceType %q, want %q %q (%v)", tc.path, ce.Method, ce.ResourceType, tc.method, tc.resource, err)
			}
			resp.Body.Close()
		}
	}
	// A preflight carries no credentials and needs none, even on a
	// private bucket; virtual-host addressing reads the bucket from the Host.
	req, _ := http.NewRequest("OPTIONS", l.url+"/key", nil)
	req.Host = "web.localhost"
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "GET")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("virtual-host preflight: %v %+v", err, resp)
	} else {
		resp.Body.Close()
	}

	// The requests themselves: the headers of the first rule that allows
	// the origin and the method, whether the request succeeds or not.
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: "public-read"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, origin, reqMethod string
		status                          int
		cors                            map[string]string
	}{
		{"GET", "/web/key", origin, "", 200, site},
		{"HEAD", "/web/key", "https://example.org", "", 200, everyone},
		{"GET", "/web/key", "https://example.org", "", 200, none},
		{"GET", "/web/key", "", "", 200, none},
		{"GET", "/web/missing-key", origin, "", 404, site},
		{"PUT", "/web/key", origin, "", 403, site},
		{"DELETE", "/web/key", origin, "", 403, none},
		{"DELETE", "/web/key", origin, "GET", 403, site}, // S3 reads the method from Access-Control-Request-Method
		{"GET", "/web/key", origin, "DELETE", 200, none},
		{"GET", "/nocors/key", origin, "", 403, none},
		{"GET", "/web?list-type=2", origin, "", 200, site},
	} {
		status, cors, _ := corsCall(t, l, tc.method, tc.path, tc.origin, tc.reqMethod, "")
		if status != tc.status || !reflect.DeepEqual(cors, tc.cors) {
			t.Errorf("%s %s from %q (%q): %d %v, want %d %v", tc.method, tc.path, tc.origin, tc.reqMethod, status, cors, tc.status, tc.cors)
		}
	}
	// A signed request from the browser too.
	r := l.signed(t, "GET", "/web/key", nil, map[string]string{"Origin": origin}, rootAK, rootSK, time.Now())
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		resp.Header.Get("Access-Control-Expose-Headers") != "ETag, x-amz-version-id" {
		t.Fatalf("signed GET with an Origin: %v %+v", err, resp)
	} else {
		resp.Body.Close()
	}

	// A refused configuration changes nothing; a key that may only read
	// cannot set or delete one.
	for body, code := range map[string]string{
		corsDoc("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>"): "InvalidRequest",
		corsDoc("<AllowedOrigin>*</AllowedOrigin>"):                                     "MalformedXML",
		"<CORSConfiguration/>": "MalformedXML",
		"":                     "MissingRequestBodyError",
		corsDoc("<AllowedOrigin>" + strings.Repeat("o", maxCORSBody) + "</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"): "MaxMessageLengthExceeded",
	} {
		resp, err := http.DefaultClient.Do(l.signed(t, "PUT", "/web?cors", []byte(body), nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if e := readError(t, resp); resp.StatusCode != 400 || e.Code != code {
			t.Errorf("PutBucketCors %.60q: %d %+v, want %s", body, resp.StatusCode, e, code)
		}
	}
	k, err := l.fs.Keys().Create(ctx, access.Key{Buckets: map[string]access.Permission{"web": access.Read}})
	if err != nil {
		t.Fatal(err)
	}
	rc := l.sdk(t, k.ID, k.Secret)
	if _, err := rc.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: rules[1:]}}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("a read key's PutBucketCors: %v", err)
	}
	if _, err := rc.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: b}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("a read key's DeleteBucketCors: %v", err)
	}
	if got, err := rc.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); err != nil || len(got.CORSRules) != 2 {
		t.Fatalf("after the refusals: %v %+v", err, got)
	}
	// DeleteBucketCors: no rules, no CORS (and deleting none is no error).
	for i := 0; i < 2; i++ {
		if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: b}); err != nil {
			t.Fatalf("DeleteBucketCors %d: %v", i, err)
		}
	}
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); errCodeOf(err) != "NoSuchCORSConfiguration" {
		t.Fatalf("GetBucketCors after DeleteBucketCors: %v", err)
	}
	if status, _, e := corsCall(t, l, "OPTIONS", "/web/key", origin, "GET", ""); status != 403 || e.Message != corsDisabled {
		t.Fatalf("preflight after DeleteBucketCors: %d %+v", status, e)
	}
	if _, cors, _ := corsCall(t, l, "GET", "/web/key", origin, "", ""); len(cors) != 0 {
		t.Fatalf("GET after DeleteBucketCors: %v", cors)
	}
	for name, call := range map[string]func() error{
		"Get": func() error {
			_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String("nosuchbucket")})
			return err
		},
		"Put": func() error {
			_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("nosuchbucket"), CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}})
			return err
		},
		"Delete": func() error {
			_, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: aws.String("nosuchbucket")})
			return err
		},
	} {
		if err := call(); errCodeOf(err) != "NoSuchBucket" {
			t.Errorf("%sBucketCors of a missing bucket: %v", name, err)
		}
	}
}

// TestAWSCLICORS: `aws s3api put-bucket-cors`, then what a browser sends,
// with curl: a preflight for a PUT with its headers, and a GET (through a
// presigned URL) with an Origin.
func TestAWSCLICORS(t *testing.T) {
	need(t, "/usr/bin/aws")
	curl := need(t, "/usr/bin/curl")
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "clicors")
	mustPut(t, c, "clicors", "photo.jpg", []byte("jpeg"))
	cfg := `{"CORSRules": [{"ID": "uploads", "AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["PUT", "POST", "GET"],
		"AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 3000}]}`
	f := filepath.Join(t.TempDir(), "cors.json")
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	awsCLI(t, l, "s3api", "put-bucket-cors", "--bucket", "clicors", "--cors-configuration", "file://"+f)
	var got struct{ CORSRules []map[string]any }
	if err := json.Unmarshal([]byte(awsCLI(t, l, "s3api", "get-bucket-cors", "--bucket", "clicors", "--output", "json")), &got); err != nil ||
		len(got.CORSRules) != 1 || got.CORSRules[0]["ID"] != "uploads" || fmt.Sprint(got.CORSRules[0]["MaxAgeSeconds"]) != "3000" {
		t.Fatalf("get-bucket-cors: %v %+v", err, got)
	}
	curlHeaders := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(curl, append([]string{"-s", "-o", "/dev/null", "-D", "-"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return strings.ReplaceAll(string(out), "\r", "")
	}
	pre := curlHeaders("-X", "OPTIONS", "-H", "Origin: https://app.example.com", "-H", "Access-Control-Request-Method: PUT",
		"-H", "Access-Control-Request-Headers: content-type,x-amz-acl", l.url+"/clicors/upload.bin")
	for _, want := range []string{"HTTP/1.1 200 OK", "Access-Control-Allow-Origin: https://app.example.com", "Access-Control-Allow-Methods: PUT, POST, GET",
		"Access-Control-Allow-Headers: content-type, x-amz-acl", "Access-Control-Max-Age: 3000", "Access-Control-Expose-Headers: ETag",
		"Access-Control-Allow-Credentials: true", "Vary: " + corsVary} {
		if !strings.Contains(pre, want+"\n") {
			t.Errorf("preflight: no %q in\n%s", want, pre)
		}
	}
	if pre := curlHeaders("-X", "OPTIONS", "-H", "Origin: https://evil.example.net", "-H", "Access-Control-Request-Method: PUT", l.url+"/clicors/upload.bin"); !strings.HasPrefix(pre, "HTTP/1.1 403") || strings.Contains(pre, "Access-Control-") {
		t.Errorf("preflight from another origin:\n%s", pre)
	}
	url := strings.TrimSpace(awsCLI(t, l, "s3", "presign", "s3://clicors/photo.jpg"))
	get := curlHeaders("-H", "Origin: https://app.example.com", url)
	for _, want := range []string{"HTTP/1.1 200 OK", "Access-Control-Allow-Origin: https://app.example.com", "Access-Control-Expose-Headers: ETag", "Vary: " + corsVary} {
		if !strings.Contains(get, want+"\n") {
			t.Errorf("GET with an Origin: no %q in\n%s", want, get)
		}
	}
	awsCLI(t, l, "s3api", "delete-bucket-cors", "--bucket", "clicors")
	if pre := curlHeaders("-X", "OPTIONS", "-H", "Origin: https://app.example.com", "-H", "Access-Control-Request-Method: PUT", l.url+"/clicors/upload.bin"); !strings.HasPrefix(pre, "HTTP/1.1 403") {
		t.Errorf("preflight after delete-bucket-cors:\n%s", pre)
	}
}
