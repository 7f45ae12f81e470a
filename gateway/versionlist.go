package gateway

import (
	"context"
	"encoding/xml"
	"math"
	"net/http"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// ListObjectVersions merges two ordered streams: the current versions (the
// walk of ListObjectsV2) and the namespace's records (noncurrent versions
// and delete markers), key by key, each key's current version first, then
// its records newest first, as S3 lists them.
//
// Markers: key-marker alone resumes after all of that key's versions;
// with version-id-marker, after that version of it. A version-id-marker
// that names no version of the key resumes after the whole key.

// deleteMarkerEntry is a DeleteMarker element of the listing.
type deleteMarkerEntry struct {
	XMLName      xml.Name `xml:"DeleteMarker"`
	Key          string   `xml:"Key"`
	VersionID    string   `xml:"VersionId"`
	IsLatest     bool     `xml:"IsLatest"`
	LastModified string   `xml:"LastModified"`
	Owner        *owner   `xml:"Owner,omitempty"`
}

// versionRow is one entry of the merged listing.
type versionRow struct {
	key     string
	cp      bool
	current bool
	in      metaapi.Inode         // current, or a noncurrent version's file
	rec     *metaapi.VersionEntry // a record
}

func (g *Gateway) listObjectVersions(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	prefix, delim, maxKeys, encode, err := listParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	keyMarker, vidMarker := q.Get("key-marker"), q.Get("version-id-marker")
	if vidMarker != "" {
		if keyMarker == "" {
			return errCode("InvalidArgument", "A version-id marker cannot be specified without a key marker.")
		}
		if err := checkVersionIDSyntax(vidMarker); err != nil {
			return err
		}
	}
	b, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	res := listVersionsResult{NS: s3NS, Name: rc.bucket, Prefix: encode(prefix), KeyMarker: encode(keyMarker), VersionIDMarker: vidMarker, MaxKeys: maxKeys}
	if delim != "" {
		res.Delimiter = encode(delim)
	}
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
	}
	if maxKeys == 0 {
		return writeXML(w, res)
	}
	l := &lister{g: g, ctx: ctx, bucket: rc.bucket, prefix: prefix, delim: delim, after: keyMarker, max: maxKeys}
	if err := l.run(); err != nil {
		return err
	}
	afterSeq, err := g.resumeSeq(ctx, b.ID, rc.bucket, keyMarker, vidMarker)
	if err != nil {
		return err
	}
	recs, err := g.meta.ListVersions(ctx, metaapi.ListVersionsReq{Bucket: b.ID, Prefix: prefix, Delimiter: delim,
		AfterKey: keyMarker, AfterSeq: afterSeq, Limit: maxKeys})
	if err != nil {
		return err
	}
	rows, truncated := mergeVersions(l.items, recs.Entries, maxKeys)
	truncated = truncated || l.truncated || recs.More
	res.IsTruncated = truncated
	if err := g.fillVersions(ctx, &res, rows, encode, keyMarker, vidMarker != ""); err != nil {
		return err
	}
	if truncated && len(rows) > 0 {
		last := rows[len(rows)-1]
		res.NextKeyMarker = encode(last.key)
		switch {
		case last.cp:
			res.NextVersionIDMarker = nullVersion // names no version of the prefix: resumes past it
		case last.current:
			res.NextVersionIDMarker = versionOfInode(last.in)
		default:
			res.NextVersionIDMarker = last.rec.ID
		}
	}
	return writeXML(w, res)
}

// resumeSeq turns the version-id marker into the namespace's resume point
// within keyMarker's records: all of them after its current version, those
// older than a record, none otherwise.
func (g *Gateway) resumeSeq(ctx context.Context, bucket uint64, bucketName, keyMarker, vidMarker string) (uint64, error) {
	if vidMarker == "" {
		return 0, nil
	}
	e, err := g.meta.GetVersion(ctx, bucket, keyMarker, vidMarker)
	switch errnoOf(err) {
	case 0:
		return e.Seq, nil
	case syscall.ENOENT, syscall.EINVAL, syscall.ENAMETOOLONG:
	default:
		return 0, err
	}
	o, err := parseKey(bucketName, keyMarker)
	if err != nil {
		return 0, nil
	}
	if in, _, err := g.statPath(ctx, o); err == nil && versionOfInode(in) == vidMarker {
		return math.MaxUint64, nil
	}
	return 0, nil
}

// mergeVersions interleaves the current versions and the records, taking
// up to max rows; truncated when rows were left.
func mergeVersions(cur []listItem, recs []metaapi.VersionEntry, max int) ([]versionRow, bool) {
	var rows []versionRow
	i, j := 0, 0
	lastCP := ""
	for len(rows) < max && (i < len(cur) || j < len(recs)) {
		var row versionRow
		switch {
		case j == len(recs) || (i < len(cur) && cur[i].key <= recs[j].Key):
			it := cur[i]
			i++
			row = versionRow{key: it.key, cp: it.cp, current: !it.cp, in: it.in}
		default:
			e := recs[j]
			j++
			row = versionRow{key: e.Key, cp: e.Prefix, rec: &e}
		}
		if row.cp {
			if row.key == lastCP {
				continue // both streams roll up into it
			}
			lastCP = row.key
		}
		rows = append(rows, row)
	}
	// A prefix both streams hold counts once, even at the page's edge.
	for i < len(cur) && cur[i].cp && cur[i].key == lastCP {
		i++
	}
	for j < len(recs) && recs[j].Prefix && recs[j].Key == lastCP {
		j++
	}
	return rows, i < len(cur) || j < len(recs)
}

// fillVersions renders rows: ETags and owners of the object versions, and
// which version of each key is the latest (its current one, else its
// newest record; none of a key the previous page began).
func (g *Gateway) fillVersions(ctx context.Context, res *listVersionsResult, rows []versionRow, encode func(string) string, keyMarker string, resumedInKey bool) error {
	tmp := &lister{g: g, ctx: ctx}
	for _, row := range rows {
		switch {
		case row.cp:
		case row.current:
			tmp.items = append(tmp.items, listItem{key: row.key, in: row.in})
		case !row.rec.DeleteMarker && row.rec.Inode != nil:
			tmp.items = append(tmp.items, listItem{key: row.key, in: *row.rec.Inode})
		}
	}
	objs, _ := tmp.objectInfos(true, encode)
	k := 0
	latestSeen := ""
	if resumedInKey {
		latestSeen = keyMarker
	}
	for _, row := range rows {
		if row.cp {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encode(row.key)})
			continue
		}
		latest := latestSeen != row.key
		latestSeen = row.key
		if row.current {
			o := objs[k]
			k++
			res.Entries = append(res.Entries, objectVersion{Key: o.Key, VersionID: versionOfInode(row.in), IsLatest: latest,
				LastModified: o.LastModified, ETag: o.ETag, Size: o.Size, StorageClass: o.StorageClass, Owner: o.Owner, ChecksumAlgorithm: o.ChecksumAlgorithm})
			continue
		}
		e := row.rec
		if e.DeleteMarker || e.Inode == nil {
			uid := "0"
			res.Entries = append(res.Entries, deleteMarkerEntry{Key: encode(e.Key), VersionID: e.ID, IsLatest: latest,
				LastModified: s3Time(time.Unix(0, e.Time)), Owner: &owner{ID: uid, DisplayName: uid}})
			continue
		}
		o := objs[k]
		k++
		res.Entries = append(res.Entries, objectVersion{Key: o.Key, VersionID: e.ID, IsLatest: latest,
			LastModified: o.LastModified, ETag: o.ETag, Size: o.Size, StorageClass: o.StorageClass, Owner: o.Owner, ChecksumAlgorithm: o.ChecksumAlgorithm})
	}
	return nil
}
