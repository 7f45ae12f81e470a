package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// logError logs a request's S3 error with its request id, the id the
// error body's RequestId and the x-amz-request-id header carry, so a
// client's report leads to the line. A server error (5xx) is the
// gateway's or the cluster's failure: warn, at most errLogBurst lines in a
// row and errLogRate a second after that (the rest at debug, counted in the
// next warn's suppressed). A client error (4xx: a missing key, a bad
// signature, a refused precondition) is the request's: debug. Nothing is
// logged at info per request.
func (g *Gateway) logError(r *http.Request, rc *reqCtx, ae *APIError, err error) {
	if ae.Code == "NotModified" {
		return // a conditional GET's answer, not an error
	}
	level := slog.LevelDebug
	var suppressed int64
	if ae.Status >= 500 {
		var ok bool
		if ok, suppressed = g.errLog.allow(time.Now()); ok {
			level = slog.LevelWarn
		}
	}
	ctx := context.Background()
	if !g.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("request_id", rc.id), slog.String("op", rc.op), slog.Int("status", ae.Status),
		slog.String("code", ae.Code), slog.String("method", r.Method)}
	if rc.bucket != "" {
		attrs = append(attrs, slog.String("bucket", rc.bucket))
	}
	if rc.object != "" {
		attrs = append(attrs, slog.String("key", rc.object))
	}
	if rc.key != nil {
		attrs = append(attrs, slog.String("access_key", rc.key.ID))
	}
	attrs = append(attrs, slog.String("remote", r.RemoteAddr), slog.String("err", err.Error()))
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	g.log.LogAttrs(ctx, level, "s3 gateway: request failed", attrs...)
}

const (
	errLogBurst = 20 // warn lines let through in a row
	errLogRate  = 5  // and then a second
)

// errLimiter bounds the warn lines of server errors, so that a storm of
// them (a cluster that stopped answering, a full disk under a busy
// uploader) cannot flood the log; it counts what it held back.
type errLimiter struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int64
}

// allow reports whether a line may go out at now, and how many were held
// back since the previous one that did.
func (l *errLimiter) allow(now time.Time) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = errLogBurst
	} else {
		l.tokens = min(errLogBurst, l.tokens+now.Sub(l.last).Seconds()*errLogRate)
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	return true, n
}
