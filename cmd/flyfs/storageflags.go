package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/flyfs/flyfs/storaged/engine"
)

// storageDurability is the storage service's write-path settings that
// flyfs storaged and flyfs server share.
type storageDurability struct {
	syncWindow time.Duration
	inlineMax  string
}

func (o *storageDurability) addFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.syncWindow, "sync-window", 100*time.Millisecond, "data written through a mount is acknowledged before its metadata write is synced (its block's bytes are synced first) and durable within this window or at fsync(2), as on a local file system; S3 writes are durable when acknowledged (0: every write durable when acknowledged)")
	f.StringVar(&o.inlineMax, "inline-max", "16KiB", "chunks of at most this size keep their bytes in the disk's metadata store: a small file's write is one metadata write, without a data-file write or fdatasync (0: none; at most 64KiB)")
}

// inline returns --inline-max as storaged.Config.InlineMax takes it.
func (o *storageDurability) inline() (int, error) {
	n, err := parseSize("--inline-max", o.inlineMax)
	if err != nil {
		return 0, err
	}
	switch {
	case n == 0:
		return -1, nil
	case n > engine.MaxInline:
		return 0, fmt.Errorf("--inline-max %s: at most 64KiB", o.inlineMax)
	}
	return int(n), nil
}
