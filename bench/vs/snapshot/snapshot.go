// Package snapshot measures directory snapshots and shared-chunk copies
// next to copying the bytes: a snapshot of a tree of small files and of one
// of large files (its time must not depend on the file sizes), a cp -r of
// the large tree through core/client (what a copy costs without shared
// chunks), and a snapshot of a wide tree of sparse files (how many files
// one snapshot transaction holds). `flyfs bench snapshot` prints the table.
package snapshot

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
)

// Config sizes the run; zero values take the defaults.
type Config struct {
	Dir        string // scratch directory (default: a temporary one)
	Files      int    // files of each tree (2,000)
	SmallBytes int    // the small tree's file size (4 KiB)
	BigBytes   int    // the large tree's file size (1 MiB)
	Wide       int    // files of the wide tree of sparse files (0: none)
	Clients    int    // concurrent writers building the trees (8)
	NoSync     bool   // acknowledge writes before the disk has them
}

// Row is one line of the table.
type Row struct {
	What  string
	Took  time.Duration
	Note  string
	Error error
}

// Run measures and prints the table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) ([]Row, error) {
	if cfg.Files <= 0 {
		cfg.Files = 2000
	}
	if cfg.SmallBytes <= 0 {
		cfg.SmallBytes = 4 << 10
	}
	if cfg.BigBytes <= 0 {
		cfg.BigBytes = 1 << 20
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "flyfs-bench-snapshot-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Fprintf(w, "flyfs bench snapshot: %d files per tree (%d B and %d B), wide tree %d sparse files, no-sync=%v\n",
		cfg.Files, cfg.SmallBytes, cfg.BigBytes, cfg.Wide, cfg.NoSync)
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(dir, "cluster"), NoSync: cfg.NoSync,
		Nodes: 1, Replicas: 1, Chains: 8, Metads: 1, ChunkSize: 4 << 20, Stripe: 8, Local: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fs, err := c.FS(ctx)
	if err != nil {
		return nil, err
	}
	m := fs.Meta()
	var rows []Row
	snap := func(path, name, what string) error {
		in, err := m.Resolve(ctx, path, true)
		if err != nil {
			return err
		}
		start := time.Now()
		s, err := m.SnapshotCreate(ctx, in.ID, name)
		took := time.Since(start)
		if err != nil {
			rows = append(rows, Row{What: what, Error: err})
			return nil
		}
		rows = append(rows, Row{What: what, Took: took, Note: fmt.Sprintf("%d files, %d bytes; %.0f files/s", s.Files, s.Bytes, float64(s.Files)/took.Seconds())})
		return nil
	}

	for _, tree := range []struct {
		name string
		size int
	}{{"small", cfg.SmallBytes}, {"big", cfg.BigBytes}} {
		if err := fill(ctx, fs, "/"+tree.name+"/run", cfg.Files, tree.size, cfg.Clients); err != nil {
			return nil, fmt.Errorf("tree of %d B files: %w", tree.size, err)
		}
		if err := snap("/"+tree.name+"/run", "s", fmt.Sprintf("snapshot of %d files of %s", cfg.Files, sizeName(tree.size))); err != nil {
			return nil, err
		}
	}
	// The baseline: copying the large tree's bytes.
	start := time.Now()
	if err := copyTree(ctx, fs, "/big/run", "/big/copy", cfg.Files, cfg.Clients); err != nil {
		return nil, fmt.Errorf("copy by bytes: %w", err)
	}
	took := time.Since(start)
	rows = append(rows, Row{What: fmt.Sprintf("cp -r of the %d files of %s by bytes (the baseline)", cfg.Files, sizeName(cfg.BigBytes)), Took: took,
		Note: fmt.Sprintf("%.0f MiB/s", float64(cfg.Files)*float64(cfg.BigBytes)/(1<<20)/took.Seconds())})

	if cfg.Wide > 0 {
		if err := fillSparse(ctx, fs, "/wide/run", cfg.Wide, cfg.Clients); err != nil {
			return nil, fmt.Errorf("wide tree: %w", err)
		}
		if err := snap("/wide/run", "s", fmt.Sprintf("snapshot of %d sparse files of 1 GiB", cfg.Wide)); err != nil {
			return nil, err
		}
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "measurement\ttime\t\t")
	for _, r := range rows {
		if r.Error != nil {
			fmt.Fprintf(tw, "%s\tfailed\t%v\t\n", r.What, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f ms\t%s\t\n", r.What, r.Took.Seconds()*1000, r.Note)
	}
	fmt.Fprintln(tw, "target: a snapshot's time independent of its files' sizes\t\t\t")
	return rows, tw.Flush()
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// fill writes n files of size bytes into dir, 100 per subdirectory.
func fill(ctx context.Context, fs *client.FS, dir string, n, size, clients int) error {
	data := make([]byte, size)
	rand.Read(data)
	for d := 0; d < (n+99)/100; d++ {
		if err := fs.MkdirAll(ctx, fmt.Sprintf("%s/d%03d", dir, d), 0o755); err != nil {
			return err
		}
	}
	_, err := bench.Spread(clients, n, func(i int) error {
		f, err := fs.Create(ctx, fmt.Sprintf("%s/d%03d/f%05d", dir, i/100, i), 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteAtContext(ctx, data, 0); err != nil {
			f.Close()
			return err
		}
		return f.CloseContext(ctx)
	})
	return err
}

// fillSparse makes n files of 1 GiB with no data (a truncate), 1,000 per
// subdirectory: the snapshot freezes each as if it held data.
func fillSparse(ctx context.Context, fs *client.FS, dir string, n, clients int) error {
	for d := 0; d < (n+999)/1000; d++ {
		if err := fs.MkdirAll(ctx, fmt.Sprintf("%s/d%03d", dir, d), 0o755); err != nil {
			return err
		}
	}
	_, err := bench.Spread(clients, n, func(i int) error {
		f, err := fs.Create(ctx, fmt.Sprintf("%s/d%03d/f%06d", dir, i/1000, i), 0o644)
		if err != nil {
			return err
		}
		if err := f.Truncate(ctx, 1<<30); err != nil {
			f.Close()
			return err
		}
		return f.CloseContext(ctx)
	})
	return err
}

// copyTree copies fill's tree of n files from src to dst by reading and
// writing every byte.
func copyTree(ctx context.Context, fs *client.FS, src, dst string, n, clients int) error {
	for d := 0; d < (n+99)/100; d++ {
		if err := fs.MkdirAll(ctx, fmt.Sprintf("%s/d%03d", dst, d), 0o755); err != nil {
			return err
		}
	}
	_, err := bench.Spread(clients, n, func(i int) error {
		rel := fmt.Sprintf("/d%03d/f%05d", i/100, i)
		in, err := fs.Open(ctx, src+rel)
		if err != nil {
			return err
		}
		defer in.Close()
		buf := make([]byte, in.Size())
		if _, err := in.ReadAtContext(ctx, buf, 0); err != nil && err != io.EOF {
			return err
		}
		out, err := fs.Create(ctx, dst+rel, 0o644)
		if err != nil {
			return err
		}
		if _, err := out.WriteAtContext(ctx, buf, 0); err != nil {
			out.Close()
			return err
		}
		return out.CloseContext(ctx)
	})
	return err
}
