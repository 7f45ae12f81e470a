package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The lifecycle worker: every LifecycleInterval each gateway walks the
// buckets that have rules and removes what they expire. A removal is
// conditional on the file being the inode and generation the walk saw
// (IfIno/IfGen), so an object overwritten since is not removed in its
// place, and gateways running the same pass at once remove each object
// once.

// DefaultLifecycleInterval is how often the worker runs by default.
const DefaultLifecycleInterval = time.Hour

// LifecycleRun is what one pass did.
type LifecycleRun struct {
	Buckets    int // buckets with rules
	Expired    int // objects removed (in a versioned bucket: delete markers put)
	Noncurrent int // noncurrent versions removed
	Markers    int // expired object delete markers removed
	Aborted    int // multipart uploads aborted
	Failures   int // removals that failed (retried on the next pass)
}

func (g *Gateway) runLifecycle(interval time.Duration) {
	defer g.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		go func() {
			select {
			case <-g.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		run, err := g.RunLifecycle(ctx, g.now())
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			g.log.Warn("s3 gateway: lifecycle pass stopped", "err", err, "expired", run.Expired, "aborted", run.Aborted)
		} else if run.Failures > 0 {
			g.log.Warn("s3 gateway: lifecycle removals failed; retried on the next pass", "failures", run.Failures)
		}
	}
}

// RunLifecycle makes one pass of every bucket's rules as of now (a
// parameter: tests pass a later time instead of waiting days).
func (g *Gateway) RunLifecycle(ctx context.Context, now time.Time) (LifecycleRun, error) {
	var run LifecycleRun
	withRules := map[string][]lifecycleRule{}
	after := ""
	for {
		ents, more, err := g.meta.ReadDir(ctx, g.rootIno, after, 1000, false)
		if err != nil {
			return run, err
		}
		for _, e := range ents {
			after = e.Name
			if e.Name == stagingRoot || e.Type != metaapi.TypeDir {
				continue
			}
			v, err := g.meta.GetXattr(ctx, e.Ino, xattrLifecycle)
			switch errnoOf(err) {
			case 0:
			case syscall.ENODATA, syscall.ENOENT:
				continue
			default:
				return run, err
			}
			var rules []lifecycleRule
			if err := json.Unmarshal(v, &rules); err != nil {
				g.log.Warn("s3 gateway: a stored lifecycle configuration does not parse; its bucket is skipped", "bucket", e.Name, "err", err)
				continue
			}
			withRules[e.Name] = rules
		}
		if !more || len(ents) == 0 {
			break
		}
	}
	run.Buckets = len(withRules)
	for bucket, rules := range withRules {
		for i := range rules {
			if err := g.expireRule(ctx, bucket, &rules[i], now, &run); err != nil {
				return run, err
			}
			if err := g.expireVersions(ctx, bucket, &rules[i], now, &run); err != nil {
				return run, err
			}
		}
	}
	return run, g.abortUploads(ctx, withRules, now, &run)
}

// expireRule removes the objects of bucket that rule expires at now.
func (g *Gateway) expireRule(ctx context.Context, bucket string, rule *lifecycleRule, now time.Time, run *LifecycleRun) error {
	if _, ok := rule.expiresAt(now); !ok {
		return nil
	}
	l := &lister{g: g, ctx: ctx, bucket: bucket, prefix: rule.prefix(), max: 1000}
	for {
		l.items, l.truncated, l.lastCP = nil, false, ""
		if err := l.run(); err != nil {
			if toAPIError(err).Code == "NoSuchBucket" {
				return nil
			}
			return err
		}
		for _, it := range l.items {
			l.after = it.key
			if it.cp || it.in.Type != metaapi.TypeFile {
				continue // directory markers are left to their directories
			}
			in := it.in
			o := lifecycleObject{key: it.key, size: int64(in.Length), modified: time.Unix(0, in.Mtime),
				tags: func() []tag { t, _ := g.loadTags(ctx, in.ID); return t }}
			at, _ := rule.expiresAt(o.modified)
			if now.Before(at) || !rule.matches(o) {
				continue
			}
			switch err := g.expireObject(ctx, bucket, it.key, in); {
			case err == nil:
				run.Expired++
				g.metrics.lifecycle.WithLabelValues("expired").Inc()
			case ctx.Err() != nil:
				return ctx.Err()
			default:
				run.Failures++
			}
		}
		if !l.truncated {
			return nil
		}
	}
}

// expireObject removes the object if it is still the inode and generation
// seen (else it changed since, and stays).
func (g *Gateway) expireObject(ctx context.Context, bucket, key string, in metaapi.Inode) error {
	o, err := parseKey(bucket, key)
	if err != nil {
		return err
	}
	parent, err := g.meta.Resolve(ctx, o.parentPath(), true)
	if err != nil {
		if errnoOf(err) == syscall.ENOENT {
			return nil
		}
		return err
	}
	err = g.meta.Unlink(ctx, metaapi.RemoveReq{Parent: parent.ID, Name: o.name(), IfIno: in.ID, IfGen: in.Gen, PruneImplicit: true})
	switch errnoOf(err) {
	case 0, syscall.ENOENT, syscall.ECANCELED:
		return nil
	}
	return err
}

// abortUploads aborts the multipart uploads the buckets' rules give up on.
func (g *Gateway) abortUploads(ctx context.Context, withRules map[string][]lifecycleRule, now time.Time, run *LifecycleRun) error {
	due := false
	for _, rules := range withRules {
		for i := range rules {
			_, ok := rules[i].abortsAt(now)
			due = due || ok
		}
	}
	if !due {
		return nil
	}
	return g.eachUpload(ctx, func(id string, rec uploadRecord) error {
		for i := range withRules[rec.Bucket] {
			rule := &withRules[rec.Bucket][i]
			at, ok := rule.abortsAt(rec.Initiated)
			if !ok || now.Before(at) || !rule.matches(lifecycleObject{key: rec.Key}) {
				continue
			}
			if err := g.meta.RemoveAll(ctx, g.uploadsIno, id); err != nil && errnoOf(err) != syscall.ENOENT {
				run.Failures++
			} else {
				run.Aborted++
				g.metrics.lifecycle.WithLabelValues("aborted").Inc()
			}
			break
		}
		return nil
	})
}
