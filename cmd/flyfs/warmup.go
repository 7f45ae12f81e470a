package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flyfs/flyfs/posix/native"
)

func warmupCmd() *cobra.Command {
	var fromFile string
	var threads int
	cmd := &cobra.Command{
		Use:   "warmup PATH... [--from-file LIST]",
		Short: "Fill a mount's cache with files or trees before they are read",
		Long: `Fill the cache of the flyfs mount the paths are on (its --cache-mem and
--cache-dir) with the files named and every file below the directories named,
so that the next reads of them (a training job's next epoch) are served from the
cache. --from-file reads more paths from a file, one per line ('-': standard
input). The mount does the fetching (through its native API), so nothing is
copied through this process. A summary says how many files and bytes were
warmed, at what rate, and how much was cached already.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append([]string(nil), args...)
			if fromFile != "" {
				more, err := readPathList(fromFile, cmd.InOrStdin())
				if err != nil {
					return err
				}
				paths = append(paths, more...)
			}
			if len(paths) == 0 {
				return fmt.Errorf("name the files or directories to warm (or --from-file LIST)")
			}
			if threads < 1 || threads > 1024 {
				return fmt.Errorf("--threads %d: want 1..1024", threads)
			}
			progress := io.Discard
			if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				progress = f
			}
			sum, err := warmup(paths, threads, progress)
			if err == nil || sum.files+sum.failed > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), sum)
			}
			if err == nil && sum.failed > 0 {
				err = fmt.Errorf("%d of %d files could not be warmed", sum.failed, sum.files+sum.failed)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&fromFile, "from-file", "", "also warm the paths listed in this file, one per line ('-': standard input)")
	cmd.Flags().IntVar(&threads, "threads", 8, "pieces of files (up to 64 MiB each) fetched at once")
	return cmd
}

// readPathList reads one path per line, skipping blank lines.
func readPathList(name string, stdin io.Reader) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--from-file: %w", err)
	}
	return out, nil
}

// flyfsMountOf returns the root of the flyfs mount p is on: the topmost
// directory above it on the same device, which must serve the mount's
// hidden directory.
func flyfsMountOf(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	dir := abs
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		dir = filepath.Dir(abs)
	}
	for dir != "/" {
		var up syscall.Stat_t
		if err := syscall.Stat(filepath.Dir(dir), &up); err != nil || up.Dev != st.Dev {
			break
		}
		dir = filepath.Dir(dir)
	}
	if fi, err := os.Lstat(filepath.Join(dir, native.VirtDir)); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not on a flyfs mount", p)
	}
	return dir, nil
}

// warmFile is a file being warmed: open through the mount while its pieces
// are out.
type warmFile struct {
	path    string
	f       *os.File
	nf      native.File
	size    int64
	pending int
	err     error
}

type warmSummary struct {
	files, failed  int
	bytes, fetched int64
	elapsed        time.Duration
	errs           []string
}

func (s warmSummary) String() string {
	rate := "-"
	if s.elapsed > 0 {
		rate = humanize.IBytes(uint64(float64(s.bytes)/s.elapsed.Seconds())) + "/s"
	}
	line := fmt.Sprintf("warmed %d files, %s in %s (%s): %s fetched, %s already cached",
		s.files, humanize.IBytes(uint64(s.bytes)), s.elapsed.Round(time.Millisecond), rate,
		humanize.IBytes(uint64(s.fetched)), humanize.IBytes(uint64(s.bytes-s.fetched)))
	if s.failed > 0 {
		line += fmt.Sprintf("; %d failed:\n  %s", s.failed, strings.Join(s.errs, "\n  "))
	}
	return line
}

// piece is the most one prefetch asks for (the ring's largest IO).
const piece = 64 << 20

// warmup prefetches every file under paths through the native ring of
// their mount, threads pieces at a time.
func warmup(paths []string, threads int, progress io.Writer) (warmSummary, error) {
	var sum warmSummary
	start := time.Now()
	mount := ""
	type entry struct {
		path string
		size int64
	}
	var todo []entry
	var total int64
	fail := func(path string, err error) {
		sum.failed++
		if len(sum.errs) < 10 {
			sum.errs = append(sum.errs, fmt.Sprintf("%s: %v", path, err))
		}
	}
	for _, p := range paths {
		m, err := flyfsMountOf(p)
		if err != nil {
			return sum, err
		}
		if mount == "" {
			mount = m
		} else if m != mount {
			return sum, fmt.Errorf("%s is on the mount %s, not %s: warm one mount at a time", p, m, mount)
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				fail(path, err)
				return nil
			}
			if d.IsDir() && d.Name() == native.VirtDir && filepath.Dir(path) == mount {
				return fs.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				fail(path, err)
				return nil
			}
			todo = append(todo, entry{path, info.Size()})
			total += info.Size()
			return nil
		})
		if err != nil {
			return sum, err
		}
	}
	ring, err := native.NewRing(mount, 2*threads, threads)
	if err != nil {
		return sum, fmt.Errorf("the native API of %s: %w", mount, err)
	}
	defer ring.Close()
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(progress), progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("warming"), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
	defer bar.Finish()

	files := map[uint64]*warmFile{} // by userdata
	var next uint64
	inFlight := 0
	cq := make([]native.Completion, 2*threads)
	reap := func(want int) error {
		n, err := ring.Wait(cq, want, 0)
		if err != nil {
			return err
		}
		for _, c := range cq[:n] {
			inFlight--
			w := files[c.Userdata>>32]
			w.pending--
			if c.Result < 0 {
				if w.err == nil {
					w.err = syscall.Errno(-c.Result)
				}
			} else {
				sum.fetched += c.Result
			}
			if w.pending == 0 {
				w.f.Close()
				delete(files, c.Userdata>>32)
				if w.err != nil {
					if errors.Is(w.err, syscall.EOPNOTSUPP) {
						return fmt.Errorf("the mount at %s has no cache to warm (mount it with --cache-mem or --cache-dir)", mount)
					}
					fail(w.path, w.err)
				} else {
					sum.files++
					sum.bytes += w.size
					bar.Add64(w.size)
				}
			}
		}
		return nil
	}
	for _, e := range todo {
		f, err := os.Open(e.path)
		if err != nil {
			fail(e.path, err)
			continue
		}
		nf, err := native.FileOf(mount, f)
		if err != nil {
			f.Close()
			fail(e.path, err)
			continue
		}
		id := next
		next++
		w := &warmFile{path: e.path, f: f, nf: nf, size: e.size}
		files[id] = w
		pieces := max(1, (e.size+piece-1)/piece)
		w.pending = int(pieces)
		for i := int64(0); i < pieces; i++ {
			for inFlight >= threads {
				if err := reap(1); err != nil {
					return sum, err
				}
			}
			if err := ring.PrepPrefetch(nf, i*piece, piece, id<<32|uint64(i)); err != nil {
				return sum, err
			}
			inFlight++
			ring.Submit()
		}
	}
	for inFlight > 0 {
		if err := reap(1); err != nil {
			return sum, err
		}
	}
	sum.elapsed = time.Since(start)
	return sum, nil
}
