package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
)

// cacheMemUsage is the help of --cache-mem on every command that has it.
const cacheMemUsage = "keep up to this much file data read here in memory (e.g. 512MiB, 4GiB; 0: no cache). Blocks are keyed by the file's version, so an open after a change anywhere in the cluster reads afresh"

func addCacheMemFlag(f *pflag.FlagSet, dst *string) {
	f.StringVar(dst, "cache-mem", "0", cacheMemUsage)
}

// parseCacheMem turns --cache-mem into bytes; empty is no cache.
func parseCacheMem(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("--cache-mem %q is not a size: give one such as 512MiB or 4GiB, or 0 for no cache", s)
	}
	if n > 1<<50 {
		return 0, fmt.Errorf("--cache-mem %q is larger than any memory", s)
	}
	return int64(n), nil
}
