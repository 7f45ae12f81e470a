package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
)

// A POST policy is the JSON document a browser form carries (base64, in
// its policy field) and its signer signed: an expiration and conditions
// every form field must meet. Three kinds of condition exist:
//
//	{"name": "value"}                       the field equals value
//	["eq", "$name", "value"]                the same
//	["starts-with", "$name", "prefix"]      the field begins with prefix ("" : any value)
//	["content-length-range", min, max]      the file is min..max bytes
//
// Field names are case-insensitive; values are compared exactly. The
// bucket condition is met by the bucket of the URL. Every field of the
// form must be named by a condition, except the policy and signature
// fields themselves, the file and fields named x-ignore-*: a field no
// condition names is one the signer did not agree to.

type postCondition struct {
	op    string // "eq" or "starts-with"
	field string // lower case, without '$'
	value string
	text  string // the condition as written, for the error
}

type postPolicy struct {
	expiration time.Time
	conds      []postCondition
	// minLen..maxLen is content-length-range (0..MaxInt64 when absent).
	minLen, maxLen int64
}

// maxPolicyBytes bounds the decoded policy document; AWS caps the form's
// fields at 20 KB, the policy among them.
const maxPolicyBytes = 20 << 10

func policyError(format string, a ...any) error {
	return errCode("AccessDenied", "Invalid according to Policy: "+format, a...)
}

// parsePostPolicy decodes and checks the shape of a policy field.
func parsePostPolicy(b64 string) (*postPolicy, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, errCode("InvalidPolicyDocument", "The policy is not valid base64.")
	}
	if len(raw) > maxPolicyBytes {
		return nil, errCode("InvalidPolicyDocument", "The policy is %d bytes; the limit is %d.", len(raw), maxPolicyBytes)
	}
	var doc struct {
		Expiration *string           `json:"expiration"`
		Conditions []json.RawMessage `json:"conditions"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, errCode("InvalidPolicyDocument", "The policy is not a JSON object with expiration and conditions: %v.", err)
	}
	if doc.Expiration == nil {
		return nil, errCode("InvalidPolicyDocument", "The policy has no expiration.")
	}
	exp, err := time.Parse(time.RFC3339Nano, *doc.Expiration)
	if err != nil {
		return nil, errCode("InvalidPolicyDocument", "The policy's expiration %q is not an ISO 8601 time (2006-01-02T15:04:05.000Z).", *doc.Expiration)
	}
	p := &postPolicy{expiration: exp, maxLen: math.MaxInt64}
	seenRange := false
	for _, c := range doc.Conditions {
		switch {
		case len(c) > 0 && c[0] == '{':
			var m map[string]json.RawMessage
			if err := json.Unmarshal(c, &m); err != nil || len(m) != 1 {
				return nil, errCode("InvalidPolicyDocument", "The condition %s must be one {\"field\": \"value\"} pair.", c)
			}
			for k, v := range m {
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return nil, errCode("InvalidPolicyDocument", "The condition %s must have a string value.", c)
				}
				p.conds = append(p.conds, postCondition{op: "eq", field: strings.ToLower(k), value: s, text: string(c)})
			}
		case len(c) > 0 && c[0] == '[':
			var arr []json.RawMessage
			if err := json.Unmarshal(c, &arr); err != nil || len(arr) != 3 {
				return nil, errCode("InvalidPolicyDocument", "The condition %s must have three elements.", c)
			}
			var op string
			if err := json.Unmarshal(arr[0], &op); err != nil {
				return nil, errCode("InvalidPolicyDocument", "The condition %s does not begin with its operator.", c)
			}
			switch op = strings.ToLower(op); op {
			case "eq", "starts-with":
				var name, val string
				if json.Unmarshal(arr[1], &name) != nil || json.Unmarshal(arr[2], &val) != nil || !strings.HasPrefix(name, "$") || len(name) < 2 {
					return nil, errCode("InvalidPolicyDocument", "The condition %s must be [%q, \"$field\", \"value\"].", c, op)
				}
				p.conds = append(p.conds, postCondition{op: op, field: strings.ToLower(name[1:]), value: val, text: string(c)})
			case "content-length-range":
				lo, err1 := policyInt(arr[1])
				hi, err2 := policyInt(arr[2])
				if err1 != nil || err2 != nil || lo < 0 || hi < lo || seenRange {
					return nil, errCode("InvalidPolicyDocument", "The condition %s must be one [\"content-length-range\", min, max] with 0 <= min <= max.", c)
				}
				p.minLen, p.maxLen, seenRange = lo, hi, true
			default:
				return nil, errCode("InvalidPolicyDocument", "The condition %s has the operator %q; flyfs knows eq, starts-with and content-length-range.", c, op)
			}
		default:
			return nil, errCode("InvalidPolicyDocument", "The condition %s is neither an object nor an array.", c)
		}
	}
	return p, nil
}

// policyInt reads an integer given as a JSON number or a decimal string.
func policyInt(v json.RawMessage) (int64, error) {
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, err
		}
		n = json.Number(s)
	}
	return n.Int64()
}

// postExempt are the fields no condition needs to name.
func postExempt(name string) bool {
	switch name {
	case "policy", "x-amz-signature", "file", "signature", "awsaccesskeyid":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-")
}

// check returns why the form (fields by lower-case name, for bucket) does
// not meet the policy at now (nil: it does). The file's length is checked
// as it arrives (lengthOK).
func (p *postPolicy) check(fields map[string]string, bucket string, now time.Time) error {
	if !now.Before(p.expiration) {
		return policyError("Policy expired.")
	}
	named := map[string]bool{}
	for _, c := range p.conds {
		named[c.field] = true
		v, ok := fields[c.field]
		if c.field == "bucket" {
			v, ok = bucket, true
		}
		if !ok {
			return policyError("Policy Condition failed: %s (the form has no %s field)", c.text, c.field)
		}
		if c.op == "eq" && v != c.value || c.op == "starts-with" && !strings.HasPrefix(v, c.value) {
			return policyError("Policy Condition failed: %s", c.text)
		}
	}
	var extra []string
	for name := range fields {
		if !named[name] && !postExempt(name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return policyError("Extra input fields: %s", strings.Join(extra, ", "))
	}
	return nil
}

// lengthOK says whether a file of n bytes meets content-length-range.
func (p *postPolicy) lengthOK(n int64) error {
	if n < p.minLen {
		return errCode("EntityTooSmall", "Your proposed upload is %d bytes; the policy's content-length-range asks for at least %d.", n, p.minLen)
	}
	if n > p.maxLen {
		return errCode("EntityTooLarge", "Your proposed upload exceeds the policy's content-length-range maximum of %d bytes.", p.maxLen)
	}
	return nil
}
