package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/cluster/frontend"
	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/gateway"
	"github.com/flyfs/flyfs/posix/fusefs"
	"github.com/spf13/cobra"
)

// serverOptions configure the all-in-one server.
type serverOptions struct {
	dataDir   string
	kvc       kvopen.Config
	mgmtdAddr string
	metadAddr string
	disks     int
	replicas  int
	chains    int
	tok       tokenOptions
	noSync    bool
	// Front ends; an empty address turns one off.
	consoleAddr string
	s3Addr      string
	mountpoint  string
	cache       cacheFlags // the front ends' cache
	// The root key (FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY); empty: generated on
	// the first start and printed once.
	accessKey, secretKey string
	http                 httpOptions // TLS and bounds of the S3 and console servers
	rpc                  rpc.Options // bounds of every role's RPC server
	gcGrace              time.Duration
	trashDays            int
	inlineFileMax        int
	encryptionKeyFile    string
	checksumSegment      string
	storage              storageDurability
	obs                  observeOptions
	logOut               io.Writer // the log (nil: stderr)
}

func serverCmd() *cobra.Command {
	var o serverOptions
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run every flyfs role in one process on one machine (the embedded default)",
		Long: `Run flyfs on one machine with all its state under --data: a cluster manager, the
metadata service over the embedded Pebble store (--data/meta), one storage service
per data disk (--disks, under --data/disk<N>) with chains of --replicas targets over
them (created on the first start), the S3 gateway (--s3-addr), the admin console
(--console-addr) and, with --mount, a FUSE mount. Every role runs the same code as
its own subcommand and talks to the others over loopback. Restarting on the same
--data brings everything back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.logOut = cmd.ErrOrStderr()
			return runServer(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data", "flyfs-data", "directory for all of the server's state")
	addKVFlags(f, &o.kvc)
	f.StringVar(&o.mgmtdAddr, "mgmtd-addr", "127.0.0.1:9000", "address of the cluster manager")
	f.StringVar(&o.metadAddr, "metad-addr", "127.0.0.1:9200", "address of the metadata service")
	f.IntVar(&o.disks, "disks", 1, "storage services, one disk directory each")
	f.IntVar(&o.replicas, "replicas", 1, "replicas per chain (at most --disks)")
	f.IntVar(&o.chains, "chains", 8, "chains created on the first start")
	addTokenFlags(f, &o.tok)
	f.Lookup("token-file").Usage = "file holding the cluster token (env FLYFS_TOKEN_FILE; default <data>/token, drawn on the first start)"
	f.BoolVar(&o.noSync, "no-sync", false, "acknowledge writes before they reach the disk")
	f.StringVar(&o.consoleAddr, "console-addr", "127.0.0.1:9400", "address of the admin console (empty: no console)")
	f.StringVar(&o.mountpoint, "mount", "", "also mount the file system here with FUSE (unmounted at exit)")
	o.cache.add(f)
	f.StringVar(&o.s3Addr, "s3-addr", "127.0.0.1:9300", "address of the S3 gateway (empty: no gateway)")
	f.StringVar(&o.accessKey, "access-key", "", "root access key, for S3 and the console (env FLYFS_ACCESS_KEY); empty: generated on the first start and printed")
	f.StringVar(&o.secretKey, "secret-key", "", "root secret key (env FLYFS_SECRET_KEY)")
	addHTTPFlags(f, &o.http)
	addRPCFlags(f, &o.rpc)
	f.DurationVar(&o.gcGrace, "gc-grace", 5*time.Minute, "how long removed files keep their chunks, so readers that have them open keep reading (0: none; flyfs admin gc collects now)")
	f.IntVar(&o.inlineFileMax, "inline-file-max", client.DefaultInlineMax, "keep the data of files up to this many bytes, written whole by one writer, in their inodes instead of in chunks (negative: never; off with --encryption-key-file: the metadata store does not encrypt)")
	f.IntVar(&o.trashDays, "trash-days", 0, "keep removed files and trees in /.flyfs-trash this many days, restorable with flyfs admin trash (0: no trash)")
	f.StringVar(&o.encryptionKeyFile, "encryption-key-file", "", encryptionKeyHelp)
	f.StringVar(&o.checksumSegment, "checksum-segment", "4KiB", segmentHelp)
	o.storage.addFlags(f)
	addObserveFlags(f, &o.obs)
	f.Lookup("metrics-addr").Usage = "serve every role's Prometheus metrics, labelled role=<mgmtd, metad, storaged, client, gateway>, at http://ADDR/metrics (empty: no metrics)"
	return cmd
}

func runServer(ctx context.Context, o serverOptions, out io.Writer) error {
	if o.logOut == nil {
		o.logOut = os.Stderr
	}
	log, err := o.obs.logger(o.logOut)
	if err != nil {
		return err
	}
	cacheCfg, err := o.cache.config()
	if err != nil {
		return err
	}
	if o.replicas < 1 || o.replicas > o.disks {
		return fmt.Errorf("--replicas %d: want 1..--disks (%d)", o.replicas, o.disks)
	}
	if (o.accessKey == "") != (o.secretKey == "") {
		return fmt.Errorf("give both --access-key and --secret-key (FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY), or neither")
	}
	if err := privateState(o.dataDir); err != nil {
		return err
	}
	if o.kvc.Engine == "" || o.kvc.Engine == "pebble" {
		o.kvc.Dir = filepath.Join(o.dataDir, "meta")
	}
	token, tokenNote, err := serverToken(o, log)
	if err != nil {
		return err
	}
	obs, err := o.obs.start(log)
	if err != nil {
		return err
	}
	defer obs.close()
	encKey, err := readEncryptionKey(o.encryptionKeyFile)
	if err != nil {
		return err
	}
	segment, err := parseSegment(o.checksumSegment)
	if err != nil {
		return err
	}
	inline, err := o.storage.inline()
	if err != nil {
		return err
	}
	db, err := kvopen.Open(ctx, o.kvc)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := cluster.Start(ctx, cluster.Config{Dir: o.dataDir, KV: db, NoSync: o.noSync, Token: token, InsecureNoToken: token == "",
		EncryptionKey: encKey, SegmentSize: segment, SyncWindow: o.storage.syncWindow, InlineMax: inline,
		MgmtdAddrs: []string{o.mgmtdAddr}, Nodes: o.disks, Chains: o.chains, Replicas: o.replicas,
		Metads: 1, MetadAddrs: []string{o.metadAddr}, RPCLimits: o.rpc, GCGrace: graceOption(o.gcGrace), TrashDays: o.trashDays, InlineFileMax: o.inlineFileMax, Logger: log,
		Metrics: obs.reg, Local: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean exit
		}
		return err
	}
	defer c.Close()
	metricsURL, err := obs.serve(o.obs, c.Gatherer(), log)
	if err != nil {
		return err
	}
	id, fresh := c.ID()
	fmt.Fprintf(out, "flyfs server up: cluster %s (new: %v), data %s, kv %s\n", id, fresh, o.dataDir, o.kvc.Engine)
	fmt.Fprintf(out, "  token     %s\n", tokenNote)
	fmt.Fprintf(out, "  mgmtd     %s\n", c.MgmtdAddrs()[0])
	fmt.Fprintf(out, "  metad     %s\n", c.MetadAddrs()[0])
	for i := 0; i < c.Nodes(); i++ {
		n := c.Node(i)
		fmt.Fprintf(out, "  storaged  %s (node %d, %s)\n", n.Addr, n.ID, n.Dir)
	}
	if metricsURL != "" {
		fmt.Fprintf(out, "  metrics   %s (every role, labelled role=...)\n", metricsURL)
	}
	fs, err := c.FS(ctx)
	if err != nil {
		return err
	}
	cacheLine, err := o.cache.apply(ctx, fs, cacheCfg) // the front ends' one client: the S3 gateway's and the mount's reads
	if err != nil {
		return err
	}
	if cacheLine != "" {
		fmt.Fprintf(out, "  %s\n", cacheLine)
	}
	// One root key for S3 and the console: the one given, or one drawn on
	// the first start and printed only then.
	var given *access.Key
	if o.accessKey != "" {
		given = &access.Key{ID: o.accessKey, Secret: o.secretKey}
	}
	root, created, err := fs.Keys().EnsureRoot(ctx, given)
	if err != nil {
		return err
	}
	if created && given == nil {
		fmt.Fprintf(out, "  root key  access key %s, secret %s (generated; shown only now)\n", root.ID, root.Secret)
	}
	if o.s3Addr != "" {
		addr, err := frontend.StartGateway(ctx, c, o.http.at(o.s3Addr), gateway.Config{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  s3        %[1]s://%[2]s/ (path-style; aws --endpoint-url %[1]s://%[2]s)\n", o.http.scheme(), addr)
	}
	if o.consoleAddr != "" {
		addr, err := frontend.StartConsole(ctx, c, o.http.at(o.consoleAddr), console.Config{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  console   %s://%s/ (sign in with the root key)\n", o.http.scheme(), addr)
	}
	if o.mountpoint != "" {
		if _, err := frontend.Mount(ctx, c, o.mountpoint, fusefs.Options{AllowOther: true}); err != nil {
			return err
		}
		fmt.Fprintf(out, "  mount     %s\n", o.mountpoint)
	}
	fmt.Fprintf(out, "  try: flyfs admin --mgmtd %s%s chains\n", c.MgmtdAddrs()[0], tokenHint(o))
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// serverToken is the server's cluster token and a line saying where it is:
// --token, --token-file, or <data>/token (drawn on the first start).
func serverToken(o serverOptions, log *slog.Logger) (token, note string, err error) {
	if o.tok.token != "" || o.tok.file != "" || o.tok.insecure {
		token, err = o.tok.resolve("flyfs server", log)
		switch {
		case err != nil:
		case token == "":
			note = "none (--insecure-no-token)"
		case o.tok.file != "":
			note = "from " + o.tok.file
		default:
			note = "given by --token/FLYFS_TOKEN"
		}
		return token, note, err
	}
	token, created, err := cluster.EnsureToken(o.dataDir)
	if err != nil {
		return "", "", err
	}
	note = filepath.Join(o.dataDir, cluster.TokenFile)
	if created {
		note += " (drawn now; every role and client needs it: --token-file or FLYFS_TOKEN)"
	}
	return token, note, nil
}

// tokenHint is the flag a client run beside the server needs, if any.
func tokenHint(o serverOptions) string {
	switch {
	case o.tok.token != "" || o.tok.insecure:
		return ""
	case o.tok.file != "":
		return " --token-file " + o.tok.file
	case filepath.Join(o.dataDir, cluster.TokenFile) == filepath.Clean(defaultTokenFile):
		return ""
	}
	return " --token-file " + filepath.Join(o.dataDir, cluster.TokenFile)
}
