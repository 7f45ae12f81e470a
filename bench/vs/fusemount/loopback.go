package fusemount

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// daemonNode is go-fuse's loopback node whose files refuse FUSE
// passthrough. As root on Linux 6.9 and later, go-fuse hands the kernel the
// backing file of each open file, and reads and writes then bypass the FUSE
// daemon entirely: that measures the local disk under another name, not the
// cost of FUSE. flyfs's data is remote and always goes through the daemon,
// so the ceiling it is held to must too.
type daemonNode struct{ fs.LoopbackNode }

// daemonFile is a loopback file that declines passthrough (go-fuse asks
// each file handle for its backing fd and skips passthrough when refused).
type daemonFile struct{ *fs.LoopbackFile }

func (daemonFile) PassthroughFd() (int, bool) { return 0, false }

func noPassthrough(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return daemonFile{lf}
	}
	return fh
}

var _ = (fs.NodeOpener)((*daemonNode)(nil))
var _ = (fs.NodeCreater)((*daemonNode)(nil))

func (n *daemonNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	return noPassthrough(fh), fl, errno
}

func (n *daemonNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, noPassthrough(fh), fl, errno
}

// NewDaemonLoopback is fs.NewLoopbackRoot with daemonNodes: the FUSE
// ceiling a network file system is compared with (tools/benchreport uses it too).
func NewDaemonLoopback(dir string) (fs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, err
	}
	root := &fs.LoopbackRoot{Path: dir, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &daemonNode{fs.LoopbackNode{RootData: r}}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	return root.RootNode, nil
}
