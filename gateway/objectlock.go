package gateway

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Object lock. A bucket made with x-amz-bucket-object-lock-enabled (or
// given an ObjectLockConfiguration while its versioning is Enabled) has
// object lock for good, and its versioning cannot be suspended. Its
// versions take retention (GOVERNANCE or COMPLIANCE, until a date) and
// legal holds, from the PUT's x-amz-object-lock-* headers, from
// PutObjectRetention / PutObjectLegalHold, or from the bucket's default
// rule. The metadata service enforces them for both views
// (metad/ns/objectlock.go): a retained version is never removed for good
// nor changed in place (the mount gets EPERM), governance yielding to
// x-amz-bypass-governance-retention: true from a key that may write the
// bucket; deletes without a version id still add delete markers, as in S3.

const xattrObjectLock = "user.s3.object-lock"

// bucketLock is a bucket's stored object-lock configuration.
type bucketLock struct {
	Enabled bool   `json:"enabled"`
	Mode    string `json:"mode,omitempty"` // the default rule's GOVERNANCE or COMPLIANCE
	Days    int    `json:"days,omitempty"`
	Years   int    `json:"years,omitempty"`
}

type objectLockConfiguration struct {
	XMLName           xml.Name        `xml:"ObjectLockConfiguration"`
	NS                string          `xml:"xmlns,attr,omitempty"`
	ObjectLockEnabled string          `xml:"ObjectLockEnabled,omitempty"`
	Rule              *objectLockRule `xml:"Rule,omitempty"`
}

type objectLockRule struct {
	DefaultRetention struct {
		Mode  string `xml:"Mode,omitempty"`
		Days  int    `xml:"Days,omitempty"`
		Years int    `xml:"Years,omitempty"`
	} `xml:"DefaultRetention"`
}

type retentionBody struct {
	XMLName         xml.Name `xml:"Retention"`
	NS              string   `xml:"xmlns,attr,omitempty"`
	Mode            string   `xml:"Mode,omitempty"`
	RetainUntilDate string   `xml:"RetainUntilDate,omitempty"`
}

type legalHoldBody struct {
	XMLName xml.Name `xml:"LegalHold"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	Status  string   `xml:"Status"`
}

var errNoLockConfig = errCode("InvalidRequest", "Bucket is missing Object Lock Configuration")

// lockedError is the answer to a change object lock forbids.
func lockedError(err error) error {
	if errnoOf(err) == syscall.EPERM {
		return errCode("AccessDenied", "Access Denied because object protected by object lock.")
	}
	return err
}

func modeOf(s string) (metaapi.RetainMode, bool) {
	switch s {
	case "GOVERNANCE":
		return metaapi.RetainGovernance, true
	case "COMPLIANCE":
		return metaapi.RetainCompliance, true
	}
	return 0, false
}

func modeName(m metaapi.RetainMode) string {
	switch m {
	case metaapi.RetainGovernance:
		return "GOVERNANCE"
	case metaapi.RetainCompliance:
		return "COMPLIANCE"
	}
	return ""
}

// lockOf returns bucket's object-lock configuration (nil: none).
func (g *Gateway) lockOf(ctx context.Context, bucket uint64) (*bucketLock, error) {
	v, err := g.meta.GetXattr(ctx, bucket, xattrObjectLock)
	switch errnoOf(err) {
	case 0:
	case syscall.ENODATA:
		return nil, nil
	default:
		return nil, err
	}
	var l bucketLock
	if err := json.Unmarshal(v, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (g *Gateway) storeLock(ctx context.Context, bucket uint64, l bucketLock) error {
	v, _ := json.Marshal(l)
	return g.meta.SetXattr(ctx, bucket, xattrObjectLock, v, 0)
}

// enableObjectLock turns a new bucket's versioning and object lock on
// (CreateBucket with x-amz-bucket-object-lock-enabled).
func (g *Gateway) enableObjectLock(ctx context.Context, bucket uint64) error {
	if err := g.meta.SetVersioning(ctx, bucket, metaapi.VersioningEnabled); err != nil {
		return err
	}
	return g.storeLock(ctx, bucket, bucketLock{Enabled: true})
}

// bypassGovernance reads x-amz-bypass-governance-retention.
func bypassGovernance(h http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get("X-Amz-Bypass-Governance-Retention")), "true")
}

// newObjectLock is the lock a new version of bucket takes: the request's
// x-amz-object-lock-* headers, else the bucket's default rule (nil: none).
func (g *Gateway) newObjectLock(ctx context.Context, h http.Header, bucket string) (*metaapi.ObjectLock, error) {
	mode, until, hold := h.Get("X-Amz-Object-Lock-Mode"), h.Get("X-Amz-Object-Lock-Retain-Until-Date"), h.Get("X-Amz-Object-Lock-Legal-Hold")
	b, err := g.bucketInode(ctx, bucket)
	if err != nil {
		return nil, err
	}
	cfg, err := g.lockOf(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	asked := mode != "" || until != "" || hold != ""
	if cfg == nil || !cfg.Enabled {
		if asked {
			return nil, errNoLockConfig
		}
		return nil, nil
	}
	l := &metaapi.ObjectLock{}
	switch {
	case (mode == "") != (until == ""):
		return nil, errCode("InvalidArgument", "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied")
	case mode != "":
		m, ok := modeOf(mode)
		if !ok {
			return nil, errCode("InvalidArgument", "Unknown wormMode directive.")
		}
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return nil, errCode("InvalidArgument", "The retain until date must be provided in ISO 8601 format")
		}
		if !t.After(g.now()) {
			return nil, errCode("InvalidArgument", "The retain until date must be in the future!")
		}
		l.Mode, l.Until = m, t.UnixNano()
	case cfg.Mode != "":
		m, _ := modeOf(cfg.Mode)
		l.Mode, l.Until = m, g.now().AddDate(cfg.Years, 0, cfg.Days).UnixNano()
	}
	switch hold {
	case "":
	case "ON":
		l.LegalHold = true
	case "OFF":
	default:
		return nil, errCode("InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'")
	}
	if l.Mode == metaapi.RetainNone && !l.LegalHold {
		return nil, nil
	}
	return l, nil
}

// lockHeaders sets the object-lock headers of a GET or HEAD.
func lockHeaders(h http.Header, in metaapi.Inode) {
	if in.RetainMode != metaapi.RetainNone {
		h.Set("X-Amz-Object-Lock-Mode", modeName(in.RetainMode))
		h.Set("X-Amz-Object-Lock-Retain-Until-Date", time.Unix(0, in.RetainUntil).UTC().Format(time.RFC3339))
	}
	if in.LegalHold {
		h.Set("X-Amz-Object-Lock-Legal-Hold", "ON")
	}
}

func (g *Gateway) putObjectLockConfiguration(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	b, st, err := g.bucketVersioning(ctx, rc.bucket)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxXMLBody)
	if err != nil {
		return err
	}
	var c objectLockConfiguration
	if xml.Unmarshal(data, &c) != nil || c.ObjectLockEnabled != "Enabled" {
		return errCode("MalformedXML", "")
	}
	l := bucketLock{Enabled: true}
	if c.Rule != nil {
		d := c.Rule.DefaultRetention
		if _, ok := modeOf(d.Mode); !ok || (d.Days > 0) == (d.Years > 0) || d.Days < 0 || d.Years < 0 {
			return errCode("MalformedXML", "A default retention has a Mode (GOVERNANCE or COMPLIANCE) and one of Days and Years, a positive number.")
		}
		l.Mode, l.Days, l.Years = d.Mode, d.Days, d.Years
	}
	if st != metaapi.VersioningEnabled {
		return errCode("InvalidBucketState", "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")
	}
	if err := g.storeLock(ctx, b.ID, l); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) getObjectLockConfiguration(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	l, err := g.lockOf(r.Context(), b.ID)
	if err != nil {
		return err
	}
	if l == nil || !l.Enabled {
		return errCode("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket")
	}
	res := objectLockConfiguration{NS: s3NS, ObjectLockEnabled: "Enabled"}
	if l.Mode != "" {
		res.Rule = &objectLockRule{}
		res.Rule.DefaultRetention.Mode, res.Rule.DefaultRetention.Days, res.Rule.DefaultRetention.Years = l.Mode, l.Days, l.Years
	}
	return writeXML(w, res)
}

// lockedObject resolves the version a retention or legal-hold call names,
// in a bucket with object lock.
func (g *Gateway) lockedObject(ctx context.Context, rc *reqCtx) (metaapi.Inode, error) {
	b, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return metaapi.Inode{}, err
	}
	l, err := g.lockOf(ctx, b.ID)
	if err != nil {
		return metaapi.Inode{}, err
	}
	if l == nil || !l.Enabled {
		return metaapi.Inode{}, errNoLockConfig
	}
	in, _, err := g.statObject(ctx, rc)
	if err == nil && in.Type != metaapi.TypeFile {
		err = errCode("NoSuchKey", "")
	}
	return in, err
}

func (g *Gateway) getObjectRetention(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.lockedObject(r.Context(), rc)
	if err != nil {
		return err
	}
	if in.RetainMode == metaapi.RetainNone {
		return errCode("NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock configuration")
	}
	return writeXML(w, retentionBody{NS: s3NS, Mode: modeName(in.RetainMode), RetainUntilDate: time.Unix(0, in.RetainUntil).UTC().Format(time.RFC3339Nano)})
}

func (g *Gateway) putObjectRetention(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, err := g.lockedObject(ctx, rc)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxXMLBody)
	if err != nil {
		return err
	}
	var body retentionBody
	if xml.Unmarshal(data, &body) != nil {
		return errCode("MalformedXML", "")
	}
	req := metaapi.RetentionReq{Ino: in.ID, SetRetention: true, Bypass: bypassGovernance(r.Header)}
	switch {
	case body.Mode == "" && body.RetainUntilDate == "":
		// No retention: allowed only where it could be shortened.
	case body.Mode == "" || body.RetainUntilDate == "":
		return errCode("MalformedXML", "")
	default:
		m, ok := modeOf(body.Mode)
		if !ok {
			return errCode("MalformedXML", "")
		}
		t, err := time.Parse(time.RFC3339, body.RetainUntilDate)
		if err != nil {
			return errCode("InvalidArgument", "The retain until date must be provided in ISO 8601 format")
		}
		if !t.After(g.now()) {
			return errCode("InvalidArgument", "The retain until date must be in the future!")
		}
		req.Mode, req.Until = m, t.UnixNano()
	}
	if _, err := g.meta.SetRetention(ctx, req); err != nil {
		return lockedError(err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) getObjectLegalHold(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.lockedObject(r.Context(), rc)
	if err != nil {
		return err
	}
	st := "OFF"
	if in.LegalHold {
		st = "ON"
	}
	return writeXML(w, legalHoldBody{NS: s3NS, Status: st})
}

func (g *Gateway) putObjectLegalHold(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, err := g.lockedObject(ctx, rc)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxXMLBody)
	if err != nil {
		return err
	}
	var body legalHoldBody
	if xml.Unmarshal(data, &body) != nil || (body.Status != "ON" && body.Status != "OFF") {
		return errCode("MalformedXML", "")
	}
	if _, err := g.meta.SetRetention(ctx, metaapi.RetentionReq{Ino: in.ID, SetHold: true, LegalHold: body.Status == "ON"}); err != nil {
		return lockedError(err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
