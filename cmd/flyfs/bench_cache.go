package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/native"
)

// cacheBench is what `flyfs bench cache` measures.
type cacheBench struct {
	mount, local, plain string
	files               int
	size, small         int64
	smallCount, threads int
	keep                bool
}

func benchCacheCmd() *cobra.Command {
	b := cacheBench{files: 8, size: 256 << 20, small: 1 << 20, smallCount: 1000, threads: 8}
	size, small := bench.Size(b.size), bench.Size(b.small)
	cmd := &cobra.Command{
		Use:   "cache --mount DIR --local DIR",
		Short: "A mount's cache against the local disk: cold, second-epoch and warm-up reads",
		Long: `Measures a flyfs mount with a cache (--cache-dir, --cache-mem) the way a training
job meets it, caches of the machine dropped before every read (root):

  cold        --files files of --size read once through the mount, one reader
              (the read fills the cache); with --plain, the same files read
              through a mount of the same cluster without a cache, beside it
  second      the same files read again (the second epoch), beside the same
              bytes read straight from the local disk (--local, a directory on
              the disk the cache is on)
  warmup      flyfs warmup of --small-count files of --small-size, beside a
              plain sequential read (cat) of as many other such files through
              the mount

The files live in fresh subdirectories, removed at the end (--keep leaves them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b.size, b.small = int64(size), int64(small)
			return b.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&b.mount, "mount", "", "the flyfs mount with a cache")
	f.StringVar(&b.local, "local", "", "a directory on the local disk, the baseline of the second read")
	f.StringVar(&b.plain, "plain", "", "a flyfs mount of the same cluster without a cache, the baseline of the cold read (optional)")
	f.IntVar(&b.files, "files", b.files, "files in the big set")
	f.Var(&size, "size", "size of each file of the big set")
	f.IntVar(&b.smallCount, "small-count", b.smallCount, "files of the warm-up row (0: skip it)")
	f.Var(&small, "small-size", "size of each file of the warm-up row")
	f.IntVar(&b.threads, "threads", b.threads, "flyfs warmup --threads")
	f.BoolVar(&b.keep, "keep", false, "leave the files")
	cmd.MarkFlagRequired("mount")
	cmd.MarkFlagRequired("local")
	return cmd
}

func (b cacheBench) run(out io.Writer) error {
	if os.Getuid() != 0 {
		return fmt.Errorf("flyfs bench cache drops the machine's caches before each read, which needs root")
	}
	root, err := flyfsMountOf(b.mount)
	if err != nil {
		return err
	}
	tag := fmt.Sprintf("flyfs-bench-cache-%x", rand.Uint32())
	dirs := map[string]string{"mount": filepath.Join(b.mount, tag), "local": filepath.Join(b.local, tag)}
	if b.plain != "" {
		rel, err := filepath.Rel(root, dirs["mount"])
		if err != nil {
			return err
		}
		dirs["plain"] = filepath.Join(b.plain, rel) // the same directory, seen without a cache
	}
	for _, side := range []string{"mount", "local"} {
		if err := os.MkdirAll(dirs[side], 0o755); err != nil {
			return err
		}
		if !b.keep {
			defer os.RemoveAll(dirs[side])
		}
	}
	big := make([]string, b.files)
	for i := range big {
		big[i] = fmt.Sprintf("big%d", i)
		for _, side := range []string{"mount", "local"} {
			if err := writeRandom(filepath.Join(dirs[side], big[i]), b.size, uint64(i)); err != nil {
				return err
			}
		}
	}
	total := int64(b.files) * b.size
	readSet := func(dir string, names []string, n int64) (float64, error) {
		if err := dropCaches(); err != nil {
			return 0, err
		}
		start := time.Now()
		buf := make([]byte, 1<<20)
		for _, name := range names {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				return 0, err
			}
			for {
				if _, err := f.Read(buf); err == io.EOF {
					break
				} else if err != nil {
					f.Close()
					return 0, err
				}
			}
			f.Close()
		}
		return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ROW\tFLYFS\tBASELINE\tRATIO\n")
	row := func(name string, v float64, base string, bv float64) {
		ratio := ""
		if bv > 0 {
			ratio = fmt.Sprintf("%.2f×", v/bv)
		}
		fmt.Fprintf(tw, "%s\t%.0f MiB/s\t%s\t%s\n", name, v, base, ratio)
	}
	var plainCold float64
	if b.plain != "" {
		if plainCold, err = readSet(dirs["plain"], big, total); err != nil {
			return err
		}
	}
	cold, err := readSet(dirs["mount"], big, total)
	if err != nil {
		return err
	}
	if err := waitCacheSettled(root); err != nil {
		return err
	}
	second, err := readSet(dirs["mount"], big, total)
	if err != nil {
		return err
	}
	local, err := readSet(dirs["local"], big, total)
	if err != nil {
		return err
	}
	base := "-"
	if b.plain != "" {
		base = fmt.Sprintf("%.0f MiB/s without a cache", plainCold)
	}
	row(fmt.Sprintf("cold read, %d×%s", b.files, bench.FormatSize(b.size)), cold, base, plainCold)
	row("second read", second, fmt.Sprintf("%.0f MiB/s from the local disk", local), local)

	if b.smallCount > 0 {
		for _, set := range []string{"cat", "warm"} {
			d := filepath.Join(dirs["mount"], set)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			for i := range b.smallCount {
				if err := writeRandom(filepath.Join(d, fmt.Sprint(i)), b.small, uint64(1000+i)); err != nil {
					return err
				}
			}
		}
		names := make([]string, b.smallCount)
		for i := range names {
			names[i] = fmt.Sprintf("cat/%d", i)
		}
		smallTotal := int64(b.smallCount) * b.small
		cat, err := readSet(dirs["mount"], names, smallTotal)
		if err != nil {
			return err
		}
		if err := dropCaches(); err != nil {
			return err
		}
		sum, err := warmup([]string{filepath.Join(dirs["mount"], "warm")}, b.threads, io.Discard)
		if err != nil {
			return err
		}
		if sum.failed > 0 || sum.fetched != smallTotal {
			return fmt.Errorf("warmup: %s", sum)
		}
		row(fmt.Sprintf("warmup, %d×%s", b.smallCount, bench.FormatSize(b.small)), float64(smallTotal)/(1<<20)/sum.elapsed.Seconds(),
			fmt.Sprintf("%.0f MiB/s cat through the mount", cat), cat)
	}
	return tw.Flush()
}

// writeRandom writes n random bytes (from seed) to a new file, synced.
func writeRandom(path string, n int64, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		for i := 0; i < len(buf); i += 8 {
			v := r.Uint64()
			for j := 0; j < 8 && i+j < len(buf); j++ {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := f.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func dropCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
}

// waitCacheSettled waits until the mount's cache stops growing (its disk
// tier's writer has caught up with the read), for up to a minute.
func waitCacheSettled(root string) error {
	var last int64 = -1
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(root, native.VirtDir, "cache"))
		if err != nil {
			return fmt.Errorf("the mount's cache counters: %w", err)
		}
		var s client.CacheStats
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s.Memory.Capacity == 0 && s.Disk.Capacity == 0 {
			return fmt.Errorf("%s has no cache (mount it with --cache-mem or --cache-dir)", root)
		}
		if used := s.Memory.Used + s.Disk.Used; used == last {
			return nil
		} else {
			last = used
		}
	}
	return nil
}
