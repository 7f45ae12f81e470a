package gateway

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"syscall"
)

// Access control lists, on buckets and objects: grants of READ, WRITE,
// READ_ACP, WRITE_ACP or FULL_CONTROL to an access key (CanonicalUser: its
// id), to everyone (the AllUsers group) or to every key (the
// AuthenticatedUsers group). The owner's FULL_CONTROL is implied and not
// stored. They come from a canned ACL (x-amz-acl), grant headers
// (x-amz-grant-*) or an AccessControlPolicy body, and are kept as JSON in
// user.s3.acl (a bucket's older "public-read" value reads as its canned
// ACL).
//
// A grant lets a caller do what its permission does in S3: on a bucket
// READ lists it, WRITE writes and deletes its objects, READ_ACP and
// WRITE_ACP read and set its ACL; on an object READ reads it, READ_ACP and
// WRITE_ACP its ACL. An object without an ACL of its own (written without
// one, or through the mount) is read under its bucket's READ grants: a
// public-read bucket serves its objects, as flyfs always has. An object
// with its own ACL is read under that ACL alone. Key grants and bucket
// policies come first (bucketauth.go); a policy's Deny is not undone by an
// ACL. A bucket whose ownership controls say BucketOwnerEnforced has ACLs
// disabled, as in S3: its grants are ignored and setting any ACL but the
// owner's is AccessControlListNotSupported.

const (
	groupAllUsers  = "http://acs.amazonaws.com/groups/global/AllUsers"
	groupAuthUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	xsiNS          = "http://www.w3.org/2001/XMLSchema-instance"
	xattrOwnership = "user.s3.ownership"
)

type aclGrant struct {
	ID    string `json:"id,omitempty"`    // an access key
	Group string `json:"group,omitempty"` // groupAllUsers, groupAuthUsers
	Perm  string `json:"perm"`
}

type acl struct {
	Grants []aclGrant `json:"grants,omitempty"`
}

var aclPerms = map[string]bool{"READ": true, "WRITE": true, "READ_ACP": true, "WRITE_ACP": true, "FULL_CONTROL": true}

// cannedACL returns the grants of a canned ACL.
func cannedACL(name string) (acl, error) {
	switch name {
	case "private", "bucket-owner-full-control", "bucket-owner-read":
		// flyfs buckets have one owner: the object's and the bucket's
		// grants coincide with the owner's.
		return acl{}, nil
	case "public-read":
		return acl{Grants: []aclGrant{{Group: groupAllUsers, Perm: "READ"}}}, nil
	case "public-read-write":
		return acl{Grants: []aclGrant{{Group: groupAllUsers, Perm: "READ"}, {Group: groupAllUsers, Perm: "WRITE"}}}, nil
	case "authenticated-read":
		return acl{Grants: []aclGrant{{Group: groupAuthUsers, Perm: "READ"}}}, nil
	case "aws-exec-read", "log-delivery-write":
		return acl{}, errCode("NotImplemented", "The canned ACL %s grants to AWS services flyfs does not have; nothing was changed.", name)
	}
	return acl{}, errCode("InvalidArgument", "%q is not a canned ACL (private, public-read, public-read-write, authenticated-read, bucket-owner-read, bucket-owner-full-control).", name)
}

var grantHeaders = map[string]string{
	"X-Amz-Grant-Read": "READ", "X-Amz-Grant-Write": "WRITE", "X-Amz-Grant-Read-Acp": "READ_ACP",
	"X-Amz-Grant-Write-Acp": "WRITE_ACP", "X-Amz-Grant-Full-Control": "FULL_CONTROL",
}

// aclFromHeaders reads x-amz-acl or the x-amz-grant-* headers (ok false:
// the request has neither).
func aclFromHeaders(h http.Header) (acl, bool, error) {
	canned := h.Get("X-Amz-Acl")
	var a acl
	given := false
	for name, perm := range grantHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		given = true
		for _, item := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(item), "=")
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "id":
				if !ok || val == "" {
					return acl{}, false, errCode("InvalidArgument", "The grantee in %s is not id=\"<key id>\".", strings.ToLower(name))
				}
				a.Grants = append(a.Grants, aclGrant{ID: val, Perm: perm})
			case "uri":
				if val != groupAllUsers && val != groupAuthUsers {
					return acl{}, false, errCode("NotImplemented", "The group %q in %s is not one flyfs has (AllUsers, AuthenticatedUsers); nothing was changed.", val, strings.ToLower(name))
				}
				a.Grants = append(a.Grants, aclGrant{Group: val, Perm: perm})
			case "emailaddress":
				return acl{}, false, errCode("NotImplemented", "Grants by e-mail address are not supported by flyfs: grant to a key, id=\"<key id>\".")
			default:
				return acl{}, false, errCode("InvalidArgument", "The grantee %q in %s is not id=, uri= or emailAddress=.", item, strings.ToLower(name))
			}
		}
	}
	if canned != "" {
		if given {
			return acl{}, false, errCode("InvalidRequest", "Specifying both Canned ACLs and Header Grants is not allowed")
		}
		a, err := cannedACL(canned)
		return a, err == nil, err
	}
	return a, given, nil
}

// aclFromBody reads an AccessControlPolicy document.
func aclFromBody(data []byte) (acl, error) {
	var p struct {
		XMLName xml.Name `xml:"AccessControlPolicy"`
		Grants  []struct {
			Grantee struct {
				Type  string `xml:"type,attr"`
				ID    string `xml:"ID"`
				URI   string `xml:"URI"`
				Email string `xml:"EmailAddress"`
			} `xml:"Grantee"`
			Permission string `xml:"Permission"`
		} `xml:"AccessControlList>Grant"`
	}
	if err := xml.Unmarshal(data, &p); err != nil {
		return acl{}, errCode("MalformedACLError", "")
	}
	var a acl
	for _, gr := range p.Grants {
		if !aclPerms[gr.Permission] {
			return acl{}, errCode("MalformedACLError", "The permission %q is not READ, WRITE, READ_ACP, WRITE_ACP or FULL_CONTROL.", gr.Permission)
		}
		switch ge := gr.Grantee; {
		case ge.Email != "" || ge.Type == "AmazonCustomerByEmail":
			return acl{}, errCode("NotImplemented", "Grants by e-mail address are not supported by flyfs: grant to a key (CanonicalUser, its id).")
		case ge.URI != "" || ge.Type == "Group":
			if ge.URI != groupAllUsers && ge.URI != groupAuthUsers {
				return acl{}, errCode("NotImplemented", "The group %q is not one flyfs has (AllUsers, AuthenticatedUsers); nothing was changed.", ge.URI)
			}
			a.Grants = append(a.Grants, aclGrant{Group: ge.URI, Perm: gr.Permission})
		case ge.ID != "":
			a.Grants = append(a.Grants, aclGrant{ID: ge.ID, Perm: gr.Permission})
		default:
			return acl{}, errCode("MalformedACLError", "A grant has no grantee.")
		}
	}
	return a, nil
}

// parseACLRecord reads user.s3.acl.
func parseACLRecord(v []byte) acl {
	if string(v) == "public-read" {
		a, _ := cannedACL("public-read")
		return a
	}
	var a acl
	if json.Unmarshal(v, &a) != nil {
		// Unreadable: no grant at all, the safe side.
		return acl{}
	}
	return a
}

// allows says whether the ACL grants perm to the caller (key id "" is
// anonymous); public says whether grants to the groups count.
func (a acl) allows(keyID, perm string, public bool) bool {
	for _, gr := range a.Grants {
		if gr.Perm != perm && gr.Perm != "FULL_CONTROL" {
			continue
		}
		switch {
		case gr.Group == groupAllUsers && public,
			gr.Group == groupAuthUsers && public && keyID != "",
			gr.ID != "" && gr.ID == keyID:
			return true
		}
	}
	return false
}

func (a acl) public() bool {
	for _, gr := range a.Grants {
		if gr.Group != "" {
			return true
		}
	}
	return false
}

// document is the ACL as Get*Acl answers it: the owner's FULL_CONTROL,
// then the grants.
func (a acl) document(ownerID string) accessControlPolicy {
	p := accessControlPolicy{NS: s3NS, Owner: owner{ID: ownerID, DisplayName: ownerID}}
	p.Grants = append(p.Grants, grant{Grantee: grantee{XMLNSXSI: xsiNS, Type: "CanonicalUser", ID: ownerID}, Permission: "FULL_CONTROL"})
	for _, gr := range a.Grants {
		ge := grantee{XMLNSXSI: xsiNS, Type: "CanonicalUser", ID: gr.ID}
		if gr.Group != "" {
			ge = grantee{XMLNSXSI: xsiNS, Type: "Group", URI: gr.Group}
		}
		p.Grants = append(p.Grants, grant{Grantee: ge, Permission: gr.Perm})
	}
	return p
}

// aclPermsOf is the permission an operation needs from a bucket's ACL and
// from an object's ("" : none grants it).
func aclPermsOf(op string) (bucketPerm, objectPerm string) {
	switch op {
	case "ListObjects", "ListObjectsV2", "ListObjectVersions", "ListMultipartUploads", "HeadBucket":
		return "READ", ""
	case "GetBucketAcl":
		return "READ_ACP", ""
	case "PutBucketAcl":
		return "WRITE_ACP", ""
	case "GetObject", "HeadObject":
		return "", "READ"
	case "GetObjectAcl":
		return "", "READ_ACP"
	case "PutObjectAcl":
		return "", "WRITE_ACP"
	case "PutObject", "DeleteObject", "CreateMultipartUpload", "UploadPart", "UploadPartCopy", "CompleteMultipartUpload",
		"AbortMultipartUpload", "ListParts", "CopyObject", "PostObject":
		return "WRITE", ""
	}
	return "", ""
}

// aclAllows says whether the bucket's or the object's ACL lets the caller
// make op.
func (g *Gateway) aclAllows(ctx context.Context, a *bucketAuth, rc *reqCtx, op, bucket, key string) bool {
	if a.enforced {
		return false
	}
	public := a.pab == nil || !a.pab.IgnorePublicAcls
	id := rc.ownerKeyID()
	bperm, operm := aclPermsOf(op)
	if operm != "" && key != "" {
		if oacl, ok := g.objectACL(ctx, bucket, key); ok {
			return oacl.allows(id, operm, public)
		}
		if operm != "READ" {
			return false
		}
		bperm = "READ" // an object without an ACL is read under its bucket's
	}
	return bperm != "" && a.acl.allows(id, bperm, public)
}

// objectACL is the object's own ACL (ok false: it has none, or there is
// no such object).
func (g *Gateway) objectACL(ctx context.Context, bucket, key string) (acl, bool) {
	o, err := parseKey(bucket, key)
	if err != nil {
		return acl{}, false
	}
	in, err := g.meta.Resolve(ctx, o.path(), true)
	if err != nil {
		return acl{}, false
	}
	v, err := g.meta.GetXattr(ctx, in.ID, xattrACL)
	if err != nil {
		return acl{}, false
	}
	return parseACLRecord(v), true
}

// requestACL is the ACL a write asks its object to have (ok false: none),
// refused when the bucket has ACLs disabled or blocks public ones.
func (g *Gateway) requestACL(ctx context.Context, h http.Header, bucket string) (acl, bool, error) {
	a, given, err := aclFromHeaders(h)
	if err != nil || !given {
		return acl{}, false, err
	}
	if err := g.checkACLAllowed(ctx, bucket, a); err != nil {
		return acl{}, false, err
	}
	return a, true, nil
}

// checkACLAllowed refuses an ACL the bucket's ownership controls or public
// access block do not let it have.
func (g *Gateway) checkACLAllowed(ctx context.Context, bucket string, a acl) error {
	ba, err := g.bucketAuthOf(ctx, bucket)
	if err != nil {
		return err
	}
	if ba.enforced && len(a.Grants) > 0 {
		return errCode("AccessControlListNotSupported", "The bucket does not allow ACLs (its ownership controls are BucketOwnerEnforced).")
	}
	if ba.pab != nil && ba.pab.BlockPublicAcls && a.public() {
		return errCode("AccessDenied", "The bucket's public access block (BlockPublicAcls) refuses a public ACL.")
	}
	return nil
}

// storeACL keeps a on ino. A bucket's empty ACL is removed (the owner's
// alone); an object's is kept, even empty: an object with an ACL of its
// own is not read under its bucket's grants.
func (g *Gateway) storeACL(ctx context.Context, ino uint64, a acl, object bool) error {
	if len(a.Grants) == 0 && !object {
		err := g.meta.RemoveXattr(ctx, ino, xattrACL)
		if errnoOf(err) == syscall.ENODATA {
			return nil
		}
		return err
	}
	v, _ := json.Marshal(a)
	if len(v) > maxObjectRecord {
		return errCode("InvalidArgument", "The ACL holds too many grants.")
	}
	return g.meta.SetXattr(ctx, ino, xattrACL, v, 0)
}

// aclOfRequest reads the ACL a Put*Acl request sets: its headers or its
// body, not both.
func aclOfRequest(r *http.Request, rc *reqCtx) (acl, error) {
	a, given, err := aclFromHeaders(r.Header)
	if err != nil {
		return acl{}, err
	}
	if !bodyEmpty(rc) {
		if given {
			return acl{}, errCode("UnexpectedContent", "This request does not support content: the ACL is in the headers or in the body, not both.")
		}
		data, err := readConfigBody(rc, maxXMLBody)
		if err != nil {
			return acl{}, err
		}
		return aclFromBody(data)
	}
	if !given {
		return acl{}, errCode("MissingSecurityHeader", "Your request was missing a required header: x-amz-acl, an x-amz-grant-* header or an AccessControlPolicy body.")
	}
	return a, nil
}

func (g *Gateway) getBucketACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	ba, err := g.bucketAuthOf(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	return writeXML(w, ba.acl.document(rc.ownerID()))
}

func (g *Gateway) putBucketACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	a, err := aclOfRequest(r, rc)
	if err != nil {
		return err
	}
	if err := g.checkACLAllowed(ctx, rc.bucket, a); err != nil {
		return err
	}
	if err := g.storeACL(ctx, in.ID, a, false); err != nil {
		return err
	}
	g.acache.drop(rc.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) getObjectACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, _, err := g.statObject(r.Context(), rc)
	if err != nil {
		return err
	}
	var a acl
	if v, err := g.meta.GetXattr(r.Context(), in.ID, xattrACL); err == nil {
		a = parseACLRecord(v)
	}
	return writeXML(w, a.document(rc.ownerID()))
}

func (g *Gateway) putObjectACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	in, _, err := g.statObject(ctx, rc)
	if err != nil {
		return err
	}
	a, err := aclOfRequest(r, rc)
	if err != nil {
		return err
	}
	if err := g.checkACLAllowed(ctx, rc.bucket, a); err != nil {
		return err
	}
	if err := g.storeACL(ctx, in.ID, a, true); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

type ownershipControls struct {
	XMLName xml.Name `xml:"OwnershipControls"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	Rules   []struct {
		ObjectOwnership string `xml:"ObjectOwnership"`
	} `xml:"Rule"`
}

func validOwnership(v string) bool {
	return v == "BucketOwnerEnforced" || v == "BucketOwnerPreferred" || v == "ObjectWriter"
}

func (g *Gateway) getBucketOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	v, err := g.meta.GetXattr(r.Context(), in.ID, xattrOwnership)
	if errnoOf(err) == syscall.ENODATA {
		return errCode("OwnershipControlsNotFoundError", "The bucket ownership controls were not found")
	}
	if err != nil {
		return err
	}
	oc := ownershipControls{NS: s3NS}
	oc.Rules = append(oc.Rules, struct {
		ObjectOwnership string `xml:"ObjectOwnership"`
	}{string(v)})
	return writeXML(w, oc)
}

func (g *Gateway) putBucketOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	var oc ownershipControls
	if err := decodeXML(rc.body, &oc); err != nil {
		return err
	}
	if len(oc.Rules) != 1 || !validOwnership(oc.Rules[0].ObjectOwnership) {
		return errCode("MalformedXML", "OwnershipControls has one Rule whose ObjectOwnership is BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter.")
	}
	if err := g.meta.SetXattr(r.Context(), in.ID, xattrOwnership, []byte(oc.Rules[0].ObjectOwnership), 0); err != nil {
		return err
	}
	g.acache.drop(rc.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) deleteBucketOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.removeBucketConfig(w, r, rc, xattrOwnership)
}
