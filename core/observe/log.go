package observe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// ParseLevel reads a --log-level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// NewLogger builds the logger a role logs through: records at level and
// above, to w, as text (key=value) or json (one object a line).
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// Demote returns a handler that logs records whose message starts with one
// of prefixes at debug level instead of their own: a library's line per
// request that it logs at info (go-fuse's "trySplice" through a log.Logger).
func Demote(h slog.Handler, prefixes ...string) slog.Handler {
	return &demoting{h: h, prefixes: prefixes}
}

type demoting struct {
	h        slog.Handler
	prefixes []string
}

func (d *demoting) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d *demoting) Handle(ctx context.Context, r slog.Record) error {
	for _, p := range d.prefixes {
		if strings.HasPrefix(r.Message, p) && r.Level > slog.LevelDebug {
			if !d.h.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			r.Level = slog.LevelDebug
			break
		}
	}
	return d.h.Handle(ctx, r)
}

func (d *demoting) WithAttrs(as []slog.Attr) slog.Handler {
	return &demoting{h: d.h.WithAttrs(as), prefixes: d.prefixes}
}

func (d *demoting) WithGroup(name string) slog.Handler {
	return &demoting{h: d.h.WithGroup(name), prefixes: d.prefixes}
}
