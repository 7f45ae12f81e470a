package fusefs

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/flyfs/flyfs/core/observe"
)

// op is a FUSE operation the mount serves (the label op of its metrics).
type op uint8

const (
	opLookup op = iota
	opGetAttr
	opSetAttr
	opStatFs
	opMkdir
	opMknod
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opReadlink
	opCreate
	opOpen
	opRead
	opWrite
	opFlush
	opFsync
	opRelease
	opFallocate
	opOpenDir
	opReadDir
	opReadDirPlus
	opReleaseDir
	opFsyncDir
	opGetXAttr
	opListXAttr
	opSetXAttr
	opRemoveXAttr
	numOps
)

var opNames = [numOps]string{
	opLookup: "Lookup", opGetAttr: "GetAttr", opSetAttr: "SetAttr", opStatFs: "StatFs",
	opMkdir: "Mkdir", opMknod: "Mknod", opUnlink: "Unlink", opRmdir: "Rmdir", opRename: "Rename",
	opLink: "Link", opSymlink: "Symlink", opReadlink: "Readlink",
	opCreate: "Create", opOpen: "Open", opRead: "Read", opWrite: "Write", opFlush: "Flush",
	opFsync: "Fsync", opRelease: "Release", opFallocate: "Fallocate",
	opOpenDir: "OpenDir", opReadDir: "ReadDir", opReadDirPlus: "ReadDirPlus", opReleaseDir: "ReleaseDir", opFsyncDir: "FsyncDir",
	opGetXAttr: "GetXAttr", opListXAttr: "ListXAttr", opSetXAttr: "SetXAttr", opRemoveXAttr: "RemoveXAttr",
}

// maxErrno bounds the errnos whose counters are kept resolved (Linux's go
// up to 133); a larger status is counted through the vector.
const maxErrno = 160

// metrics are the mount's Prometheus families (docs/metrics.md): every FUSE
// operation's latency and errors by errno, and the file bytes read and
// written through the mount. Mounts of one process sharing a registerer add
// up. The label children are resolved up front (an error counter on its
// first use), so recording an operation allocates nothing.
type metrics struct {
	duration [numOps]prometheus.Observer
	errVec   *prometheus.CounterVec
	errs     [numOps][maxErrno]atomic.Pointer[prometheus.Counter]
	read     prometheus.Counter
	written  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	dur := observe.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "flyfs", Subsystem: "mount", Name: "op_duration_seconds",
		Help:    "Duration of the FUSE operations the mount served, by operation (its _count is the operations served).",
		Buckets: prometheus.ExponentialBuckets(25e-6, 4, 10), // 25µs .. 6.5s
	}, []string{"op"}))
	m := &metrics{
		errVec: observe.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mount", Name: "op_errors_total",
			Help: "FUSE operations the mount answered with an error, by operation and errno (ENOENT, EACCES, ENODATA, ...).",
		}, []string{"op", "errno"})),
		read: observe.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mount", Name: "read_bytes_total",
			Help: "File bytes read through the mount (what read replies carried).",
		})),
		written: observe.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mount", Name: "written_bytes_total",
			Help: "File bytes written through the mount.",
		})),
	}
	for o := range numOps {
		m.duration[o] = dur.WithLabelValues(opNames[o])
	}
	return m
}

// done records one operation that started at start and answered st.
func (m *metrics) done(o op, start time.Time, st fuse.Status) {
	m.duration[o].Observe(time.Since(start).Seconds())
	if st != fuse.OK {
		m.errCounter(o, st).Inc()
	}
}

func (m *metrics) errCounter(o op, st fuse.Status) prometheus.Counter {
	if st < 0 || st >= maxErrno {
		return m.errVec.WithLabelValues(opNames[o], errnoName(st))
	}
	slot := &m.errs[o][st]
	if c := slot.Load(); c != nil {
		return *c
	}
	c := m.errVec.WithLabelValues(opNames[o], errnoName(st))
	slot.CompareAndSwap(nil, &c)
	return c
}

func errnoName(st fuse.Status) string {
	if name := unix.ErrnoName(syscall.Errno(st)); name != "" {
		return name
	}
	return strconv.Itoa(int(st))
}

// metered is the file system with every operation it serves timed and its
// errors counted. Operations it does not define answer ENOSYS (the kernel
// falls back or stops asking) and are not counted.
type metered struct {
	*fileSystem
	m *metrics
}

func (f *metered) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Lookup(cancel, h, name, out)
	f.m.done(opLookup, t, st)
	return st
}

func (f *metered) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.GetAttr(cancel, in, out)
	f.m.done(opGetAttr, t, st)
	return st
}

func (f *metered) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.SetAttr(cancel, in, out)
	f.m.done(opSetAttr, t, st)
	return st
}

func (f *metered) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.StatFs(cancel, h, out)
	f.m.done(opStatFs, t, st)
	return st
}

func (f *metered) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Mkdir(cancel, in, name, out)
	f.m.done(opMkdir, t, st)
	return st
}

func (f *metered) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Mknod(cancel, in, name, out)
	f.m.done(opMknod, t, st)
	return st
}

func (f *metered) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Unlink(cancel, h, name)
	f.m.done(opUnlink, t, st)
	return st
}

func (f *metered) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Rmdir(cancel, h, name)
	f.m.done(opRmdir, t, st)
	return st
}

func (f *metered) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Rename(cancel, in, oldName, newName)
	f.m.done(opRename, t, st)
	return st
}

func (f *metered) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Link(cancel, in, name, out)
	f.m.done(opLink, t, st)
	return st
}

func (f *metered) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Symlink(cancel, h, target, name, out)
	f.m.done(opSymlink, t, st)
	return st
}

func (f *metered) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	t := time.Now()
	b, st := f.fileSystem.Readlink(cancel, h)
	f.m.done(opReadlink, t, st)
	return b, st
}

func (f *metered) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Create(cancel, in, name, out)
	f.m.done(opCreate, t, st)
	return st
}

func (f *metered) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Open(cancel, in, out)
	f.m.done(opOpen, t, st)
	return st
}

func (f *metered) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	t := time.Now()
	r, st := f.fileSystem.Read(cancel, in, buf)
	f.m.done(opRead, t, st)
	if st == fuse.OK && r != nil {
		f.m.read.Add(float64(r.Size()))
	}
	return r, st
}

func (f *metered) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := f.fileSystem.Write(cancel, in, data)
	f.m.done(opWrite, t, st)
	if st == fuse.OK {
		f.m.written.Add(float64(n))
	}
	return n, st
}

func (f *metered) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Flush(cancel, in)
	f.m.done(opFlush, t, st)
	return st
}

func (f *metered) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Fsync(cancel, in)
	f.m.done(opFsync, t, st)
	return st
}

func (f *metered) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	t := time.Now()
	f.fileSystem.Release(cancel, in)
	f.m.done(opRelease, t, fuse.OK)
}

func (f *metered) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	t := time.Now()
	st := f.fileSystem.Fallocate(cancel, in)
	f.m.done(opFallocate, t, st)
	return st
}

func (f *metered) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	t := time.Now()
	st := f.fileSystem.OpenDir(cancel, in, out)
	f.m.done(opOpenDir, t, st)
	return st
}

func (f *metered) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	st := f.fileSystem.ReadDir(cancel, in, out)
	f.m.done(opReadDir, t, st)
	return st
}

func (f *metered) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	t := time.Now()
	st := f.fileSystem.ReadDirPlus(cancel, in, out)
	f.m.done(opReadDirPlus, t, st)
	return st
}

func (f *metered) ReleaseDir(in *fuse.ReleaseIn) {
	t := time.Now()
	f.fileSystem.ReleaseDir(in)
	f.m.done(opReleaseDir, t, fuse.OK)
}

func (f *metered) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	t := time.Now()
	st := f.fileSystem.FsyncDir(cancel, in)
	f.m.done(opFsyncDir, t, st)
	return st
}

func (f *metered) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := f.fileSystem.GetXAttr(cancel, h, attr, dest)
	f.m.done(opGetXAttr, t, st)
	return n, st
}

func (f *metered) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	t := time.Now()
	n, st := f.fileSystem.ListXAttr(cancel, h, dest)
	f.m.done(opListXAttr, t, st)
	return n, st
}

func (f *metered) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	t := time.Now()
	st := f.fileSystem.SetXAttr(cancel, in, attr, data)
	f.m.done(opSetXAttr, t, st)
	return st
}

func (f *metered) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	t := time.Now()
	st := f.fileSystem.RemoveXAttr(cancel, h, attr)
	f.m.done(opRemoveXAttr, t, st)
	return st
}
