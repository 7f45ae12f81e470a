package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	Hostname   string `json:"hostname"`
	OS         string `json:"os"`
	Kernel     string `json:"kernel"`
	CPUModel   string `json:"cpu_model"`
	CPUs       int    `json:"cpus"` // usable by this process (nproc)
	Hypervisor bool   `json:"hypervisor"`
	MemTotal   string `json:"mem_total"`
	// The file system holding the server's data, the local directory and
	// the loopback's backing directory.
	DataFS     string `json:"data_fs"`
	DataDevice string `json:"data_device"`
	DataMount  string `json:"data_mount"`
	DiskSize   string `json:"disk_size,omitempty"`
	Rotational string `json:"rotational,omitempty"`
	Scheduler  string `json:"scheduler,omitempty"`
	ReadAhead  string `json:"read_ahead_kb,omitempty"`
	Go         string `json:"go"`
	Flyfs      string `json:"flyfs"`
}

// describeMachine reads /proc and /sys; a figure it cannot read is left
// empty rather than failing the run.
func describeMachine(dataDir, flyfsBin string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS}
	m.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if v := keyValue("/etc/os-release", "PRETTY_NAME", "="); v != "" {
		m.OS = strings.Trim(v, `"`)
	}
	m.CPUModel = keyValue("/proc/cpuinfo", "model name", ":")
	if f := keyValue("/proc/cpuinfo", "flags", ":"); strings.Contains(" "+f+" ", " hypervisor ") {
		m.Hypervisor = true
	}
	if v := keyValue("/proc/meminfo", "MemTotal", ":"); v != "" {
		if kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64); err == nil {
			m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	m.DataFS, m.DataDevice, m.DataMount = mountOf(dataDir)
	if dev := strings.TrimPrefix(m.DataDevice, "/dev/"); dev != m.DataDevice {
		sys := filepath.Join("/sys/class/block", dev)
		if b, err := os.ReadFile(filepath.Join(sys, "size")); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				m.DiskSize = fmt.Sprintf("%.0f GiB", float64(n)*512/(1<<30))
			}
		}
		q := filepath.Join(sys, "queue")
		if _, err := os.Stat(q); err != nil { // a partition: the queue is its disk's
			q = filepath.Join(sys, "..", "queue")
		}
		m.Rotational = readTrim(filepath.Join(q, "rotational"))
		m.Scheduler = readTrim(filepath.Join(q, "scheduler"))
		m.ReadAhead = readTrim(filepath.Join(q, "read_ahead_kb"))
		// "none [mq-deadline] kyber": the one in brackets is in use.
		if i, j := strings.Index(m.Scheduler, "["), strings.Index(m.Scheduler, "]"); i >= 0 && j > i {
			m.Scheduler = m.Scheduler[i+1 : j]
		}
	}
	m.Go = runtime.Version()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command(flyfsBin, "version").Output(); err == nil {
		m.Flyfs = strings.Join(strings.Fields(string(out)), " ")
	}
	return m
}

// keyValue returns the first "key<sep> value" line's value in a file.
func keyValue(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// mountOf finds the mount holding dir in /proc/self/mountinfo: the longest
// mount point that is a prefix of its real path.
func mountOf(dir string) (fstype, source, mountPoint string) {
	p, err := filepath.Abs(dir)
	if err != nil {
		return "", "", ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !ok || len(a) < 5 || len(b) < 2 {
			continue
		}
		mp := unescapeMount(a[4])
		if !within(p, mp) || len(mp) < len(mountPoint) {
			continue
		}
		fstype, source, mountPoint = b[0], b[1], mp
	}
	return fstype, source, mountPoint
}

func within(p, mp string) bool {
	return mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// loadAvg is the 1-minute load average.
func loadAvg() float64 {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
