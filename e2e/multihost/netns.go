package multihost

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Names of everything the harness creates start with namePrefix, so a run can
// find (and remove) what an aborted run left behind. Each run writes its own
// pid to stateDir/<run id>/owner; a run whose owner is dead is stale.
const (
	namePrefix = "ffm"
	stateDir   = "/run/flyfs-multihost"
)

// Net is a private network: a Linux bridge in the root namespace with an
// address on it (so the test process reaches every host), and hosts, each a
// network namespace joined to the bridge by a veth pair.
type Net struct {
	t      testing.TB
	id     string     // random run id, part of every name
	subnet [3]byte    // 10.a.b.0/24
	bridge string     // bridge device in the root namespace
	state  string     // stateDir/id
	mu     sync.Mutex // guards hosts and blocked
	hosts  []*Host
	// blocked holds the blackhole routes in place, per namespace.
	blocked map[string]map[string]bool
}

// Host is one machine: a network namespace with one address.
type Host struct {
	Name string // short name, e.g. "storaged3"
	NS   string // network namespace name (ip netns)
	IP   string
	veth string // root side of its veth pair
	net  *Net
}

// NSPath is the namespace's bind mount, for nsenter --net.
func (h *Host) NSPath() string { return "/var/run/netns/" + h.NS }

// Addr is host:port on this host.
func (h *Host) Addr(port int) string { return net.JoinHostPort(h.IP, strconv.Itoa(port)) }

// CanMakeNamespaces reports why network namespaces cannot be made here, or "".
func CanMakeNamespaces() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is not installed (iproute2, util-linux)", tool)
		}
	}
	probe := namePrefix + "-probe-" + randHex(3)
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add failed: %v: %s", err, bytes.TrimSpace(out))
	}
	exec.Command("ip", "netns", "del", probe).Run()
	return ""
}

// NewNet creates the bridge and its root address on a free 10.x.y.0/24, and
// removes everything (hosts included) when the test ends, failed or not.
func NewNet(t testing.TB) *Net {
	t.Helper()
	if why := CanMakeNamespaces(); why != "" {
		t.Skipf("multi-host e2e skipped: %s", why)
	}
	CleanStale(t)
	n := &Net{t: t, id: randHex(3), blocked: map[string]map[string]bool{}}
	n.bridge = namePrefix + n.id + "br"
	n.state = filepath.Join(stateDir, n.id)
	if err := os.MkdirAll(n.state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.state, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.teardown)
	n.subnet = pickSubnet(t)
	n.must("ip", "link", "add", n.bridge, "type", "bridge")
	n.must("ip", "addr", "add", n.ip(1)+"/24", "dev", n.bridge)
	n.must("ip", "link", "set", n.bridge, "up")
	t.Logf("network %s: bridge %s, 10.%d.%d.0/24", n.id, n.bridge, n.subnet[1], n.subnet[2])
	return n
}

// RootIP is the test process's address on the bridge.
func (n *Net) RootIP() string { return n.ip(1) }

func (n *Net) ip(last int) string {
	return fmt.Sprintf("%d.%d.%d.%d", n.subnet[0], n.subnet[1], n.subnet[2], last)
}

// AddHost makes a namespace with the next address and joins it to the bridge.
func (n *Net) AddHost(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	idx := len(n.hosts) + 1
	h := &Host{Name: name, NS: fmt.Sprintf("%s-%s-h%02d", namePrefix, n.id, idx), IP: n.ip(10 + idx),
		veth: fmt.Sprintf("%s%sh%02d", namePrefix, n.id, idx), net: n}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	peer := h.veth + "p"
	n.must("ip", "netns", "add", h.NS)
	n.must("ip", "link", "add", h.veth, "type", "veth", "peer", "name", peer)
	n.must("ip", "link", "set", peer, "netns", h.NS)
	n.must("ip", "link", "set", h.veth, "master", n.bridge)
	n.must("ip", "link", "set", h.veth, "up")
	n.must("ip", "-n", h.NS, "link", "set", "lo", "up")
	n.must("ip", "-n", h.NS, "addr", "add", h.IP+"/24", "dev", peer)
	n.must("ip", "-n", h.NS, "link", "set", peer, "up")
	return h
}

// Hosts lists the hosts in the order they were added.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// CutOff takes a host off the network: its veth goes down, so nothing
// reaches it and it reaches nothing (its processes keep running).
func (n *Net) CutOff(h *Host) { n.must("ip", "link", "set", h.veth, "down") }

// Reconnect undoes CutOff.
func (n *Net) Reconnect(h *Host) { n.must("ip", "link", "set", h.veth, "up") }

// Partition cuts a from b only, in both directions, with a blackhole route in
// each namespace for the other's address: packets are dropped on the floor
// (a local sender gets EINVAL at once; the other side sees silence). A nil
// host is the root namespace, where the test's own clients run; no route is
// added there, the other side's route already cuts every exchange.
func (n *Net) Partition(a, b *Host) {
	n.t.Helper()
	n.blackhole(a, b, true)
	n.blackhole(b, a, true)
}

// Heal undoes Partition(a, b).
func (n *Net) Heal(a, b *Host) {
	n.t.Helper()
	n.blackhole(a, b, false)
	n.blackhole(b, a, false)
}

// HealAll removes every partition and reconnects every host.
func (n *Net) HealAll() {
	n.mu.Lock()
	var todo [][2]string
	for ns, dsts := range n.blocked {
		for ip := range dsts {
			todo = append(todo, [2]string{ns, ip})
		}
	}
	n.mu.Unlock()
	for _, r := range todo {
		n.route(r[0], r[1], false)
	}
	for _, h := range n.Hosts() {
		n.Reconnect(h)
	}
}

// blackhole adds (or removes) in from's namespace a blackhole route to to.
func (n *Net) blackhole(from, to *Host, add bool) {
	if from == nil {
		return
	}
	ip := n.RootIP()
	if to != nil {
		ip = to.IP
	}
	n.route(from.NS, ip, add)
}

func (n *Net) route(ns, ip string, add bool) {
	n.mu.Lock()
	set := n.blocked[ns]
	if set == nil {
		set = map[string]bool{}
		n.blocked[ns] = set
	}
	have := set[ip]
	if have == add {
		n.mu.Unlock()
		return
	}
	if add {
		set[ip] = true
	} else {
		delete(set, ip)
	}
	n.mu.Unlock()
	op := "add"
	if !add {
		op = "del"
	}
	n.must("ip", "-n", ns, "route", op, "blackhole", ip+"/32")
}

func (n *Net) must(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// teardown removes the namespaces (their veth ends go with them), the bridge
// and the run's state; errors are reported, not fatal, so all is tried.
func (n *Net) teardown() {
	for _, h := range n.Hosts() {
		killNamespace(h.NS)
		if out, err := exec.Command("ip", "netns", "del", h.NS).CombinedOutput(); err != nil {
			n.t.Errorf("ip netns del %s: %v: %s", h.NS, err, bytes.TrimSpace(out))
		}
		exec.Command("ip", "link", "del", h.veth).Run() // gone with the namespace, normally
	}
	if out, err := exec.Command("ip", "link", "del", n.bridge).CombinedOutput(); err != nil {
		n.t.Errorf("ip link del %s: %v: %s", n.bridge, err, bytes.TrimSpace(out))
	}
	os.RemoveAll(n.state)
}

// killNamespace kills with SIGKILL every process still in namespace ns.
func killNamespace(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// CleanStale removes what earlier runs of this harness left behind when they
// died without cleaning up (a test binary killed by a timeout): namespaces,
// veths and bridges named with a run id whose owner process is gone, and the
// FUSE mounts it recorded.
func CleanStale(t testing.TB) {
	live := map[string]bool{}
	entries, _ := os.ReadDir(stateDir)
	for _, e := range entries {
		dir := filepath.Join(stateDir, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 && syscall.Kill(pid, 0) == nil {
			live[e.Name()] = true
			continue
		}
		if mounts, err := os.ReadFile(filepath.Join(dir, "mounts")); err == nil {
			for _, m := range strings.Fields(string(mounts)) {
				syscall.Unmount(m, syscall.MNT_DETACH)
			}
		}
		os.RemoveAll(dir)
	}
	idOf := func(name string) string { // ffm-<id>-hNN or ffm<id>...
		s := strings.TrimPrefix(strings.TrimPrefix(name, namePrefix), "-")
		if len(s) < 6 {
			return ""
		}
		return s[:6]
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], namePrefix+"-") || live[idOf(f[0])] {
			continue
		}
		killNamespace(f[0])
		if err := exec.Command("ip", "netns", "del", f[0]).Run(); err == nil {
			t.Logf("removed stale namespace %s", f[0])
		}
	}
	links, _ := net.Interfaces()
	for _, l := range links {
		if strings.HasPrefix(l.Name, namePrefix) && !strings.HasPrefix(l.Name, namePrefix+"-") && !live[idOf(l.Name)] {
			if err := exec.Command("ip", "link", "del", l.Name).Run(); err == nil {
				t.Logf("removed stale link %s", l.Name)
			}
		}
	}
}

// recordMount notes a FUSE mount, so CleanStale can detach it if this run dies.
func (n *Net) recordMount(dir string) {
	f, err := os.OpenFile(filepath.Join(n.state, "mounts"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(f, dir)
	f.Close()
}

// pickSubnet chooses a random 10.x.y.0/24 that no route of the root
// namespace covers.
func pickSubnet(t testing.TB) [3]byte {
	out, _ := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	var used []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for _, w := range f {
			if _, nw, err := net.ParseCIDR(w); err == nil {
				used = append(used, nw)
			}
		}
	}
	for try := 0; try < 100; try++ {
		a, _ := rand.Int(rand.Reader, big.NewInt(50))
		b, _ := rand.Int(rand.Reader, big.NewInt(256))
		s := [3]byte{10, byte(200 + a.Int64()), byte(b.Int64())}
		ip := net.IPv4(s[0], s[1], s[2], 1)
		clash := false
		for _, nw := range used {
			if nw.Contains(ip) {
				clash = true
			}
		}
		if !clash {
			return s
		}
	}
	t.Fatal("no free 10.x.y.0/24 subnet")
	return [3]byte{}
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(errors.New("crypto/rand failed"))
	}
	return hex.EncodeToString(b)
}
