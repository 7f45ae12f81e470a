// Package mdtest is an mdtest-style metadata benchmark of a live cluster:
// many clients, each its own connection (client.Dial), create, stat, rename
// and unlink files through the metadata service, phase by phase.
package mdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// Config of a run.
type Config struct {
	Mgmtd []string
	Token string
	// Clients are separate connections to the cluster; Threads run on each.
	Clients, Threads int
	// Files each worker (client thread) creates, stats, renames and unlinks.
	Files int
	// Dir is the namespace directory the run works under (a fresh one inside
	// it); SharedDir puts every worker's files in one directory instead of
	// one directory per worker (mdtest -u).
	Dir       string
	SharedDir bool
	Keep      bool
	Progress  io.Writer
	Logger    *slog.Logger
}

// Defaults are the flags' defaults.
func Defaults() Config {
	return Config{Clients: 8, Threads: 2, Files: 500, Dir: "/"}
}

func (c *Config) check() error {
	switch {
	case len(c.Mgmtd) == 0:
		return errors.New("--mgmtd is required")
	case c.Clients < 1 || c.Threads < 1:
		return errors.New("clients and threads must be at least 1")
	case c.Files < 1:
		return fmt.Errorf("files %d: want at least 1", c.Files)
	case !strings.HasPrefix(c.Dir, "/"):
		return fmt.Errorf("dir %q: want an absolute path in the namespace", c.Dir)
	}
	return nil
}

type run struct {
	cfg     Config
	clients []*client.FS
	dirs    []uint64 // inode of each worker's directory
	root    string
	rep     *bench.Report
}

// Run dials the clients, runs the phases and returns the report. The files
// live in a fresh directory under cfg.Dir, removed at the end unless Keep.
func Run(ctx context.Context, cfg Config) (*bench.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var id [4]byte
	rand.Read(id[:])
	r := &run{cfg: cfg, root: path.Join(cfg.Dir, "flyfs-mdtest-"+hex.EncodeToString(id[:]))}
	workers := cfg.Clients * cfg.Threads
	r.rep = bench.NewReport("mdtest", strings.Join(cfg.Mgmtd, ","), map[string]any{
		"clients": cfg.Clients, "threads_per_client": cfg.Threads, "files_per_worker": cfg.Files,
		"shared_dir": cfg.SharedDir, "dir": r.root})
	r.rep.Notes = append(r.rep.Notes, "create = create + close of an empty file (a write session opened and ended); stat = lookup by name; each client is its own connection")
	defer func() {
		for _, c := range r.clients {
			c.Close()
		}
	}()
	for i := 0; i < cfg.Clients; i++ {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs, err := client.Dial(dctx, client.Config{Mgmtd: cfg.Mgmtd, Token: cfg.Token, Logger: cfg.Logger})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("client %d: connect to %v: %w", i, cfg.Mgmtd, err)
		}
		r.clients = append(r.clients, fs)
	}
	if err := r.setup(ctx, workers); err != nil {
		return nil, err
	}
	err := r.phases(ctx, workers)
	if err == nil {
		err = r.verifyEmpty(ctx)
	}
	if !cfg.Keep {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		rerr := r.clients[0].RemoveAll(cctx, r.root)
		cancel()
		if rerr != nil && err == nil {
			err = fmt.Errorf("clean up %s: %w", r.root, rerr)
		}
	}
	return r.rep, err
}

func (r *run) meta(w int) *client.Meta { return r.clients[w%len(r.clients)].Meta() }

// setup makes the run's directories (not timed).
func (r *run) setup(ctx context.Context, workers int) error {
	m := r.meta(0)
	root, err := m.MkdirAll(ctx, r.root, 0o755, client.Creds{}, false)
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", r.root, err)
	}
	r.dirs = make([]uint64, workers)
	for w := range r.dirs {
		if r.cfg.SharedDir {
			r.dirs[w] = root.ID
			continue
		}
		in, err := m.Mkdir(ctx, root.ID, "w"+strconv.Itoa(w), 0o755, client.Creds{})
		if err != nil {
			return fmt.Errorf("mkdir for worker %d: %w", w, err)
		}
		r.dirs[w] = in.ID
	}
	return nil
}

func name(i int64) string { return "f" + strconv.FormatInt(i, 10) }

func (r *run) phases(ctx context.Context, workers int) error {
	n := int64(workers) * int64(r.cfg.Files)
	phases := []bench.Phase{
		{Name: "create", Unit: "file", Op: func(ctx context.Context, w int, i int64) (int64, error) {
			in, session, created, err := r.meta(w).Create(ctx, r.dirs[w], name(i), 0o644, os.O_WRONLY|os.O_EXCL, client.Creds{})
			if err != nil {
				return 0, err
			}
			if !created {
				return 0, fmt.Errorf("%s existed already", name(i))
			}
			f, err := r.clients[w%len(r.clients)].OpenInode(ctx, in, session)
			if err != nil {
				return 0, err
			}
			return 0, f.Close()
		}},
		{Name: "stat", Unit: "file", Op: func(ctx context.Context, w int, i int64) (int64, error) {
			in, err := r.meta(w).Lookup(ctx, r.dirs[w], name(i))
			if err != nil {
				return 0, err
			}
			if in.Type != metaapi.TypeFile || in.Length != 0 {
				return 0, fmt.Errorf("%s: type %v length %d, want an empty file", name(i), in.Type, in.Length)
			}
			return 0, nil
		}},
		{Name: "rename", Unit: "file", Op: func(ctx context.Context, w int, i int64) (int64, error) {
			return 0, r.meta(w).Rename(ctx, metaapi.RenameReq{SrcParent: r.dirs[w], SrcName: name(i), DstParent: r.dirs[w], DstName: name(i) + ".r"})
		}},
		{Name: "unlink", Unit: "file", Op: func(ctx context.Context, w int, i int64) (int64, error) {
			return 0, r.meta(w).Unlink(ctx, metaapi.RemoveReq{Parent: r.dirs[w], Name: name(i) + ".r"})
		}},
	}
	for _, p := range phases {
		p.Workers, p.Count, p.Partition, p.Progress = workers, n, true, r.cfg.Progress
		res, err := bench.Run(ctx, p)
		if err != nil {
			return err
		}
		r.rep.Phases = append(r.rep.Phases, res)
	}
	return nil
}

// verifyEmpty checks every file is gone: the phases' ops did what they said.
func (r *run) verifyEmpty(ctx context.Context) error {
	seen := map[uint64]bool{}
	for _, d := range r.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		ents, _, err := r.meta(0).ReadDir(ctx, d, "", 10, false)
		if err != nil {
			return err
		}
		if len(ents) > 0 {
			return fmt.Errorf("after unlink, %q is still in the run's directory", ents[0].Name)
		}
	}
	return nil
}
