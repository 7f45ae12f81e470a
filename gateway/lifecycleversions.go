package gateway

import (
	"context"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Lifecycle of versions: NoncurrentVersionExpiration removes a noncurrent
// version NoncurrentDays after it stopped being current (the first
// midnight UTC at least that long after), keeping the NewerNoncurrentVersions
// newest noncurrent versions of its key whatever their age;
// ExpiredObjectDeleteMarker removes a delete marker that is all a key has
// left (no current version, no noncurrent one). The decisions are pure
// (noncurrentExpiresAt, expiredVersions); expireVersions applies them.

// noncurrentExpiresAt is when the rule removes a version that stopped
// being current at since.
func (r *lifecycleRule) noncurrentExpiresAt(since time.Time) (time.Time, bool) {
	n := r.NoncurrentVersionExpiration
	if r.Status != "Enabled" || n == nil || n.NoncurrentDays == nil {
		return time.Time{}, false
	}
	return nextMidnight(since.Add(time.Duration(*n.NoncurrentDays) * 24 * time.Hour)), true
}

// expiresMarkers reports whether the rule removes expired object delete
// markers.
func (r *lifecycleRule) expiresMarkers() bool {
	e := r.Expiration
	return r.Status == "Enabled" && e != nil && e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker
}

// keyVersion is one record of a key as the rules see it.
type keyVersion struct {
	id     string
	marker bool
	since  time.Time       // stopped being current (a marker: made)
	obj    lifecycleObject // an object version's key, size, time and tags
}

// expiredVersions returns the ids of key's records (newest first) the rule
// removes at now; hasCurrent says whether the key has a current version.
func (r *lifecycleRule) expiredVersions(recs []keyVersion, hasCurrent bool, now time.Time) []string {
	var out []string
	keep := 0
	if n := r.NoncurrentVersionExpiration; n != nil && n.NewerNoncurrentVersions != nil {
		keep = *n.NewerNoncurrentVersions
	}
	objects, seen := 0, 0
	for _, v := range recs {
		if v.marker {
			continue
		}
		seen++
		at, ok := r.noncurrentExpiresAt(v.since)
		if !ok || seen <= keep || now.Before(at) || !r.matches(v.obj) {
			objects++
			continue
		}
		out = append(out, v.id)
	}
	if r.expiresMarkers() && !hasCurrent && objects == 0 {
		for _, v := range recs {
			if v.marker && r.matches(lifecycleObject{key: v.obj.key}) {
				out = append(out, v.id)
			}
		}
	}
	return out
}

// expireVersions applies the rule's version actions to bucket.
func (g *Gateway) expireVersions(ctx context.Context, bucket string, rule *lifecycleRule, now time.Time, run *LifecycleRun) error {
	if _, ok := rule.noncurrentExpiresAt(now); !ok && !rule.expiresMarkers() {
		return nil
	}
	b, err := g.bucketInode(ctx, bucket)
	if err != nil {
		if toAPIError(err).Code == "NoSuchBucket" {
			return nil
		}
		return err
	}
	var group []metaapi.VersionEntry
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		key := group[0].Key
		recs := make([]keyVersion, 0, len(group))
		for _, e := range group {
			v := keyVersion{id: e.ID, marker: e.DeleteMarker || e.Inode == nil, since: time.Unix(0, e.Time), obj: lifecycleObject{key: key}}
			if !v.marker {
				in := *e.Inode
				v.obj = lifecycleObject{key: key, size: int64(in.Length), modified: time.Unix(0, in.Mtime),
					tags: func() []tag { t, _ := g.loadTags(ctx, in.ID); return t }}
			}
			recs = append(recs, v)
		}
		group = group[:0]
		hasCurrent := false
		if o, err := parseKey(bucket, key); err == nil {
			_, _, serr := g.statPath(ctx, o)
			hasCurrent = serr == nil
		}
		for _, id := range rule.expiredVersions(recs, hasCurrent, now) {
			res, err := g.meta.DeleteVersion(ctx, metaapi.DeleteVersionReq{Bucket: b.ID, Key: key, ID: id, PruneImplicit: true})
			switch {
			case err == nil && res.DeleteMarker:
				run.Markers++
				g.metrics.lifecycle.WithLabelValues("marker").Inc()
			case err == nil:
				run.Noncurrent++
				g.metrics.lifecycle.WithLabelValues("noncurrent").Inc()
			case errnoOf(err) == syscall.ENOENT, errnoOf(err) == syscall.EPERM: // gone, or under object lock
			case ctx.Err() != nil:
				return ctx.Err()
			default:
				run.Failures++
			}
		}
		return nil
	}
	req := metaapi.ListVersionsReq{Bucket: b.ID, Prefix: rule.prefix(), Limit: metaapi.MaxListVersions}
	for {
		res, err := g.meta.ListVersions(ctx, req)
		if err != nil {
			return err
		}
		for _, e := range res.Entries {
			if len(group) > 0 && group[0].Key != e.Key {
				if err := flush(); err != nil {
					return err
				}
			}
			group = append(group, e)
		}
		if !res.More || len(res.Entries) == 0 {
			return flush()
		}
		last := res.Entries[len(res.Entries)-1]
		req.AfterKey, req.AfterSeq = last.Key, last.Seq
	}
}
