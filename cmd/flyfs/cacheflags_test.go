package main

import (
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0"},
		{in: ""},
		{in: "512MiB", want: 512 << 20},
		{in: "4GiB", want: 4 << 30},
		{in: "1G", want: 1e9},
		{in: "lots", bad: true},
		{in: "-1GiB", bad: true},
		{in: "2PiB", bad: true},
	} {
		got, err := parseSize("--cache-mem", tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestCacheFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags cacheFlags
		want  client.CacheConfig
		bad   bool
	}{
		{name: "none", flags: cacheFlags{mem: "0"}},
		{name: "memory", flags: cacheFlags{mem: "1GiB"}, want: client.CacheConfig{Memory: 1 << 30}},
		{name: "both tiers and a TTL", flags: cacheFlags{mem: "1GiB", dir: "/nvme/c", size: "100GiB", ttl: time.Hour},
			want: client.CacheConfig{Memory: 1 << 30, Dir: "/nvme/c", DiskSize: 100 << 30, TTL: time.Hour}},
		{name: "a directory without a size", flags: cacheFlags{dir: "/nvme/c"}, bad: true},
		{name: "a size without a directory", flags: cacheFlags{size: "1GiB"}, bad: true},
		{name: "a negative TTL", flags: cacheFlags{ttl: -time.Second}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.flags.config()
			if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}
