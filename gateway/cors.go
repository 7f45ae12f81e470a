package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/flyfs/flyfs/core/access"
)

// CORS: a bucket's rules (Put/Get/DeleteBucketCors) say which web origins
// may call it from a browser. They are kept as JSON in user.s3.cors of the
// bucket's directory. A preflight (OPTIONS on the bucket or a key, never
// authenticated) is answered from the first rule that allows its origin,
// method and headers, or refused; any other request that carries an Origin
// gets the headers of the first rule that allows its origin and method,
// whatever its outcome (so a browser can read an error too). The rules and
// their answers are S3's.

const (
	xattrCORS = "user.s3.cors"
	// maxCORSBody is S3's limit on a CORS configuration document.
	maxCORSBody = 64 << 10
	// maxCORSRules is S3's limit on the rules of a configuration.
	maxCORSRules = 100
	// maxCORSRecord bounds the stored rules (an xattr value).
	maxCORSRecord = 64 << 10
	corsVary      = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
)

// corsRule is one rule, as stored and as GetBucketCors answers it (in
// S3's order of the elements).
type corsRule struct {
	ID             *string  `xml:"ID" json:"id,omitempty"`
	AllowedMethods []string `xml:"AllowedMethod" json:"methods"`
	AllowedOrigins []string `xml:"AllowedOrigin" json:"origins"`
	AllowedHeaders []string `xml:"AllowedHeader" json:"headers,omitempty"`
	MaxAgeSeconds  *int32   `xml:"MaxAgeSeconds" json:"max_age,omitempty"`
	ExposeHeaders  []string `xml:"ExposeHeader" json:"expose,omitempty"`
}

// corsConfiguration is GetBucketCors' answer.
type corsConfiguration struct {
	XMLName xml.Name   `xml:"CORSConfiguration"`
	NS      string     `xml:"xmlns,attr"`
	Rules   []corsRule `xml:"CORSRule"`
}

// corsMethods are the methods a rule may allow.
var corsMethods = map[string]bool{"GET": true, "PUT": true, "POST": true, "DELETE": true, "HEAD": true}

// parseCORS reads a CORS configuration document as S3 validates one: a
// document that is not well formed or not of the schema (another root, an
// unknown element, text between elements, no rule or more than 100, a rule
// without an AllowedOrigin or an AllowedMethod, two IDs or MaxAgeSeconds in
// a rule, an ID over 255 characters, a MaxAgeSeconds that is not a 32-bit
// count) is MalformedXML; then, in the order of the rules, a method S3 does
// not allow, an AllowedOrigin or AllowedHeader with more than one '*', or an
// ExposeHeader with one, is InvalidRequest naming it. Values are kept as
// they are (case, spaces).
func parseCORS(data []byte) ([]corsRule, error) {
	rules, ok := parseCORSDocument(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if !ok {
		return nil, errCode("MalformedXML", "")
	}
	for _, r := range rules {
		for _, m := range r.AllowedMethods {
			if !corsMethods[m] {
				return nil, errCode("InvalidRequest", "Found unsupported HTTP method in CORS config. Unsupported method is %s", m)
			}
		}
		for _, o := range r.AllowedOrigins {
			if strings.Count(o, "*") > 1 {
				return nil, errCode("InvalidRequest", "AllowedOrigin %q can not have more than one wildcard.", o)
			}
		}
		for _, h := range r.AllowedHeaders {
			if strings.Count(h, "*") > 1 {
				return nil, errCode("InvalidRequest", "AllowedHeader %q can not have more than one wildcard.", h)
			}
		}
		for _, h := range r.ExposeHeaders {
			if strings.Contains(h, "*") {
				return nil, errCode("InvalidRequest", "ExposeHeader %q contains wildcard. We currently do not support wildcard for ExposeHeader.", h)
			}
		}
	}
	return rules, nil
}

// parseCORSDocument reads the rules of a document of the schema (ok false:
// it is not one).
func parseCORSDocument(data []byte) (rules []corsRule, ok bool) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return rules, root != nil && len(rules) > 0 && len(rules) <= maxCORSRules
		}
		if err != nil {
			return nil, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil || t.Name.Local != "CORSConfiguration" {
				return nil, false // a second root, or another one
			}
			root = &t
			if rules, ok = parseCORSRules(d, t.Name.Space); !ok {
				return nil, false
			}
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return nil, false
			}
		case xml.Directive:
			return nil, false // a DOCTYPE: S3 refuses it
		}
	}
}

// parseCORSRules reads the content of <CORSConfiguration>, up to its end.
func parseCORSRules(d *xml.Decoder, ns string) ([]corsRule, bool) {
	var rules []corsRule
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != ns || t.Name.Local != "CORSRule" || len(rules) == maxCORSRules {
				return nil, false
			}
			r, ok := parseCORSRule(d, ns)
			if !ok {
				return nil, false
			}
			rules = append(rules, r)
		case xml.EndElement:
			return rules, true
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return nil, false
			}
		case xml.Directive:
			return nil, false
		}
	}
}

// parseCORSRule reads the content of one <CORSRule>, up to its end.
func parseCORSRule(d *xml.Decoder, ns string) (corsRule, bool) {
	var r corsRule
	for {
		tok, err := d.Token()
		if err != nil {
			return r, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != ns {
				return r, false
			}
			v, ok := corsValue(d)
			if !ok {
				return r, false
			}
			switch t.Name.Local {
			case "ID":
				if r.ID != nil || utf8.RuneCountInString(v) > 255 {
					return r, false
				}
				r.ID = &v
			case "AllowedOrigin":
				r.AllowedOrigins = append(r.AllowedOrigins, v)
			case "AllowedMethod":
				r.AllowedMethods = append(r.AllowedMethods, v)
			case "AllowedHeader":
				r.AllowedHeaders = append(r.AllowedHeaders, v)
			case "ExposeHeader":
				r.ExposeHeaders = append(r.ExposeHeaders, v)
			case "MaxAgeSeconds":
				n, ok := corsMaxAge(v)
				if r.MaxAgeSeconds != nil || !ok {
					return r, false
				}
				r.MaxAgeSeconds = &n
			default:
				return r, false
			}
		case xml.EndElement:
			return r, len(r.AllowedOrigins) > 0 && len(r.AllowedMethods) > 0
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return r, false
			}
		case xml.Directive:
			return r, false
		}
	}
}

// corsValue reads the text of a value element, up to its end: text,
// CDATA and comments, no element, only characters XML can carry.
func corsValue(d *xml.Decoder) (string, bool) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", false
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.Comment:
		case xml.EndElement:
			v := b.String()
			for _, c := range v {
				if !xmlChar(c) {
					return "", false
				}
			}
			return v, true
		default:
			return "", false
		}
	}
}

// xmlChar: a character an XML 1.0 document can hold.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// corsMaxAge reads MaxAgeSeconds: decimal digits (spaces around them
// allowed), at most 2^31-1.
func corsMaxAge(v string) (int32, bool) {
	v = strings.TrimSpace(v)
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil
}

// corsRecord encodes rules for user.s3.cors.
func corsRecord(rules []corsRule) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rules); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// loadCORS reads a bucket's rules (nil: it has none).
func (g *Gateway) loadCORS(ctx context.Context, bucketIno uint64) ([]corsRule, error) {
	v, err := g.meta.GetXattr(ctx, bucketIno, xattrCORS)
	if err != nil {
		if errnoOf(err) == syscall.ENODATA {
			return nil, nil
		}
		return nil, err
	}
	var rules []corsRule
	if err := json.Unmarshal(v, &rules); err != nil {
		return nil, err
	}
	return rules, nil
}

func (g *Gateway) getBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	rules, err := g.loadCORS(r.Context(), b.ID)
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return errCode("NoSuchCORSConfiguration", "The CORS configuration does not exist")
	}
	return writeXML(w, corsConfiguration{NS: s3NS, Rules: rules})
}

// putBucketCors replaces the bucket's rules.
func (g *Gateway) putBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	b, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxCORSBody)
	if err != nil {
		return err
	}
	rules, err := parseCORS(data)
	if err != nil {
		return err
	}
	v, err := corsRecord(rules)
	if err != nil {
		return err
	}
	if len(v) > maxCORSRecord {
		return errCode("InvalidRequest", "The CORS configuration takes %d bytes once stored; at most %d fit.", len(v), maxCORSRecord)
	}
	if err := g.meta.SetXattr(ctx, b.ID, xattrCORS, v, 0); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deleteBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	err = g.meta.RemoveXattr(r.Context(), b.ID, xattrCORS)
	if e := errnoOf(err); e != 0 && e != syscall.ENODATA {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// corsPattern matches s against a pattern with at most one '*' (any run of
// characters, none included).
func corsPattern(pattern, s string) bool {
	pre, post, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == s
	}
	return len(s) >= len(pre)+len(post) && strings.HasPrefix(s, pre) && strings.HasSuffix(s, post)
}

// matchCORS finds the first rule that allows origin, method and, for a
// preflight (headers non-nil), each of headers (lower case). allowOrigin is
// what Access-Control-Allow-Origin answers: "*" when the rule allows every
// origin, else origin.
func matchCORS(rules []corsRule, origin, method string, headers []string) (rule *corsRule, allowOrigin string) {
	for i := range rules {
		r := &rules[i]
		allowed, any := false, false
		for _, o := range r.AllowedOrigins {
			if o == "*" {
				allowed, any = true, true
			} else if corsPattern(o, origin) {
				allowed = true
			}
		}
		if !allowed || !containsString(r.AllowedMethods, method) {
			continue
		}
		if !corsHeadersAllowed(r.AllowedHeaders, headers) {
			continue
		}
		if any {
			return r, "*"
		}
		return r, origin
	}
	return nil, ""
}

func corsHeadersAllowed(allowed, headers []string) bool {
	for _, h := range headers {
		ok := false
		for _, a := range allowed {
			if corsPattern(strings.ToLower(a), h) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// setCORSHeaders writes the answer of a matched rule (allowHeaders: the
// headers a preflight asked for).
func setCORSHeaders(h http.Header, r *corsRule, allowOrigin string, allowHeaders []string) {
	h.Set("Access-Control-Allow-Origin", allowOrigin)
	h.Set("Access-Control-Allow-Methods", strings.Join(r.AllowedMethods, ", "))
	if len(allowHeaders) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(allowHeaders, ", "))
	}
	if len(r.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(r.ExposeHeaders, ", "))
	}
	if r.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(int(*r.MaxAgeSeconds)))
	}
	if allowOrigin != "*" {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Vary", corsVary)
}

// corsTarget is the bucket and key a request addresses, read as the router
// will (path style, or the bucket in the Host).
func (g *Gateway) corsTarget(r *http.Request) (bucket, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	if b := g.hostBucket(r.Host); b != "" {
		return b, p
	}
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// requestedHeaders reads Access-Control-Request-Headers: the names, trimmed
// and lower case, empty ones left out.
func requestedHeaders(h http.Header) []string {
	names := []string{}
	for _, v := range h.Values("Access-Control-Request-Headers") {
		for _, n := range strings.Split(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// corsDenied is a refused preflight, naming its method and what it asked
// about.
func corsDenied(msg, method, resource string) error {
	e := errCode("AccessForbidden", "%s", msg)
	e.Method, e.ResourceType = method, resource
	return e
}

// preflight answers OPTIONS on a bucket or a key: the browser asks whether
// a request with its method (Access-Control-Request-Method) and headers
// (Access-Control-Request-Headers) may come from its origin. It is never
// signed, so it needs no key.
func (g *Gateway) preflight(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return errCode("BadRequest", "Insufficient information. Origin request header needed.")
	}
	method := "null"
	if vs, ok := r.Header["Access-Control-Request-Method"]; ok && len(vs) > 0 {
		method = vs[0]
	}
	if !corsMethods[method] {
		return errCode("BadRequest", "Invalid Access-Control-Request-Method: %s", method)
	}
	bucket, key := g.corsTarget(r)
	rc.bucket, rc.object = bucket, key
	resource := "OBJECT"
	if key == "" {
		resource = "BUCKET"
	}
	if !access.ValidBucketName(bucket) {
		return corsDenied("CORSResponse: Bucket not found", method, resource)
	}
	b, err := g.bucketInode(r.Context(), bucket)
	if err != nil {
		if toAPIError(err).Code == "NoSuchBucket" {
			return corsDenied("CORSResponse: Bucket not found", method, resource)
		}
		return err
	}
	rules, err := g.loadCORS(r.Context(), b.ID)
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return corsDenied("CORSResponse: CORS is not enabled for this bucket.", method, resource)
	}
	headers := requestedHeaders(r.Header)
	rule, allowOrigin := matchCORS(rules, origin, method, headers)
	if rule == nil {
		return corsDenied("CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.", method, resource)
	}
	h := w.Header()
	setCORSHeaders(h, rule, allowOrigin, headers)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// corsResponse gives a request that carries an Origin the headers of the
// first rule of its bucket that allows the origin and the method (the
// Access-Control-Request-Method when the request has one, as S3 takes it),
// before anything else is decided, so that they come with an error too.
func (g *Gateway) corsResponse(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return
	}
	bucket, _ := g.corsTarget(r)
	if !access.ValidBucketName(bucket) {
		return
	}
	b, err := g.bucketInode(r.Context(), bucket)
	if err != nil {
		return
	}
	rules, err := g.loadCORS(r.Context(), b.ID)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			g.log.Warn("s3 gateway: reading a bucket's CORS rules", "bucket", bucket, "err", err)
		}
		return
	}
	method := r.Method
	if m := r.Header.Get("Access-Control-Request-Method"); m != "" {
		method = m
	}
	if rule, allowOrigin := matchCORS(rules, origin, method, nil); rule != nil {
		setCORSHeaders(w.Header(), rule, allowOrigin, nil)
	}
}
