package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/fusefs"
	"github.com/spf13/cobra"
)

type mountOptions struct {
	mgmtd        string
	tok          tokenOptions
	attrTimeout  time.Duration
	entryTimeout time.Duration
	opTimeout    time.Duration
	allowOther   bool
	readAheadKB  int
	readAroundKB int
	debug        bool
	cache        cacheFlags
	obs          observeOptions
}

func mountCmd() *cobra.Command {
	var o mountOptions
	cmd := &cobra.Command{
		Use:   "mount --mgmtd ADDR MOUNTPOINT",
		Short: "Mount flyfs with FUSE",
		Long: `Mount the cluster whose cluster manager is at --mgmtd on MOUNTPOINT and serve it
until unmounted (umount, 'flyfs umount', or SIGINT/SIGTERM to this process). The
command stays in the foreground while the mount lives: run it in the background
(or under a service manager) to go on using the shell.

As root it mounts directly with mount(2), so no fusermount is needed; otherwise
it uses fusermount. The kernel checks permissions from the file modes
(default_permissions). Attributes and names are cached for --attr-timeout and
--entry-timeout, so other clients' changes show up within them; every call to
the cluster fails with EIO after --op-timeout rather than hanging.

The hidden directory MOUNTPOINT/.flyfs takes registrations of the native
asynchronous API (posix/native).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMount(ctx, o, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.mgmtd, "mgmtd", "", "cluster manager address(es), comma separated (required)")
	addTokenFlags(f, &o.tok)
	f.DurationVar(&o.attrTimeout, "attr-timeout", time.Second, "how long the kernel caches attributes")
	f.DurationVar(&o.entryTimeout, "entry-timeout", time.Second, "how long the kernel caches names (and missing names)")
	f.DurationVar(&o.opTimeout, "op-timeout", 30*time.Second, "fail an operation with EIO when the cluster does not answer within this")
	f.BoolVar(&o.allowOther, "allow-other", os.Getuid() == 0, "let every user use the mount (permissions still apply); default on as root")
	f.IntVar(&o.readAheadKB, "read-ahead-kb", 4096, "kernel read-ahead of the mount in KiB (-1: kernel default)")
	f.IntVar(&o.readAroundKB, "read-around-kb", 64, "window read around a small random read of a file that fits in memory, its other pages cached (-1: none)")
	f.BoolVar(&o.debug, "debug", false, "log every FUSE request")
	o.cache.add(f)
	addObserveFlags(f, &o.obs)
	return cmd
}

func runMount(ctx context.Context, o mountOptions, dir string, out, logOut io.Writer) error {
	log, err := o.obs.logger(logOut)
	if err != nil {
		return err
	}
	var addrs []string
	for _, a := range strings.Split(o.mgmtd, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("--mgmtd is required")
	}
	cacheCfg, err := o.cache.config()
	if err != nil {
		return err
	}
	token, err := o.tok.resolve("flyfs mount", log)
	if err != nil {
		return err
	}
	obs, err := o.obs.start(log)
	if err != nil {
		return err
	}
	defer obs.close()
	dctx, cancel := context.WithTimeout(ctx, o.opTimeout)
	fs, err := client.Dial(dctx, client.Config{Mgmtd: addrs, Token: token, Logger: log, Registerer: obs.role("mount")})
	cancel()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.mgmtd, err)
	}
	defer fs.Close()
	cacheLine, err := o.cache.apply(ctx, fs, cacheCfg)
	if err != nil {
		return err
	}
	m, err := fusefs.Mount(ctx, fs, dir, fusefs.Options{
		AttrTimeout: o.attrTimeout, EntryTimeout: o.entryTimeout, OpTimeout: o.opTimeout,
		AllowOther: o.allowOther, ReadAheadKB: o.readAheadKB, ReadAroundKB: o.readAroundKB, Debug: o.debug, Log: log,
		Capacity: fusefs.MgmtdCapacity(fs.Mgmtd()), Registerer: obs.role("mount"),
	})
	if err != nil {
		return err
	}
	url, err := obs.serve(o.obs, nil, log)
	if err != nil {
		m.Unmount()
		return err
	}
	fmt.Fprintf(out, "flyfs mounted at %s; serving in the foreground until unmounted (flyfs umount %s, or Ctrl-C)\n", m.Dir(), m.Dir())
	if cacheLine != "" {
		fmt.Fprintln(out, cacheLine)
	}
	if url != "" {
		fmt.Fprintf(out, "metrics at %s\n", url)
	}
	select {
	case <-ctx.Done():
		log.Info("unmounting", "dir", m.Dir())
		return m.Unmount()
	case <-waitCh(m):
		return nil
	}
}

func waitCh(m *fusefs.Mounted) <-chan struct{} {
	ch := make(chan struct{})
	go func() { m.Wait(); close(ch) }()
	return ch
}

func umountCmd() *cobra.Command {
	var lazy bool
	cmd := &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "Unmount a flyfs FUSE mount",
		Long: `Unmount a flyfs mount; its 'flyfs mount' process then exits. Uses umount(2) as
root and fusermount otherwise. --lazy detaches a busy mount at once and finishes
when its last user is gone.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fusefs.Unmount(args[0], lazy); err != nil {
				return fmt.Errorf("umount %s: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&lazy, "lazy", "l", false, "detach a busy mount now")
	return cmd
}
