package gateway

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// A bucket's lifecycle configuration: rules that expire objects by prefix,
// tags, size and age (or at a date), and abort multipart uploads left
// incomplete. The decisions are pure functions of a rule, an object and a
// time (expiresAt, matches); lifecyclerun.go applies them.
//
// Expiration follows S3's arithmetic: an object expires at the first
// midnight UTC at least Days after its Last-Modified time, or from Date on
// (a midnight UTC); in a versioned bucket an expiration is a delete (the
// object kept as a noncurrent version behind a delete marker).
// NoncurrentVersionExpiration and ExpiredObjectDeleteMarker act on the
// versions (lifecycleversions.go); transitions (to another storage class)
// are refused, as flyfs has one.

const (
	xattrLifecycle    = "user.s3.lifecycle"
	maxLifecycleRules = 1000
	maxLifecycleBody  = 1 << 20
	// maxLifecycleRecord bounds the stored rules (an xattr value).
	maxLifecycleRecord = 64 << 10
)

type lifecycleConfiguration struct {
	XMLName xml.Name        `xml:"LifecycleConfiguration"`
	NS      string          `xml:"xmlns,attr,omitempty"`
	Rules   []lifecycleRule `xml:"Rule"`
}

type lifecycleRule struct {
	ID     string           `xml:"ID,omitempty" json:"id,omitempty"`
	Filter *lifecycleFilter `xml:"Filter" json:"filter,omitempty"`
	// Prefix is the rule's prefix in the form before Filter existed.
	Prefix                         *string                   `xml:"Prefix" json:"prefix,omitempty"`
	Status                         string                    `xml:"Status" json:"status"`
	Expiration                     *lifecycleExpiration      `xml:"Expiration" json:"expiration,omitempty"`
	AbortIncompleteMultipartUpload *lifecycleAbort           `xml:"AbortIncompleteMultipartUpload" json:"abort,omitempty"`
	NoncurrentVersionExpiration    *lifecycleNoncurrent      `xml:"NoncurrentVersionExpiration" json:"noncurrent,omitempty"`
	Unknown                        []lifecycleUnknownElement `xml:",any" json:"-"`
}

type lifecycleUnknownElement struct {
	XMLName xml.Name
}

type lifecycleFilter struct {
	Prefix                *string                   `xml:"Prefix" json:"prefix,omitempty"`
	Tag                   *tag                      `xml:"Tag" json:"tag,omitempty"`
	ObjectSizeGreaterThan *int64                    `xml:"ObjectSizeGreaterThan" json:"gt,omitempty"`
	ObjectSizeLessThan    *int64                    `xml:"ObjectSizeLessThan" json:"lt,omitempty"`
	And                   *lifecycleAnd             `xml:"And" json:"and,omitempty"`
	Unknown               []lifecycleUnknownElement `xml:",any" json:"-"`
}

type lifecycleAnd struct {
	Prefix                *string                   `xml:"Prefix" json:"prefix,omitempty"`
	Tags                  []tag                     `xml:"Tag" json:"tags,omitempty"`
	ObjectSizeGreaterThan *int64                    `xml:"ObjectSizeGreaterThan" json:"gt,omitempty"`
	ObjectSizeLessThan    *int64                    `xml:"ObjectSizeLessThan" json:"lt,omitempty"`
	Unknown               []lifecycleUnknownElement `xml:",any" json:"-"`
}

type lifecycleExpiration struct {
	Days                      *int    `xml:"Days" json:"days,omitempty"`
	Date                      *string `xml:"Date" json:"date,omitempty"`
	ExpiredObjectDeleteMarker *bool   `xml:"ExpiredObjectDeleteMarker" json:"delete_marker,omitempty"`
}

type lifecycleAbort struct {
	DaysAfterInitiation int `xml:"DaysAfterInitiation" json:"days"`
}

type lifecycleNoncurrent struct {
	NoncurrentDays          *int `xml:"NoncurrentDays" json:"days,omitempty"`
	NewerNoncurrentVersions *int `xml:"NewerNoncurrentVersions" json:"newer,omitempty"`
}

// lifecycleObject is what a rule is matched against.
type lifecycleObject struct {
	key      string
	size     int64
	modified time.Time
	tags     func() []tag // loaded only for rules that filter by tags
}

// parseLifecycle checks a PutBucketLifecycleConfiguration body.
func parseLifecycle(data []byte) ([]lifecycleRule, error) {
	var cfg lifecycleConfiguration
	if err := xml.Unmarshal(data, &cfg); err != nil {
		return nil, errCode("MalformedXML", "")
	}
	if len(cfg.Rules) == 0 {
		return nil, errCode("MalformedXML", "A lifecycle configuration has at least one rule.")
	}
	if len(cfg.Rules) > maxLifecycleRules {
		return nil, errCode("InvalidRequest", "A lifecycle configuration has at most %d rules.", maxLifecycleRules)
	}
	ids := map[string]bool{}
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		if err := checkRule(r); err != nil {
			return nil, err
		}
		if r.ID != "" {
			if ids[r.ID] {
				return nil, errCode("InvalidArgument", "Rule ID must be unique. Found same ID for more than one rule: %q.", r.ID)
			}
			ids[r.ID] = true
		}
	}
	return cfg.Rules, nil
}

func unknownElement(els []lifecycleUnknownElement) error {
	if len(els) == 0 {
		return nil
	}
	name := els[0].XMLName.Local
	switch name {
	case "Transition", "NoncurrentVersionTransition":
		return errCode("NotImplemented", "The lifecycle action %s moves objects to another storage class; flyfs has the one class STANDARD, and the configuration was not stored.", name)
	}
	return errCode("MalformedXML", "The lifecycle configuration has the element %s, which flyfs does not know; it was not stored.", name)
}

func checkRule(r *lifecycleRule) error {
	if err := unknownElement(r.Unknown); err != nil {
		return err
	}
	if len(r.ID) > 255 {
		return errCode("InvalidArgument", "ID length should not exceed allowed limit of 255")
	}
	if r.Status != "Enabled" && r.Status != "Disabled" {
		return errCode("MalformedXML", "A rule's Status is Enabled or Disabled.")
	}
	if r.Filter != nil && r.Prefix != nil {
		return errCode("MalformedXML", "A rule has a Filter or a Prefix, not both.")
	}
	if f := r.Filter; f != nil {
		if err := unknownElement(f.Unknown); err != nil {
			return err
		}
		n := 0
		for _, set := range []bool{f.Prefix != nil, f.Tag != nil, f.ObjectSizeGreaterThan != nil, f.ObjectSizeLessThan != nil, f.And != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			return errCode("MalformedXML", "A Filter holds one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan and And; several conditions go in And.")
		}
		if f.Tag != nil {
			if err := validateTags([]tag{*f.Tag}); err != nil {
				return err
			}
		}
		if a := f.And; a != nil {
			if err := unknownElement(a.Unknown); err != nil {
				return err
			}
			if err := validateTags(a.Tags); err != nil {
				return err
			}
			if a.ObjectSizeGreaterThan != nil && a.ObjectSizeLessThan != nil && *a.ObjectSizeLessThan <= *a.ObjectSizeGreaterThan {
				return errCode("InvalidArgument", "ObjectSizeLessThan must be greater than ObjectSizeGreaterThan.")
			}
		}
	}
	if r.Expiration == nil && r.AbortIncompleteMultipartUpload == nil && r.NoncurrentVersionExpiration == nil {
		return errCode("InvalidRequest", "At least one action needs to be specified in a rule.")
	}
	if e := r.Expiration; e != nil {
		n := 0
		for _, set := range []bool{e.Days != nil, e.Date != nil, e.ExpiredObjectDeleteMarker != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return errCode("MalformedXML", "An Expiration has one of Days, Date and ExpiredObjectDeleteMarker.")
		}
		if e.Days != nil && *e.Days <= 0 {
			return errCode("InvalidArgument", "'Days' for Expiration action must be a positive integer.")
		}
		if e.Date != nil {
			t, err := time.Parse(time.RFC3339, *e.Date)
			if err != nil || !t.Equal(t.UTC().Truncate(24*time.Hour)) {
				return errCode("InvalidArgument", "'Date' must be at midnight GMT (2006-01-02T00:00:00Z).")
			}
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil {
		if a.DaysAfterInitiation <= 0 {
			return errCode("InvalidArgument", "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer.")
		}
		if r.tagged() {
			return errCode("InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags.")
		}
	}
	if n := r.NoncurrentVersionExpiration; n != nil && (n.NoncurrentDays == nil || *n.NoncurrentDays <= 0) {
		return errCode("InvalidArgument", "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer.")
	}
	return nil
}

// prefix is the rule's key prefix ("" : every key).
func (r *lifecycleRule) prefix() string {
	switch {
	case r.Prefix != nil:
		return *r.Prefix
	case r.Filter == nil:
		return ""
	case r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	}
	return ""
}

func (r *lifecycleRule) tagged() bool {
	return r.Filter != nil && (r.Filter.Tag != nil || (r.Filter.And != nil && len(r.Filter.And.Tags) > 0))
}

// matches says whether the rule's filter takes in the object.
func (r *lifecycleRule) matches(o lifecycleObject) bool {
	if !strings.HasPrefix(o.key, r.prefix()) {
		return false
	}
	f := r.Filter
	if f == nil {
		return true
	}
	var want []tag
	gt, lt := f.ObjectSizeGreaterThan, f.ObjectSizeLessThan
	if f.Tag != nil {
		want = []tag{*f.Tag}
	}
	if a := f.And; a != nil {
		want, gt, lt = a.Tags, a.ObjectSizeGreaterThan, a.ObjectSizeLessThan
	}
	if gt != nil && o.size <= *gt || lt != nil && o.size >= *lt {
		return false
	}
	if len(want) == 0 {
		return true
	}
	have := map[string]string{}
	if o.tags != nil {
		for _, t := range o.tags() {
			have[t.Key] = t.Value
		}
	}
	for _, t := range want {
		if v, ok := have[t.Key]; !ok || v != t.Value {
			return false
		}
	}
	return true
}

// nextMidnight is the first midnight UTC at or after t.
func nextMidnight(t time.Time) time.Time {
	d := t.UTC().Truncate(24 * time.Hour)
	if d.Before(t) {
		d = d.Add(24 * time.Hour)
	}
	return d
}

// expiresAt is when the rule expires an object modified at modified (ok
// false: the rule expires no current object).
func (r *lifecycleRule) expiresAt(modified time.Time) (time.Time, bool) {
	e := r.Expiration
	if r.Status != "Enabled" || e == nil {
		return time.Time{}, false
	}
	switch {
	case e.Days != nil:
		return nextMidnight(modified.Add(time.Duration(*e.Days) * 24 * time.Hour)), true
	case e.Date != nil:
		t, err := time.Parse(time.RFC3339, *e.Date)
		return t, err == nil
	}
	return time.Time{}, false
}

// abortsAt is when the rule aborts an upload initiated at initiated.
func (r *lifecycleRule) abortsAt(initiated time.Time) (time.Time, bool) {
	a := r.AbortIncompleteMultipartUpload
	if r.Status != "Enabled" || a == nil {
		return time.Time{}, false
	}
	return nextMidnight(initiated.Add(time.Duration(a.DaysAfterInitiation) * 24 * time.Hour)), true
}

func (g *Gateway) getBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	v, err := g.meta.GetXattr(r.Context(), in.ID, xattrLifecycle)
	if errnoOf(err) == syscall.ENODATA {
		return errCode("NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist")
	}
	if err != nil {
		return err
	}
	var rules []lifecycleRule
	if err := json.Unmarshal(v, &rules); err != nil {
		return err
	}
	return writeXML(w, lifecycleConfiguration{NS: s3NS, Rules: rules})
}

func (g *Gateway) putBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxLifecycleBody)
	if err != nil {
		return err
	}
	rules, err := parseLifecycle(data)
	if err != nil {
		return err
	}
	v, err := json.Marshal(rules)
	if err != nil {
		return err
	}
	if len(v) > maxLifecycleRecord {
		return errCode("InvalidRequest", "The lifecycle configuration takes %d bytes once stored; at most %d fit.", len(v), maxLifecycleRecord)
	}
	if err := g.meta.SetXattr(ctx, in.ID, xattrLifecycle, v, 0); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deleteBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.removeBucketConfig(w, r, rc, xattrLifecycle)
}
