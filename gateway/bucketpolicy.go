package gateway

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"time"
)

// A bucket policy is the JSON document of PutBucketPolicy, in the part of
// AWS's policy language users deploy on buckets:
//
//	{"Version": "2012-10-17", "Statement": [{
//	    "Sid": "...", "Effect": "Allow" | "Deny",
//	    "Principal": "*" | {"AWS": "*" | "<key id>" | "arn:aws:iam::<account>:user/<key id>" | [...]},
//	    "Action" | "NotAction": "s3:GetObject" | "s3:Get*" | "*" | [...],
//	    "Resource" | "NotResource": "arn:aws:s3:::<bucket>" | "arn:aws:s3:::<bucket>/<key pattern>" | [...],
//	    "Condition": {"<operator>": {"<key>": "<value>" | [...]}}}]}
//
// A request is decided as AWS decides one within an account: a matching
// Deny refuses it, whatever grants the key has; otherwise a matching Allow
// or the key's own grant admits it; otherwise it is refused. Anonymous
// callers have no grant: a policy (or the bucket's public-read ACL) is
// their only way in.
//
// Patterns take * and ? (actions compare case-insensitively, resources
// exactly). Conditions are ANDed, operator by operator and key by key; a
// key holds if the request's value matches any of the values listed (for
// the negated operators, none of them). A key the request lacks fails a
// positive operator (unless ...IfExists) and passes a negated one; Null
// tests presence. Whatever flyfs could not honour is refused when the
// policy is put, naming it (MalformedPolicy): an unknown operator or
// condition key, NotPrincipal, principals other than key ids and "*",
// a resource of another bucket. A Deny that flyfs would silently fail to
// apply is the worst answer a policy could get.

// maxPolicyDoc is AWS's limit on a bucket policy.
const maxPolicyDoc = 20 << 10

type bucketPolicy struct {
	stmts []policyStatement
}

type policyStatement struct {
	deny        bool
	principals  []string // "*" or key ids
	actions     []string // lower case patterns ("s3:get*", "*")
	notAction   bool
	resources   []string // "<bucket>" or "<bucket>/<key pattern>"
	notResource bool
	conds       []policyCond
}

type policyCond struct {
	op       string // lower case, without IfExists
	ifExists bool
	key      string // as written; compared case-insensitively but for a tag's name
	values   []string
	nets     []*net.IPNet // IpAddress, NotIpAddress
}

// policyRequest is what a decision needs to know of a request.
type policyRequest struct {
	principal string // key id; "" is anonymous
	action    string // "s3:GetObject"
	resource  string // "<bucket>" or "<bucket>/<key>"
	// value returns the request's values of a condition key (lower case but
	// for a tag's name) and whether the request has the key at all.
	value func(key string) ([]string, bool)
}

type policyEffect int

const (
	policyNone policyEffect = iota // no statement applies
	policyAllow
	policyDeny
)

func malformedPolicy(format string, a ...any) error {
	return errCode("MalformedPolicy", format, a...)
}

// strings1 reads a JSON string or array of strings.
func strings1(raw json.RawMessage, what string) ([]string, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 {
		return nil, malformedPolicy("%s must be a string or a non-empty array of strings.", what)
	}
	return many, nil
}

// condValues reads a condition's values: strings, numbers or booleans, one
// or an array.
func condValues(raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		items = []json.RawMessage{raw}
	}
	if len(items) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
			continue
		}
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(it))
		d.UseNumber()
		if d.Decode(&n) == nil {
			out = append(out, n.String())
			continue
		}
		var b bool
		if json.Unmarshal(it, &b) != nil {
			return nil, false
		}
		out = append(out, strconv.FormatBool(b))
	}
	return out, true
}

// strictObject decodes a JSON object into its fields, refusing names not
// in known (case-sensitive, as AWS's are).
func strictObject(raw json.RawMessage, what string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, malformedPolicy("%s must be a JSON object.", what)
	}
	for k := range m {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		if !ok {
			return nil, malformedPolicy("%s has the field %q, which flyfs does not know.", what, k)
		}
	}
	return m, nil
}

// parseBucketPolicy checks a policy document for bucket and returns it.
func parseBucketPolicy(doc []byte, bucket string) (*bucketPolicy, error) {
	if len(doc) > maxPolicyDoc {
		return nil, malformedPolicy("The policy is %d bytes; the limit is %d.", len(doc), maxPolicyDoc)
	}
	top, err := strictObject(doc, "The policy", "Version", "Id", "Statement")
	if err != nil {
		return nil, err
	}
	if v, ok := top["Version"]; ok {
		var s string
		if json.Unmarshal(v, &s) != nil || (s != "2012-10-17" && s != "2008-10-17") {
			return nil, malformedPolicy("The policy's Version must be \"2012-10-17\" (or \"2008-10-17\").")
		}
	}
	raw, ok := top["Statement"]
	if !ok {
		return nil, malformedPolicy("Missing required field Statement.")
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	if len(list) == 0 {
		return nil, malformedPolicy("The policy has no statement.")
	}
	p := &bucketPolicy{}
	for i, s := range list {
		st, err := parseStatement(s, bucket)
		if err != nil {
			return nil, errCode("MalformedPolicy", "Statement %d: %s", i+1, toAPIError(err).Message)
		}
		p.stmts = append(p.stmts, st)
	}
	return p, nil
}

func parseStatement(raw json.RawMessage, bucket string) (policyStatement, error) {
	var st policyStatement
	m, err := strictObject(raw, "A statement", "Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition")
	if err != nil {
		return st, err
	}
	var effect string
	json.Unmarshal(m["Effect"], &effect)
	switch effect {
	case "Allow":
	case "Deny":
		st.deny = true
	default:
		return st, malformedPolicy("Effect must be Allow or Deny.")
	}
	if _, ok := m["NotPrincipal"]; ok {
		return st, malformedPolicy("NotPrincipal is not supported by flyfs; name the principals (key ids, or \"*\") and use Deny.")
	}
	if st.principals, err = parsePrincipal(m["Principal"]); err != nil {
		return st, err
	}
	act, nact := m["Action"], m["NotAction"]
	switch {
	case act != nil && nact != nil, act == nil && nact == nil:
		return st, malformedPolicy("A statement has one of Action and NotAction.")
	case nact != nil:
		act, st.notAction = nact, true
	}
	acts, err := strings1(act, "Action")
	if err != nil {
		return st, err
	}
	for _, a := range acts {
		if a != "*" && !validActionPattern(a) {
			return st, malformedPolicy("Policy has invalid action: %q (an S3 action is s3:<Operation>, with * and ? as wildcards).", a)
		}
		st.actions = append(st.actions, strings.ToLower(a))
	}
	res, nres := m["Resource"], m["NotResource"]
	switch {
	case res != nil && nres != nil, res == nil && nres == nil:
		return st, malformedPolicy("A statement has one of Resource and NotResource.")
	case nres != nil:
		res, st.notResource = nres, true
	}
	rs, err := strings1(res, "Resource")
	if err != nil {
		return st, err
	}
	for _, r := range rs {
		rest, ok := strings.CutPrefix(r, "arn:aws:s3:::")
		b, _, _ := strings.Cut(rest, "/")
		if !ok || !wildMatch(b, bucket, false) {
			return st, malformedPolicy("Policy has invalid resource: %q (a resource of this bucket is arn:aws:s3:::%s or arn:aws:s3:::%s/<key pattern>).", r, bucket, bucket)
		}
		st.resources = append(st.resources, rest)
	}
	if c, ok := m["Condition"]; ok {
		if st.conds, err = parseConditions(c); err != nil {
			return st, err
		}
	}
	return st, nil
}

func validActionPattern(a string) bool {
	name, ok := strings.CutPrefix(strings.ToLower(a), "s3:")
	if !ok || name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '*' || c == '?') {
			return false
		}
	}
	return true
}

func parsePrincipal(raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, malformedPolicy("A bucket policy statement needs a Principal.")
	}
	var star string
	if json.Unmarshal(raw, &star) == nil {
		if star != "*" {
			return nil, malformedPolicy("Invalid principal %q: use \"*\" or {\"AWS\": [...]}.", star)
		}
		return []string{"*"}, nil
	}
	m, err := strictObject(raw, "Principal", "AWS")
	if err != nil {
		return nil, malformedPolicy("Invalid principal: flyfs knows \"*\" and {\"AWS\": key ids}; %s", toAPIError(err).Message)
	}
	ids, err := strings1(m["AWS"], "Principal AWS")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if id == "*" {
			out = append(out, "*")
			continue
		}
		if rest, ok := strings.CutPrefix(id, "arn:aws:iam::"); ok {
			_, user, ok := strings.Cut(rest, ":user/")
			if !ok || user == "" || strings.Contains(user, "/") {
				return nil, malformedPolicy("Invalid principal %q: flyfs principals are access keys, arn:aws:iam::<account>:user/<key id> or the key id itself.", id)
			}
			id = user
		}
		if id == "" || strings.ContainsAny(id, "*?:/ ") {
			return nil, malformedPolicy("Invalid principal %q.", id)
		}
		out = append(out, id)
	}
	return out, nil
}

// condOps are the operators flyfs evaluates (lower case); negated ones
// pass when the request has none of the values.
var condOps = map[string]struct{ negated bool }{
	"stringequals": {}, "stringnotequals": {true}, "stringequalsignorecase": {}, "stringnotequalsignorecase": {true},
	"stringlike": {}, "stringnotlike": {true},
	"numericequals": {}, "numericnotequals": {true}, "numericlessthan": {}, "numericlessthanequals": {},
	"numericgreaterthan": {}, "numericgreaterthanequals": {},
	"dateequals": {}, "datenotequals": {true}, "datelessthan": {}, "datelessthanequals": {},
	"dategreaterthan": {}, "dategreaterthanequals": {},
	"bool": {}, "ipaddress": {}, "notipaddress": {true}, "null": {},
}

// condKeys are the condition keys flyfs knows (lower case); the
// s3:ExistingObjectTag/<name> family besides.
var condKeys = map[string]bool{
	"aws:sourceip": true, "aws:securetransport": true, "aws:currenttime": true, "aws:epochtime": true,
	"aws:useragent": true, "aws:referer": true, "aws:username": true, "aws:userid": true, "aws:principaltype": true,
	"s3:prefix": true, "s3:delimiter": true, "s3:max-keys": true, "s3:versionid": true,
	"s3:x-amz-acl": true, "s3:x-amz-server-side-encryption": true, "s3:x-amz-copy-source": true,
	"s3:x-amz-metadata-directive": true, "s3:x-amz-storage-class": true, "s3:x-amz-content-sha256": true,
	"s3:signatureversion": true, "s3:authtype": true,
}

// condKey returns the form a key is looked up by: lower case, but for the
// tag's name of s3:ExistingObjectTag/<name>.
func condKey(k string) (string, bool) {
	if len(k) > len("s3:existingobjecttag/") && strings.EqualFold(k[:len("s3:existingobjecttag/")], "s3:existingobjecttag/") {
		return "s3:existingobjecttag/" + k[len("s3:existingobjecttag/"):], true
	}
	l := strings.ToLower(k)
	return l, condKeys[l]
}

func parseConditions(raw json.RawMessage) ([]policyCond, error) {
	var ops map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, malformedPolicy("Condition must be {\"<operator>\": {\"<key>\": <values>}}.")
	}
	var out []policyCond
	for opName, keys := range ops {
		op := strings.ToLower(opName)
		if strings.Contains(op, ":") {
			return nil, malformedPolicy("The condition operator %q is not supported by flyfs (ForAnyValue:/ForAllValues: are not).", opName)
		}
		ifExists := false
		if base, ok := strings.CutSuffix(op, "ifexists"); ok && base != "null" {
			op, ifExists = base, true
		}
		if _, ok := condOps[op]; !ok {
			return nil, malformedPolicy("The condition operator %q is not supported by flyfs.", opName)
		}
		for k, v := range keys {
			key, known := condKey(k)
			if !known {
				return nil, malformedPolicy("The condition key %q is not supported by flyfs: a condition it could not evaluate is refused rather than ignored.", k)
			}
			vals, ok := condValues(v)
			if !ok {
				return nil, malformedPolicy("The values of %s %s must be strings, numbers or booleans.", opName, k)
			}
			c := policyCond{op: op, ifExists: ifExists, key: key, values: vals}
			if err := c.checkValues(opName); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// checkValues parses what the operator compares, once, at put time.
func (c *policyCond) checkValues(opName string) error {
	for _, v := range c.values {
		switch {
		case strings.HasPrefix(c.op, "numeric"):
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return malformedPolicy("%s needs numbers; %q is not one.", opName, v)
			}
		case strings.HasPrefix(c.op, "date"):
			if _, ok := policyTime(v); !ok {
				return malformedPolicy("%s needs dates (ISO 8601 or epoch seconds); %q is not one.", opName, v)
			}
		case c.op == "bool", c.op == "null":
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return malformedPolicy("%s needs true or false; %q is not one.", opName, v)
			}
		case c.op == "ipaddress", c.op == "notipaddress":
			if !strings.Contains(v, "/") {
				if ip := net.ParseIP(v); ip != nil && ip.To4() != nil {
					v += "/32"
				} else {
					v += "/128"
				}
			}
			_, n, err := net.ParseCIDR(v)
			if err != nil {
				return malformedPolicy("%s needs addresses or CIDR blocks; %q is not one.", opName, v)
			}
			c.nets = append(c.nets, n)
		}
	}
	return nil
}

func policyTime(v string) (float64, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return float64(t.UnixNano()) / 1e9, true
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return float64(t.Unix()), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, true
	}
	return 0, false
}

// wildMatch matches s against pattern with * (any run) and ? (any one
// character), case-insensitively when fold.
func wildMatch(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// decide is the policy's effect on a request.
func (p *bucketPolicy) decide(req policyRequest) policyEffect {
	allow := false
	for i := range p.stmts {
		st := &p.stmts[i]
		if !st.applies(req) {
			continue
		}
		if st.deny {
			return policyDeny
		}
		allow = true
	}
	if allow {
		return policyAllow
	}
	return policyNone
}

func (st *policyStatement) applies(req policyRequest) bool {
	who := false
	for _, pr := range st.principals {
		who = who || pr == "*" || (req.principal != "" && pr == req.principal)
	}
	if !who {
		return false
	}
	act := false
	for _, a := range st.actions {
		act = act || wildMatch(a, req.action, true)
	}
	if act == st.notAction {
		return false
	}
	res := false
	for _, r := range st.resources {
		res = res || wildMatch(r, req.resource, false)
	}
	if res == st.notResource {
		return false
	}
	for _, c := range st.conds {
		if !c.holds(req) {
			return false
		}
	}
	return true
}

func (c *policyCond) holds(req policyRequest) bool {
	var got []string
	present := false
	if req.value != nil {
		got, present = req.value(c.key)
	}
	if c.op == "null" {
		return strings.EqualFold(c.values[0], "true") != present
	}
	negated := condOps[c.op].negated
	if !present {
		return negated || c.ifExists
	}
	hit := false
	for _, g := range got {
		hit = hit || c.matches(g)
	}
	return hit != negated
}

// matches says whether one request value meets the operator for any of
// the condition's values (the positive form of a negated operator).
func (c *policyCond) matches(got string) bool {
	switch c.op {
	case "ipaddress", "notipaddress":
		ip := net.ParseIP(got)
		for _, n := range c.nets {
			if ip != nil && n.Contains(ip) {
				return true
			}
		}
		return false
	}
	for _, want := range c.values {
		switch c.op {
		case "stringequals", "stringnotequals":
			if got == want {
				return true
			}
		case "stringequalsignorecase", "stringnotequalsignorecase":
			if strings.EqualFold(got, want) {
				return true
			}
		case "stringlike", "stringnotlike":
			if wildMatch(want, got, false) {
				return true
			}
		case "bool":
			if strings.EqualFold(got, want) {
				return true
			}
		default:
			var g, w float64
			var ok1, ok2 bool
			if strings.HasPrefix(c.op, "date") {
				g, ok1 = policyTime(got)
				w, ok2 = policyTime(want)
			} else {
				var e1, e2 error
				g, e1 = strconv.ParseFloat(got, 64)
				w, e2 = strconv.ParseFloat(want, 64)
				ok1, ok2 = e1 == nil, e2 == nil
			}
			if ok1 && ok2 && compares(strings.TrimPrefix(strings.TrimPrefix(c.op, "numeric"), "date"), g, w) {
				return true
			}
		}
	}
	return false
}

func compares(rel string, g, w float64) bool {
	switch rel {
	case "equals", "notequals":
		return g == w
	case "lessthan":
		return g < w
	case "lessthanequals":
		return g <= w
	case "greaterthan":
		return g > w
	case "greaterthanequals":
		return g >= w
	}
	return false
}

// public says whether the policy lets anyone in: an Allow for "*" not
// narrowed to given addresses or users (AWS's test, in the part of the
// language flyfs has).
func (p *bucketPolicy) public() bool {
	for _, st := range p.stmts {
		if st.deny {
			continue
		}
		everyone := false
		for _, pr := range st.principals {
			everyone = everyone || pr == "*"
		}
		narrowed := false
		for _, c := range st.conds {
			switch {
			case c.key == "aws:sourceip" && c.op == "ipaddress":
				narrowed = narrowed || !wideNets(c.nets)
			case (c.key == "aws:userid" || c.key == "aws:username") && c.op == "stringequals":
				narrowed = true
			}
		}
		if everyone && !narrowed {
			return true
		}
	}
	return false
}

// wideNets says whether the blocks take in much of the Internet (a /8 or
// wider), which AWS counts as public.
func wideNets(nets []*net.IPNet) bool {
	for _, n := range nets {
		ones, bits := n.Mask.Size()
		if bits == 32 && ones < 8 || bits == 128 && ones < 32 {
			return true
		}
	}
	return false
}

// opActions maps an operation to its S3 action where the two names
// differ; any other operation's action is "s3:" and its name.
var opActions = map[string]string{
	"ListObjects": "s3:ListBucket", "ListObjectsV2": "s3:ListBucket", "HeadBucket": "s3:ListBucket",
	"ListObjectVersions": "s3:ListBucketVersions", "ListMultipartUploads": "s3:ListBucketMultipartUploads",
	"ListParts": "s3:ListMultipartUploadParts", "HeadObject": "s3:GetObject",
	"CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject", "UploadPartCopy": "s3:PutObject",
	"CompleteMultipartUpload": "s3:PutObject", "CopyObject": "s3:PutObject", "PostObject": "s3:PutObject",
	"DeleteObjects": "s3:DeleteObject", "GetBucketCors": "s3:GetBucketCORS", "PutBucketCors": "s3:PutBucketCORS",
	"DeleteBucketCors": "s3:PutBucketCORS", "DeleteBucketTagging": "s3:PutBucketTagging",
	"GetPublicAccessBlock": "s3:GetBucketPublicAccessBlock", "PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock",
	"DeletePublicAccessBlock": "s3:PutBucketPublicAccessBlock", "RenameObject": "s3:PutObject",
	"GetBucketLifecycleConfiguration": "s3:GetLifecycleConfiguration", "PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
	"DeleteBucketLifecycle": "s3:PutLifecycleConfiguration",
}

func actionOf(op string) string {
	if a, ok := opActions[op]; ok {
		return a
	}
	return "s3:" + op
}
