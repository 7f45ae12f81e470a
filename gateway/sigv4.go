package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4: the parsing of the Authorization header and of
// presigned query parameters, the canonical request, and signature checks.
// Parsing is separate from checking so the parser can be fuzzed alone.

const (
	sigAlgorithm   = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
	scopeDateFmt   = "20060102"
	maxClockSkew   = 15 * time.Minute
	maxPresignLife = 7 * 24 * time.Hour

	unsignedPayload         = "UNSIGNED-PAYLOAD"
	streamingSigned         = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTrailer  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrailr = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256             = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

type authKind int

const (
	authAnonymous authKind = iota
	authHeader
	authPresigned
)

// credScope is the Credential element: key/date/region/service/aws4_request.
type credScope struct {
	AccessKey, Date, Region, Service string
}

func (c credScope) scope() string {
	return c.Date + "/" + c.Region + "/" + c.Service + "/aws4_request"
}

// sigRequest is what a request claims about its signature, before checking.
type sigRequest struct {
	kind          authKind
	cred          credScope
	signedHeaders []string
	signature     string
	amzDate       time.Time
	amzDateRaw    string
	expires       time.Duration // presigned only
	payloadHash   string        // the x-amz-content-sha256 value (or UNSIGNED-PAYLOAD)
}

// parseCredential parses "AK/20250101/us-east-1/s3/aws4_request".
func parseCredential(v string) (credScope, error) {
	parts := strings.Split(v, "/")
	// The access key itself may not contain '/', so exactly five parts.
	if len(parts) != 5 || parts[0] == "" || parts[4] != "aws4_request" {
		return credScope{}, errCode("AuthorizationHeaderMalformed", "The Credential %q is malformed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".", v)
	}
	if _, err := time.Parse(scopeDateFmt, parts[1]); err != nil {
		return credScope{}, errCode("AuthorizationHeaderMalformed", "The Credential date %q is not a valid date.", parts[1])
	}
	if parts[2] == "" {
		return credScope{}, errCode("AuthorizationHeaderMalformed", "The Credential has no region.")
	}
	if parts[3] != "s3" {
		return credScope{}, errCode("AuthorizationHeaderMalformed", "The Credential service %q is not s3.", parts[3])
	}
	return credScope{AccessKey: parts[0], Date: parts[1], Region: parts[2], Service: parts[3]}, nil
}

// parseSignedHeaders checks "host;x-amz-date" is sorted, lower case and
// non-empty.
func parseSignedHeaders(v string) ([]string, error) {
	if v == "" {
		return nil, errCode("AuthorizationHeaderMalformed", "SignedHeaders is empty.")
	}
	hs := strings.Split(v, ";")
	for i, h := range hs {
		if h == "" || h != strings.ToLower(h) || strings.ContainsAny(h, " \t:") {
			return nil, errCode("AuthorizationHeaderMalformed", "SignedHeaders %q is malformed.", v)
		}
		if i > 0 && hs[i-1] >= h {
			return nil, errCode("AuthorizationHeaderMalformed", "SignedHeaders %q is not sorted.", v)
		}
	}
	return hs, nil
}

func validSignature(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// parseAuthorization parses the Authorization header value of SigV4:
// "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
func parseAuthorization(v string) (credScope, []string, string, error) {
	alg, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || alg != sigAlgorithm {
		if strings.HasPrefix(v, "AWS ") {
			return credScope{}, nil, "", errCode("InvalidRequest", "Signature Version 2 is not supported; please use AWS4-HMAC-SHA256.")
		}
		return credScope{}, nil, "", errCode("AuthorizationHeaderMalformed", "The authorization header does not use %s.", sigAlgorithm)
	}
	var credV, shV, sigV string
	var seen [3]bool
	for _, f := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return credScope{}, nil, "", errCode("AuthorizationHeaderMalformed", "")
		}
		switch k {
		case "Credential":
			credV, seen[0] = val, true
		case "SignedHeaders":
			shV, seen[1] = val, true
		case "Signature":
			sigV, seen[2] = val, true
		default:
			return credScope{}, nil, "", errCode("AuthorizationHeaderMalformed", "Unknown field %q in the authorization header.", k)
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return credScope{}, nil, "", errCode("AuthorizationHeaderMalformed", "The authorization header needs Credential, SignedHeaders and Signature.")
	}
	cred, err := parseCredential(credV)
	if err != nil {
		return credScope{}, nil, "", err
	}
	sh, err := parseSignedHeaders(shV)
	if err != nil {
		return credScope{}, nil, "", err
	}
	if !validSignature(sigV) {
		return credScope{}, nil, "", errCode("AuthorizationHeaderMalformed", "The signature is not 64 hex digits.")
	}
	return cred, sh, sigV, nil
}

// parseSigRequest reads the signature claims of a request: header auth,
// presigned query auth, or none (anonymous). It checks shape only.
func parseSigRequest(r *http.Request) (*sigRequest, error) {
	q := r.URL.Query()
	authz := r.Header.Get("Authorization")
	presigned := q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential") || q.Has("X-Amz-Algorithm")
	switch {
	case authz != "" && presigned:
		return nil, errCode("InvalidRequest", "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified.")
	case authz != "":
		cred, sh, sig, err := parseAuthorization(authz)
		if err != nil {
			return nil, err
		}
		sr := &sigRequest{kind: authHeader, cred: cred, signedHeaders: sh, signature: sig}
		sr.amzDateRaw = r.Header.Get("X-Amz-Date")
		if sr.amzDateRaw == "" {
			if d := r.Header.Get("Date"); d != "" {
				t, err := http.ParseTime(d)
				if err != nil {
					return nil, errCode("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
				}
				sr.amzDate, sr.amzDateRaw = t.UTC(), d
			} else {
				return nil, errCode("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
			}
		} else {
			t, err := time.Parse(amzDateFormat, sr.amzDateRaw)
			if err != nil {
				return nil, errCode("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
			}
			sr.amzDate = t
		}
		if !containsStr(sh, "host") {
			return nil, errCode("AuthorizationHeaderMalformed", "SignedHeaders must include host.")
		}
		sr.payloadHash = r.Header.Get("X-Amz-Content-Sha256")
		if sr.payloadHash == "" {
			return nil, errCode("InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
		}
		if err := checkPayloadHashValue(sr.payloadHash); err != nil {
			return nil, err
		}
		return sr, nil
	case presigned:
		if q.Get("X-Amz-Algorithm") != sigAlgorithm {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-Algorithm only supports %q.", sigAlgorithm)
		}
		cred, err := parseCredential(q.Get("X-Amz-Credential"))
		if err != nil {
			return nil, errCode("AuthorizationQueryParametersError", "%s", toAPIError(err).Message)
		}
		sh, err := parseSignedHeaders(q.Get("X-Amz-SignedHeaders"))
		if err != nil {
			return nil, errCode("AuthorizationQueryParametersError", "%s", toAPIError(err).Message)
		}
		if !containsStr(sh, "host") {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-SignedHeaders must include host.")
		}
		sig := q.Get("X-Amz-Signature")
		if !validSignature(sig) {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-Signature is not 64 hex digits.")
		}
		sr := &sigRequest{kind: authPresigned, cred: cred, signedHeaders: sh, signature: sig, amzDateRaw: q.Get("X-Amz-Date")}
		t, err := time.Parse(amzDateFormat, sr.amzDateRaw)
		if err != nil {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\".")
		}
		sr.amzDate = t
		exp, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
		if err != nil || exp < 0 {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-Expires should be a number of seconds.")
		}
		if time.Duration(exp)*time.Second > maxPresignLife {
			return nil, errCode("AuthorizationQueryParametersError", "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds.")
		}
		sr.expires = time.Duration(exp) * time.Second
		sr.payloadHash = unsignedPayload
		if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" {
			if err := checkPayloadHashValue(h); err != nil {
				return nil, err
			}
			sr.payloadHash = h
		}
		return sr, nil
	}
	if q.Has("AWSAccessKeyId") && q.Has("Signature") {
		// A SigV2 presigned URL (boto3's default before 1.36, s3cmd signurl).
		return nil, errCode("InvalidRequest", "Signature Version 2 is not supported: presign the URL with SigV4 (AWS4-HMAC-SHA256; boto3: Config(signature_version=\"s3v4\")).")
	}
	return &sigRequest{kind: authAnonymous, payloadHash: unsignedPayload}, nil
}

func checkPayloadHashValue(v string) error {
	switch v {
	case unsignedPayload, streamingSigned, streamingSignedTrailer, streamingUnsignedTrailr:
		return nil
	}
	if strings.HasPrefix(v, "STREAMING-") {
		return errCode("NotImplemented", "The payload signing mode %q is not supported (use SigV4, not SigV4a).", v)
	}
	if !validSignature(v) { // 64 hex digits, like a signature
		return errCode("InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* value or a SHA256 in hex.")
	}
	return nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// checkTime applies the clock-skew and expiry rules to a parsed request.
func (sr *sigRequest) checkTime(now time.Time) error {
	if sr.cred.Date != sr.amzDate.Format(scopeDateFmt) && sr.kind != authAnonymous {
		return errCode("SignatureDoesNotMatch", "The credential date %s does not match the request date %s.", sr.cred.Date, sr.amzDateRaw)
	}
	switch sr.kind {
	case authHeader:
		if d := now.Sub(sr.amzDate); d > maxClockSkew || d < -maxClockSkew {
			return errCode("RequestTimeTooSkewed", "The difference between the request time (%s) and the server's time (%s) is too large.", sr.amzDate.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
	case authPresigned:
		if sr.amzDate.Sub(now) > maxClockSkew {
			return errCode("AccessDenied", "Request is not valid yet")
		}
		if now.After(sr.amzDate.Add(sr.expires)) {
			return errCode("AccessDenied", "Request has expired")
		}
	}
	return nil
}

// awsURIEncode encodes s the way SigV4 canonical requests need: every byte
// but A-Z a-z 0-9 - _ . ~ is %XX (upper hex); '/' is kept when keepSlash.
func awsURIEncode(s string, keepSlash bool) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || (keepSlash && c == '/') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// canonicalQuery builds the sorted, encoded query string; skip names a
// parameter left out (X-Amz-Signature of a presigned URL), "" for none (a
// parameter with an empty name, "=x", is signed like any other).
func canonicalQuery(rawQuery string, skip string) string {
	type kv struct{ k, v string }
	var params []kv
	for _, part := range strings.Split(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			dk = k
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			dv = v
		}
		if skip != "" && dk == skip {
			continue
		}
		params = append(params, kv{awsURIEncode(dk, false), awsURIEncode(dv, false)})
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].k != params[j].k {
			return params[i].k < params[j].k
		}
		return params[i].v < params[j].v
	})
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// headerValue returns the canonical value of a signed header: values of
// repeated headers joined by ',', each trimmed with inner runs of spaces
// collapsed. Go moves some headers out of Header; they are put back here.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		vals = r.Header.Values("Content-Length")
		if len(vals) == 0 && r.ContentLength >= 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		vals = r.TransferEncoding
	default:
		vals = r.Header.Values(name)
	}
	for i, v := range vals {
		vals[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(vals, ",")
}

// canonicalRequest is the SigV4 canonical request for r with the given
// canonical URI.
func canonicalRequest(r *http.Request, uri string, sr *sigRequest) string {
	skip := ""
	if sr.kind == authPresigned {
		skip = "X-Amz-Signature"
	}
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery, skip))
	b.WriteByte('\n')
	for _, h := range sr.signedHeaders {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(sr.signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(sr.payloadHash)
	return b.String()
}

// canonicalURIs returns the canonical URI candidates: the decoded path
// encoded by the AWS rules (what SDKs sign), and the path as sent (what
// some clients sign when their escaping differs, e.g. a raw '+').
func canonicalURIs(r *http.Request) []string {
	p := r.URL.Path
	if p == "" {
		p = "/"
	}
	a := awsURIEncode(p, true)
	b := r.URL.EscapedPath()
	if raw := r.URL.RawPath; raw != "" {
		b = raw
	}
	if b == "" {
		b = "/"
	}
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// signingKey derives the SigV4 key for a secret and a scope.
func signingKey(secret string, c credScope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), c.Date)
	k = hmacSHA256(k, c.Region)
	k = hmacSHA256(k, c.Service)
	return hmacSHA256(k, "aws4_request")
}

func stringToSign(amzDate string, c credScope, canonical string) string {
	return sigAlgorithm + "\n" + amzDate + "\n" + c.scope() + "\n" + sha256Hex([]byte(canonical))
}

// mustBeSigned reports whether a header (lower case) present in a request
// must be among its signed headers. AWS's rule, for header auth and
// presigned URLs alike: every x-amz-* header, since those select or change
// the operation (x-amz-copy-source turns a PUT into a copy; x-amz-meta-*,
// x-amz-tagging, x-amz-acl, x-amz-checksum-*, ... change what is stored),
// and Content-MD5. Other headers (User-Agent, Expect, X-Amzn-Trace-Id,
// Content-Type, ...) may go unsigned, as SDKs leave some of them.
//
// One exception: x-amz-content-sha256 of a presigned URL, which AWS lets
// clients send without signing. Its value is the payload hash of the
// canonical request (the last line), so the signature covers it anyway:
// a value other than the one signed (UNSIGNED-PAYLOAD) no longer matches.
// With header auth it is required and must be signed.
func mustBeSigned(name string, kind authKind) bool {
	if name == "content-md5" {
		return true
	}
	if !strings.HasPrefix(name, "x-amz-") {
		return false
	}
	return !(kind == authPresigned && name == "x-amz-content-sha256")
}

// checkSignedHeaders refuses a signed request carrying a header its
// signature does not cover (see mustBeSigned), naming every such header.
func checkSignedHeaders(r *http.Request, sr *sigRequest) error {
	var unsigned []string
	for name := range r.Header {
		ln := strings.ToLower(name)
		if mustBeSigned(ln, sr.kind) && !containsStr(sr.signedHeaders, ln) && !containsStr(unsigned, ln) {
			unsigned = append(unsigned, ln)
		}
	}
	if len(unsigned) == 0 {
		return nil
	}
	sort.Strings(unsigned)
	return errCode("AccessDenied", "There were headers present in the request which were not signed: %s", strings.Join(unsigned, ", "))
}

// verifySignature checks that the signature of r covers every header it
// must and that it is right for the secret of its key, and returns the
// signing key (for streaming chunk signatures).
func verifySignature(r *http.Request, sr *sigRequest, secret string) ([]byte, error) {
	if err := checkSignedHeaders(r, sr); err != nil {
		return nil, err
	}
	key := signingKey(secret, sr.cred)
	dateForSig := sr.amzDateRaw
	if sr.kind == authHeader && r.Header.Get("X-Amz-Date") == "" {
		dateForSig = sr.amzDate.Format(amzDateFormat)
	}
	for _, uri := range canonicalURIs(r) {
		sts := stringToSign(dateForSig, sr.cred, canonicalRequest(r, uri, sr))
		want := hex.EncodeToString(hmacSHA256(key, sts))
		if hmac.Equal([]byte(want), []byte(sr.signature)) {
			return key, nil
		}
	}
	return nil, errCode("SignatureDoesNotMatch", "")
}
