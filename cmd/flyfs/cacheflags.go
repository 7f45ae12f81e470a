package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/flyfs/flyfs/core/client"
)

// cacheFlags are the client cache's flags, on every command that reads
// file data for others (flyfs mount, flyfs server).
type cacheFlags struct {
	mem, dir, size string
	ttl            time.Duration
}

func (c *cacheFlags) add(f *pflag.FlagSet) {
	f.StringVar(&c.mem, "cache-mem", "0", "keep up to this much file data read here in memory (e.g. 512MiB, 4GiB; 0: no cache). Blocks are keyed by the file's version, so an open after a change anywhere in the cluster reads afresh")
	f.StringVar(&c.dir, "cache-dir", "", "also keep file data read here in this local directory (a local NVMe, say), kept across remounts; needs --cache-size")
	f.StringVar(&c.size, "cache-size", "", "the most --cache-dir may hold (e.g. 100GiB)")
	f.DurationVar(&c.ttl, "cache-ttl", 0, "read cached data older than this afresh (e.g. 24h; 0: no limit)")
}

// config turns the flags into the client's cache config.
func (c *cacheFlags) config() (client.CacheConfig, error) {
	var cfg client.CacheConfig
	var err error
	if cfg.Memory, err = parseSize("--cache-mem", c.mem); err != nil {
		return cfg, err
	}
	if cfg.DiskSize, err = parseSize("--cache-size", c.size); err != nil {
		return cfg, err
	}
	switch {
	case c.dir != "" && cfg.DiskSize == 0:
		return cfg, fmt.Errorf("--cache-dir %s needs --cache-size (the most it may hold, e.g. 100GiB)", c.dir)
	case c.dir == "" && cfg.DiskSize > 0:
		return cfg, fmt.Errorf("--cache-size needs --cache-dir (the local directory to cache in)")
	case c.ttl < 0:
		return cfg, fmt.Errorf("--cache-ttl %s: give a positive duration, or 0 for no limit", c.ttl)
	}
	cfg.Dir, cfg.TTL = c.dir, c.ttl
	return cfg, nil
}

// apply sets fs's cache from the flags and returns the line saying what it
// is ("" for none).
func (c *cacheFlags) apply(ctx context.Context, fs *client.FS, cfg client.CacheConfig) (string, error) {
	if err := fs.SetCache(ctx, cfg); err != nil {
		return "", err
	}
	var tiers []string
	if cfg.Memory > 0 {
		tiers = append(tiers, humanize.IBytes(uint64(cfg.Memory))+" of memory")
	}
	if cfg.Dir != "" {
		tiers = append(tiers, fmt.Sprintf("%s in %s", humanize.IBytes(uint64(cfg.DiskSize)), cfg.Dir))
	}
	if len(tiers) == 0 {
		return "", nil
	}
	line := "cache of file data read here: " + strings.Join(tiers, ", then ")
	if cfg.TTL > 0 {
		line += fmt.Sprintf("; read afresh after %s", cfg.TTL)
	}
	return line, nil
}

// parseSize turns a size flag into bytes; empty is 0.
func parseSize(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a size: give one such as 512MiB or 4GiB, or 0 for none", flag, s)
	}
	if n > 1<<50 {
		return 0, fmt.Errorf("%s %q is larger than any memory or disk", flag, s)
	}
	return int64(n), nil
}
