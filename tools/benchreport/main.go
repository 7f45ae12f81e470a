// Command benchreport makes docs/benchmarks.md: it starts `flyfs server`
// with a FUSE mount and the S3 gateway, runs `flyfs bench fs --json` on the
// flyfs mount, on a local directory and on go-fuse's loopback mount of a
// local directory, and `flyfs bench s3 --json` on the gateway, at several
// thread counts and concurrencies, then writes the reports, SVG plots and
// the page.
//
//	go build -o bin/flyfs ./cmd/flyfs
//	go run ./tools/benchreport --flyfs bin/flyfs
//	go run ./tools/benchreport --render   # redo the page from docs/benchmarks/index.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/bench"
)

type config struct {
	flyfs      string
	out        string
	workParent string
	keepWork   bool
	render     bool

	threads      int
	bigSize      bench.Size
	smallCount   int
	smallSize    bench.Size
	randDuration time.Duration
	readTotal    bench.Size
	threadCounts intList
	readLocal    bool
	passthrough  bool
	s3Conc       intList
	s3Objects    int
	s3Size       bench.Size
	cache        string
	disks        int
	replicas     int
}

// intList is a comma-separated list of positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want a comma-separated list of positive integers", v)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func main() {
	var c config
	c.bigSize, c.smallSize, c.readTotal, c.s3Size = 256<<20, 128<<10, 2<<30, 4<<20
	c.threadCounts, c.s3Conc = intList{1, 2, 4, 8, 16}, intList{1, 2, 4, 8, 16}
	f := flag.CommandLine
	f.StringVar(&c.flyfs, "flyfs", "", "the flyfs binary to run (build it with: go build -o bin/flyfs ./cmd/flyfs)")
	f.StringVar(&c.out, "out", "docs", "where benchmarks.md and benchmarks/ are written")
	f.StringVar(&c.workParent, "work-parent", "/var/tmp", "parent of the scratch directory (the disk measured as 'local'; not tmpfs)")
	f.BoolVar(&c.keepWork, "keep-work", false, "leave the scratch directory (server data and log) behind")
	f.BoolVar(&c.render, "render", false, "only redraw the page and plots from <out>/benchmarks/index.json")
	f.IntVar(&c.threads, "threads", 4, "threads of the whole-file-system comparison")
	f.Var(&c.bigSize, "big-size", "big file per thread in the whole-file-system comparison")
	f.IntVar(&c.smallCount, "small-count", 2000, "small files in the whole-file-system comparison")
	f.Var(&c.smallSize, "small-size", "size of each small file")
	f.DurationVar(&c.randDuration, "rand-duration", 5*time.Second, "length of each random 4 KiB read phase")
	f.Var(&c.readTotal, "read-total", "data read at each thread count of the read scaling (split into one file per thread)")
	f.Var(&c.threadCounts, "thread-counts", "thread counts of the FUSE read scaling")
	f.BoolVar(&c.readLocal, "read-local", true, "also run the read scaling on the local directory (a third line)")
	f.BoolVar(&c.passthrough, "passthrough", true, "also run the file-system comparison on a loopback with FUSE passthrough on (to show why the ceiling has it off)")
	f.Var(&c.s3Conc, "s3-concurrency", "concurrencies of the S3 GET scaling")
	f.IntVar(&c.s3Objects, "s3-objects", 384, "objects per S3 run")
	f.Var(&c.s3Size, "s3-size", "size of each S3 object")
	f.StringVar(&c.cache, "cache", "drop", "flyfs bench fs --cache mode (drop: cold all the way down, needs root)")
	f.IntVar(&c.disks, "disks", 1, "flyfs server --disks")
	f.IntVar(&c.replicas, "replicas", 1, "flyfs server --replicas")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if c.render {
		err = renderOnly(c.out)
	} else {
		err = run(ctx, c)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
	os.Exit(1)
}

func renderOnly(out string) error {
	ix, err := loadIndex(filepath.Join(out, "benchmarks"))
	if err != nil {
		return err
	}
	return writeOutputs(ix, out)
}

func (c *config) check() error {
	switch {
	case c.flyfs == "":
		return errors.New("--flyfs is required (build it with: go build -o bin/flyfs ./cmd/flyfs)")
	case c.threads < 1 || c.smallCount < 0 || c.s3Objects < 1:
		return errors.New("--threads and --s3-objects must be at least 1, --small-count at least 0")
	case c.bigSize < 1<<20 || c.readTotal < 1<<20 || c.s3Size < 1:
		return errors.New("--big-size and --read-total must be at least 1 MiB, --s3-size at least 1 byte")
	case c.randDuration <= 0:
		return errors.New("--rand-duration must be positive")
	case c.disks < 1 || c.replicas < 1 || c.replicas > c.disks:
		return errors.New("want 1 <= --replicas <= --disks")
	case len(c.threadCounts) == 0 && len(c.s3Conc) == 0:
		return errors.New("nothing to scale: --thread-counts and --s3-concurrency are both empty")
	}
	for _, t := range c.threadCounts {
		if int64(c.readTotal)/int64(t) < 1<<20 {
			return fmt.Errorf("--read-total %s over %d threads is under 1 MiB per thread", c.readTotal, t)
		}
	}
	if st, err := os.Stat(c.flyfs); err != nil {
		return fmt.Errorf("--flyfs: %w (build it with: go build -o bin/flyfs ./cmd/flyfs)", err)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("--flyfs %s is not an executable file", c.flyfs)
	}
	if os.Geteuid() != 0 {
		return errors.New("run as root: the FUSE mounts are direct mounts, and --cache drop writes /proc/sys/vm/drop_caches")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no FUSE on this machine: %w", err)
	}
	return nil
}

// reproduce is the command line of this run for the page: the flags that
// were set, except those that only say where scratch files go.
func reproduce() string {
	parts := []string{"go run ./tools/benchreport --flyfs bin/flyfs"}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "flyfs", "work-parent", "keep-work", "out", "render":
			return
		}
		parts = append(parts, fmt.Sprintf("--%s %s", f.Name, f.Value))
	})
	return strings.Join(parts, " ")
}

// runner runs benchmarks one at a time and records them.
type runner struct {
	ctx   context.Context
	bin   string
	dir   string // where reports go
	ix    *Index
	vars  *strings.Replacer // real paths and keys -> shell variables, for the page
	total int
	log   io.Writer
}

func (r *runner) bench(kind, target string, x int, file string, args ...string) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	args = append(args, "--json", "--progress", "never")
	n := len(r.ix.Runs) + 1
	fmt.Fprintf(r.log, "[%d/%d] %s %s x=%d: flyfs %s\n", n, r.total, kind, target, x, r.vars.Replace(shellJoin(args)))
	run := Run{Kind: kind, Target: target, X: x, File: file, Command: "flyfs " + r.vars.Replace(shellJoin(args)), LoadBefore: loadAvg()}
	cmd := exec.CommandContext(r.ctx, r.bin, args...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("flyfs %s: %v\n%s", run.Command, err, lastLines(errb.String(), 20))
	}
	run.LoadAfter = loadAvg()
	run.Report = new(bench.Report)
	if err := json.Unmarshal(out.Bytes(), run.Report); err != nil || len(run.Report.Phases) == 0 {
		return fmt.Errorf("%s: not a bench report (%v): %q", run.Command, err, lastLines(out.String(), 5))
	}
	// The report exactly as flyfs printed it.
	if err := os.WriteFile(filepath.Join(r.dir, file), out.Bytes(), 0o644); err != nil {
		return err
	}
	r.ix.Runs = append(r.ix.Runs, run)
	fmt.Fprintf(r.log, "      %s in %s (load %.1f -> %.1f)\n", headline(run.Report), time.Since(start).Round(100*time.Millisecond), run.LoadBefore, run.LoadAfter)
	return nil
}

// headline is a one-line digest of a report for the progress log.
func headline(r *bench.Report) string {
	var parts []string
	for _, p := range r.Phases {
		label, get := phaseMetric(p.Name)
		parts = append(parts, fmt.Sprintf("%s %s %s", p.Name, num(get(p)), label))
	}
	return strings.Join(parts, ", ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func run(ctx context.Context, c config) (err error) {
	if err := c.check(); err != nil {
		return err
	}
	bin, err := filepath.Abs(c.flyfs)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(c.workParent, "flyfs-benchreport-")
	if err != nil {
		return err
	}
	log := os.Stderr
	defer func() {
		if c.keepWork || err != nil {
			fmt.Fprintf(log, "benchreport: scratch directory kept: %s (server log: %s)\n", work, filepath.Join(work, "server.log"))
			return
		}
		if rerr := os.RemoveAll(work); rerr != nil {
			fmt.Fprintf(log, "benchreport: remove %s: %v\n", work, rerr)
		}
	}()
	outDir := filepath.Join(c.out, "benchmarks")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}

	ix := &Index{Started: time.Now().UTC().Truncate(time.Second), Commit: gitCommit(), Reproduce: reproduce()}
	ix.Settings = Settings{Threads: c.threads, BigSize: c.bigSize.String(), SmallCount: c.smallCount, SmallSize: c.smallSize.String(),
		RandDuration: c.randDuration.String(), ReadTotal: c.readTotal.String(), ThreadCounts: c.threadCounts, S3Conc: c.s3Conc,
		S3Objects: c.s3Objects, S3Size: c.s3Size.String(), Cache: c.cache, Disks: c.disks, Replicas: c.replicas}

	fmt.Fprintf(log, "benchreport: starting flyfs server in %s\n", work)
	srv, err := startServer(ctx, bin, work, c.disks, c.replicas, log)
	if err != nil {
		return err
	}
	defer srv.stop()
	loopLog, err := os.Create(filepath.Join(work, "loopback.log"))
	if err != nil {
		return err
	}
	defer loopLog.Close()
	loop, err := mountLoopback(filepath.Join(work, "loop-src"), filepath.Join(work, "loop"), loopLog, false)
	if err != nil {
		return err
	}
	defer loop.unmount()
	dirs := map[string]string{TargetFlyfs: srv.mount, TargetLocal: filepath.Join(work, "local"), TargetLoopback: loop.mnt}
	fsTargets := []string{TargetFlyfs, TargetLoopback, TargetLocal}
	if c.passthrough {
		pt, err := mountLoopback(filepath.Join(work, "pt-src"), filepath.Join(work, "pt"), loopLog, true)
		if err != nil {
			return err
		}
		defer pt.unmount()
		dirs[TargetPassthrough] = pt.mnt
		fsTargets = append(fsTargets, TargetPassthrough)
	}
	if err := os.MkdirAll(dirs[TargetLocal], 0o755); err != nil {
		return err
	}
	ix.Machine = describeMachine(filepath.Join(work, "data"), bin)
	ix.Settings.Server = slices.Clone(srv.args)
	for i, a := range ix.Settings.Server {
		if strings.HasPrefix(a, work) {
			ix.Settings.Server[i] = "$WORK" + strings.TrimPrefix(a, work)
		}
	}

	r := &runner{ctx: ctx, bin: bin, dir: outDir, ix: ix, log: log,
		vars: strings.NewReplacer(srv.mount, "$FLYFS_MNT", loop.mnt, "$LOOPBACK_MNT", dirs[TargetLocal], "$LOCAL", filepath.Join(work, "pt"), "$PASSTHROUGH_MNT",
			srv.s3, "$S3", srv.accessKey, "$AK", srv.secretKey, "$SK")}
	readTargets := []string{TargetFlyfs, TargetLoopback}
	if c.readLocal {
		readTargets = append(readTargets, TargetLocal)
	}
	r.total = len(fsTargets) + len(c.threadCounts)*len(readTargets) + len(c.s3Conc)
	common := []string{"--cache", c.cache, "--rand-duration", c.randDuration.String()}

	// 1. The whole of `bench fs`, same settings on each target.
	for _, t := range fsTargets {
		err := r.bench(KindFS, t, c.threads, fmt.Sprintf("fs-%s.json", t), append([]string{"bench", "fs", dirs[t],
			"--threads", fmt.Sprint(c.threads), "--big-size", c.bigSize.String(),
			"--small-count", fmt.Sprint(c.smallCount), "--small-size", c.smallSize.String()}, common...)...)
		if err != nil {
			return err
		}
	}
	// 2. Reads vs threads: the same total at every point, one file per
	// thread; targets interleaved so load changes hit them alike.
	for _, th := range c.threadCounts {
		per := bench.Size(int64(c.readTotal) / int64(th) &^ (1<<20 - 1)) // whole 1 MiB blocks
		for _, t := range readTargets {
			err := r.bench(KindRead, t, th, fmt.Sprintf("read-%s-t%02d.json", t, th), append([]string{"bench", "fs", dirs[t],
				"--threads", fmt.Sprint(th), "--big-size", per.String(), "--small-count", "0"}, common...)...)
			if err != nil {
				return err
			}
		}
	}
	// 3. S3 vs concurrency.
	for _, cc := range c.s3Conc {
		err := r.bench(KindS3, TargetGateway, cc, fmt.Sprintf("s3-c%02d.json", cc), "bench", "s3", "--endpoint", srv.s3,
			"--access-key", srv.accessKey, "--secret-key", srv.secretKey, "--bucket", "benchreport",
			"--objects", fmt.Sprint(c.s3Objects), "--size", c.s3Size.String(), "--concurrency", fmt.Sprint(cc), "--lists", "0")
		if err != nil {
			return err
		}
	}
	ix.Finished = time.Now().UTC().Truncate(time.Second)

	// Drop the previous run's files that this run did not write again.
	if old, err := loadIndexFiles(outDir); err == nil {
		for _, f := range old {
			if ix.fileIndex(f) < 0 {
				os.Remove(filepath.Join(outDir, f))
			}
		}
	}
	if err := writeJSON(filepath.Join(outDir, indexName), ix); err != nil {
		return err
	}
	if err := writeOutputs(ix, c.out); err != nil {
		return err
	}
	fmt.Fprintf(log, "benchreport: wrote %s and %s/ in %s\n", filepath.Join(c.out, "benchmarks.md"), outDir, time.Since(ix.Started).Round(time.Second))
	return nil
}

// loadIndexFiles lists the report files an existing index names.
func loadIndexFiles(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexName))
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, err
	}
	var files []string
	for _, r := range ix.Runs {
		if filepath.Base(r.File) == r.File && strings.HasSuffix(r.File, ".json") { // never outside the directory
			files = append(files, r.File)
		}
	}
	return files, nil
}

func (ix *Index) fileIndex(f string) int {
	return slices.IndexFunc(ix.Runs, func(r Run) bool { return r.File == f })
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
