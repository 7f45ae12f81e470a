package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/flyfs/flyfs/storaged/engine"
)

const diskFaultsHelp = "fault drills: a file naming data-file I/O errors to inject into every disk, one \"<read|write|sync> <EIO|ENOSPC|EROFS>\" per line, re-read every 100 ms (empty or missing: none)"

// followDiskFaults keeps f in step with the fault spec in path until ctx
// ends. A spec that does not parse leaves the faults as they were.
func followDiskFaults(ctx context.Context, path string, f *engine.Faults, log *slog.Logger) {
	last := ""
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b, err = nil, nil
		case err != nil:
			log.Warn("disk faults file unreadable", "path", path, "err", err)
		}
		if text := string(b); err == nil && text != last {
			if spec, perr := engine.ParseFaults(text); perr != nil {
				log.Warn("disk faults file does not parse; faults unchanged", "path", path, "err", perr)
			} else {
				f.Set(spec)
				if len(spec) == 0 {
					log.Warn("disk faults healed", "path", path)
				} else {
					log.Warn("disk faults injected", "path", path, "faults", len(spec), "spec", text)
				}
			}
			last = text
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
