package multihost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/etcdkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// Ports every host uses: each host has its own address, so they never clash.
const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
	mgmtdPort      = 9000
	storagedPort   = 9100
	metadPort      = 9200
	gatewayPort    = 9300
)

// Config shapes a cluster.
type Config struct {
	Storaged int           // storage nodes (default 4)
	Replicas int           // targets per chain (default 3)
	Chains   int           // chains (default 8)
	T        time.Duration // heartbeat timeout (default 2 s); the lease is T/4
	Mount    bool          // run a FUSE mount on its own host
	Gateway  bool          // run the S3 gateway, when the binary has it
	// TmpfsStoraged gives storage node i (0-based) a tmpfs of this size
	// (e.g. "64m") as its disk, to fill it.
	TmpfsStoraged map[int]string
	// GCGrace is metad's --gc-grace (0: its default, 5 minutes).
	GCGrace time.Duration
}

func (cfg Config) withDefaults() Config {
	if cfg.Storaged == 0 {
		cfg.Storaged = 4
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if cfg.Chains == 0 {
		cfg.Chains = 8
	}
	if cfg.T == 0 {
		cfg.T = 2 * time.Second
	}
	return cfg
}

// Cluster is flyfs as separate processes on separate hosts over a
// three-member etcd: every role in its own network namespace.
type Cluster struct {
	t     testing.TB
	cfg   Config
	Net   *Net
	Bin   string
	Dir   string
	Token string

	Etcd     []*Proc
	Mgmtd    []*Proc
	Metad    []*Proc
	Storaged []*Proc // node i+1
	MountP   *Proc
	MountDir string
	GatewayP *Proc
	// GatewayURL and the root keys are set when the gateway runs.
	GatewayURL, AccessKey, SecretKey string

	rc  *rpc.Client
	src *client.MgmtdSource
}

// Start builds the hosts and starts every process: 3 etcd members, 2 mgmtd,
// chains created with `flyfs admin create-chains`, the storage nodes, 2 metad,
// and the mount and gateway when asked. It returns once every chain serves
// on all its replicas and a metad is registered. Everything is killed and
// removed when the test ends.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	cfg = cfg.withDefaults()
	n := NewNet(t)
	c := &Cluster{t: t, cfg: cfg, Net: n, Bin: Binary(t), Dir: t.TempDir(), Token: "multihost-" + n.id}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
	})

	// etcd: three members, one per host.
	var etcdHosts []*Host
	var initial []string
	for i := 0; i < 3; i++ {
		h := n.AddHost(fmt.Sprintf("etcd%d", i+1))
		etcdHosts = append(etcdHosts, h)
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i+1, h.Addr(etcdPeerPort)))
	}
	for i, h := range etcdHosts {
		p := c.proc(fmt.Sprintf("etcd%d", i+1), h, "etcd", "--name", fmt.Sprintf("e%d", i+1),
			"--data", filepath.Join(c.Dir, fmt.Sprintf("etcd%d", i+1)),
			"--listen-peer", "http://"+h.Addr(etcdPeerPort), "--listen-client", "http://"+h.Addr(etcdClientPort),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", "ffm-"+n.id, "--log-level", "error")
		c.Etcd = append(c.Etcd, p)
	}
	for _, p := range c.Etcd {
		p.Start()
	}
	c.waitEtcd(60 * time.Second)

	kvFlags := []string{"--kv", "etcd", "--etcd-endpoints", strings.Join(c.EtcdEndpoints(), ","), "--etcd-prefix", "/flyfs/"}
	for i := 0; i < 2; i++ {
		h := n.AddHost(fmt.Sprintf("mgmtd%d", i+1))
		p := c.proc(fmt.Sprintf("mgmtd%d", i+1), h, append([]string{"mgmtd", "--id", fmt.Sprintf("m%d", i+1),
			"--listen", h.Addr(mgmtdPort), "--token", c.Token, "--heartbeat-timeout", cfg.T.String()}, kvFlags...)...)
		c.Mgmtd = append(c.Mgmtd, p)
		p.Start()
	}
	for _, p := range c.Mgmtd {
		c.waitListening(p, p.Host.Addr(mgmtdPort))
	}
	var nodes []string
	for i := 0; i < cfg.Storaged; i++ {
		nodes = append(nodes, fmt.Sprint(i+1))
	}
	c.Admin(30*time.Second, "create-chains", "--nodes", strings.Join(nodes, ","), "--replicas", fmt.Sprint(cfg.Replicas),
		"--chains", fmt.Sprint(cfg.Chains), "--layout", "balanced")

	for i := 0; i < cfg.Storaged; i++ {
		h := n.AddHost(fmt.Sprintf("storaged%d", i+1))
		disk := filepath.Join(c.Dir, fmt.Sprintf("disk%d", i+1))
		if err := os.MkdirAll(disk, 0o755); err != nil {
			t.Fatal(err)
		}
		if size, ok := cfg.TmpfsStoraged[i]; ok {
			mountTmpfs(t, disk, size)
		}
		p := c.proc(fmt.Sprintf("storaged%d", i+1), h, "storaged", "--node", fmt.Sprint(i+1), "--listen", h.Addr(storagedPort),
			"--data", disk, "--mgmtd", c.MgmtdList(), "--token", c.Token, "--heartbeat-timeout", cfg.T.String(),
			"--disk-faults-file", c.diskFaultsFile(i))
		c.Storaged = append(c.Storaged, p)
		p.Start()
	}
	// Every metad shares the store, so every metad gets the one master key.
	masterKey := filepath.Join(c.Dir, "master.key")
	if _, err := cluster.EnsureMasterKey(c.Dir); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		h := n.AddHost(fmt.Sprintf("metad%d", i+1))
		args := append([]string{"metad", "--listen", h.Addr(metadPort),
			"--mgmtd", c.MgmtdList(), "--token", c.Token, "--master-key-file", masterKey}, kvFlags...)
		if cfg.GCGrace > 0 {
			args = append(args, "--gc-grace", cfg.GCGrace.String())
		}
		p := c.proc(fmt.Sprintf("metad%d", i+1), h, args...)
		c.Metad = append(c.Metad, p)
		p.Start()
	}
	c.rc = rpc.NewClient(rpc.Options{Token: c.Token, DialTimeout: time.Second})
	t.Cleanup(func() { c.rc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), c.rc, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("routing from mgmtd: %v", err)
	}
	c.src = src
	t.Cleanup(src.Close)
	c.WaitHealthy(30 * cfg.T)
	c.waitMetad(30 * time.Second)

	if cfg.Mount {
		c.startMount()
	}
	if cfg.Gateway {
		c.startGateway()
	}
	return c
}

func (c *Cluster) proc(name string, h *Host, args ...string) *Proc {
	return newProc(c.t, c.Bin, name, h, filepath.Join(c.Dir, name+".log"), args...)
}

// EtcdEndpoints are the etcd members' client URLs.
func (c *Cluster) EtcdEndpoints() []string {
	var out []string
	for _, p := range c.Etcd {
		out = append(out, "http://"+p.Host.Addr(etcdClientPort))
	}
	return out
}

// MgmtdAddrs are the cluster managers' addresses.
func (c *Cluster) MgmtdAddrs() []string {
	var out []string
	for _, p := range c.Mgmtd {
		out = append(out, p.Host.Addr(mgmtdPort))
	}
	return out
}

// MgmtdList is MgmtdAddrs comma-separated, as flags take it.
func (c *Cluster) MgmtdList() string { return strings.Join(c.MgmtdAddrs(), ",") }

// StoragedAddr is the address of storage node i (0-based).
func (c *Cluster) StoragedAddr(i int) string { return c.Storaged[i].Host.Addr(storagedPort) }

// RPC is a client of the cluster's internal RPC (with its token).
func (c *Cluster) RPC() *rpc.Client { return c.rc }

// Routing returns the newest routing mgmtd has published.
func (c *Cluster) Routing() *routing.Info {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.src.Refresh(ctx, 0)
	return c.src.Current()
}

// Dial connects a new client from the test process (the root namespace).
// Path lookups are not cached, so each operation sees the newest namespace.
func (c *Cluster) Dial(retryFor time.Duration) *client.FS {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs, err := client.Dial(ctx, client.Config{Mgmtd: c.MgmtdAddrs(), Token: c.Token, InodeTTL: -1, RetryFor: retryFor, MetaRetry: retryFor})
	if err != nil {
		c.t.Fatalf("dial the cluster: %v", err)
	}
	c.t.Cleanup(func() { fs.Close() })
	return fs
}

// Admin runs `flyfs admin ARGS` from the root namespace, retrying while the
// first primary takes its lease, and fails the test if it never succeeds.
func (c *Cluster) Admin(within time.Duration, args ...string) string {
	c.t.Helper()
	out, err := c.TryAdmin(within, args...)
	if err != nil {
		c.t.Fatalf("flyfs admin %v: %v\n%s", args, err, out)
	}
	return out
}

// TryAdmin is Admin that returns the last failure instead.
func (c *Cluster) TryAdmin(within time.Duration, args ...string) (string, error) {
	full := append([]string{"admin", "--mgmtd", c.MgmtdList(), "--token", c.Token, "--timeout", "20s"}, args...)
	deadline := time.Now().Add(within)
	for {
		out, err := exec.Command(c.Bin, full...).CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			return string(out), err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Fsck runs `flyfs admin fsck` and fails the test unless the namespace is
// clean.
func (c *Cluster) Fsck() {
	c.t.Helper()
	out, err := c.TryAdmin(30*time.Second, "fsck")
	if err != nil || !strings.Contains(out, "clean") {
		c.t.Errorf("flyfs admin fsck: %v\n%s", err, out)
		return
	}
	c.t.Logf("fsck: %s", strings.TrimSpace(out))
}

// WaitFor polls routing until cond holds, failing the test after d.
func (c *Cluster) WaitFor(d time.Duration, what string, cond func(*routing.Info) bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond(c.Routing()) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := c.TryAdmin(5*time.Second, "chains")
	c.t.Fatalf("%s did not happen within %v; chains:\n%s", what, d, out)
}

// Healthy reports whether every chain serves on all its replicas.
func (c *Cluster) Healthy(in *routing.Info) bool {
	if len(in.Chains) != c.cfg.Chains {
		return false
	}
	for _, ch := range in.Chains {
		for _, tg := range ch.Targets {
			if tg.Public != routing.Serving {
				return false
			}
		}
	}
	return true
}

// WaitHealthy waits until every chain serves on all its replicas.
func (c *Cluster) WaitHealthy(d time.Duration) {
	c.t.Helper()
	c.WaitFor(d, "every chain serving on all replicas", c.Healthy)
}

// NodeIs reports whether every target of storage node i (0-based) is in
// public state s.
func NodeIs(in *routing.Info, i int, s routing.PublicState) bool {
	found := false
	for _, ch := range in.Chains {
		for _, tg := range ch.Targets {
			if tg.Node == routing.NodeID(i+1) {
				found = true
				if tg.Public != s {
					return false
				}
			}
		}
	}
	return found
}

// PrimaryMgmtd returns the index of the primary mgmtd.
func (c *Cluster) PrimaryMgmtd() int {
	c.t.Helper()
	m := client.NewMgmtd(c.rc, c.MgmtdAddrs())
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		pr, err := m.GetPrimary(ctx)
		cancel()
		if err == nil {
			for i, a := range c.MgmtdAddrs() {
				if a == pr.Addr {
					return i
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatal("no primary mgmtd")
	return -1
}

func (c *Cluster) waitListening(p *Proc, addr string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := dialTCP(addr, 200*time.Millisecond); err == nil {
			conn.Close()
			return
		}
		select {
		case <-p.Exited():
			c.t.Fatalf("%s exited:\n%s", p.Name, p.Tail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.t.Fatalf("%s: nothing listens on %s:\n%s", p.Name, addr, p.Tail(4000))
}

// waitEtcd waits until the etcd members have elected a leader and take a
// transaction.
func (c *Cluster) waitEtcd(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		for _, p := range c.Etcd {
			select {
			case <-p.Exited():
				c.t.Fatalf("%s exited:\n%s", p.Name, p.Tail(4000))
			default:
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var db interface{ Close() error }
		db, err = etcdkv.Open(ctx, etcdkv.Options{Endpoints: c.EtcdEndpoints(), Prefix: "/ready/", DialTimeout: 2 * time.Second})
		cancel()
		if err == nil {
			db.Close()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("etcd not ready within %v: %v\n%s", d, err, c.Etcd[0].Tail(4000))
}

// waitMetad waits until every metad is registered with mgmtd.
func (c *Cluster) waitMetad(d time.Duration) {
	c.t.Helper()
	m := client.NewMgmtd(c.rc, c.MgmtdAddrs())
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := m.Services(ctx, mgmtdapi.KindMetad)
		cancel()
		if err == nil {
			live := 0
			for _, s := range resp.Services {
				if s.Alive {
					live++
				}
			}
			if live >= len(c.Metad) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("metad not registered within %v:\n%s", d, c.Metad[0].Tail(4000))
}

// startMount mounts the cluster with `flyfs mount` run on its own host. It
// enters only the host's network namespace, so the mount lands in the root
// mount namespace where the test can use it.
func (c *Cluster) startMount() {
	c.t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		c.t.Skipf("FUSE mount needs /dev/fuse: %v", err)
	}
	h := c.Net.AddHost("mount")
	c.MountDir = filepath.Join(c.Dir, "mnt")
	if err := os.MkdirAll(c.MountDir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.Net.recordMount(c.MountDir)
	c.MountP = c.proc("mount", h, "mount", "--mgmtd", c.MgmtdList(), "--token", c.Token, "--op-timeout", "60s", c.MountDir)
	c.t.Cleanup(func() { syscall.Unmount(c.MountDir, syscall.MNT_DETACH) })
	c.MountP.Start()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if mounted(c.MountDir) {
			return
		}
		select {
		case <-c.MountP.Exited():
			c.t.Fatalf("flyfs mount exited:\n%s", c.MountP.Tail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.t.Fatalf("flyfs mount: %s not mounted within 30s:\n%s", c.MountDir, c.MountP.Tail(4000))
}

// mounted reports whether dir is a mount point in this mount namespace.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// startGateway runs `flyfs gateway` on its own host with a fixed root key.
func (c *Cluster) startGateway() {
	c.t.Helper()
	h := c.Net.AddHost("gateway")
	c.AccessKey, c.SecretKey = "FFMULTIHOST"+strings.ToUpper(c.Net.id), "secret-"+c.Net.id+"-multihost-key"
	c.GatewayP = c.proc("gateway", h, "gateway", "--mgmtd", c.MgmtdList(), "--token", c.Token,
		"--s3-addr", h.Addr(gatewayPort), "--access-key", c.AccessKey, "--secret-key", c.SecretKey)
	c.GatewayP.Start()
	c.waitListening(c.GatewayP, h.Addr(gatewayPort))
	c.GatewayURL = "http://" + h.Addr(gatewayPort)
}

func mountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("needs a small tmpfs (root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// dumpLogs prints the end of every process's log, for a failed test.
func (c *Cluster) dumpLogs() {
	var all []*Proc
	all = append(all, c.Etcd...)
	all = append(all, c.Mgmtd...)
	all = append(all, c.Metad...)
	all = append(all, c.Storaged...)
	if c.MountP != nil {
		all = append(all, c.MountP)
	}
	if c.GatewayP != nil {
		all = append(all, c.GatewayP)
	}
	for _, p := range all {
		c.t.Logf("---- %s (%s, %s) log tail:\n%s", p.Name, p.Host.NS, p.Host.IP, p.Tail(3000))
	}
	keep := filepath.Join(os.TempDir(), "flyfs-multihost-logs", strings.ReplaceAll(c.t.Name(), "/", "_")+"-"+c.Net.id)
	if err := os.MkdirAll(keep, 0o755); err == nil {
		for _, p := range all {
			if b, err := os.ReadFile(p.Log); err == nil {
				os.WriteFile(filepath.Join(keep, filepath.Base(p.Log)), b, 0o644)
			}
		}
		if b, err := os.ReadFile(filepath.Join(c.Dir, "registers.html")); err == nil {
			os.WriteFile(filepath.Join(keep, "registers.html"), b, 0o644)
		}
		c.t.Logf("process logs copied to %s", keep)
	}
}
