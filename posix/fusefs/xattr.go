package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The kernel asks for security.capability before every write (to drop file
// capabilities); answering it here saves a metadata round trip per write.
// flyfs keeps no file capabilities, so setting one is refused.
const xattrCaps = "security.capability"

// unsupportedXattr names attributes that would look stored but not act.
// POSIX ACLs (system.posix_acl_*) are kept and the kernel enforces them
// (EnableAcl); metad keeps them and the mode in step.
func unsupportedXattr(name string) bool {
	return name == xattrCaps
}

func (f *fileSystem) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if isVirt(h.NodeId) || unsupportedXattr(attr) {
		return 0, fuse.ENOATTR
	}
	ctx, done := f.ctx(cancel)
	defer done()
	v, err := f.meta.GetXattr(ctx, h.NodeId, attr)
	if err != nil {
		return 0, f.status(ctx, "getxattr", err)
	}
	if len(dest) < len(v) {
		return uint32(len(v)), fuse.ERANGE
	}
	return uint32(copy(dest, v)), fuse.OK
}

func (f *fileSystem) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if isVirt(h.NodeId) {
		return 0, fuse.OK
	}
	ctx, done := f.ctx(cancel)
	defer done()
	names, err := f.meta.ListXattr(ctx, h.NodeId)
	if err != nil {
		return 0, f.status(ctx, "listxattr", err)
	}
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), fuse.ERANGE
	}
	return uint32(copy(dest, b)), fuse.OK
}

func (f *fileSystem) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if isVirt(in.NodeId) {
		return fuse.EPERM
	}
	if unsupportedXattr(attr) {
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(in.NodeId)
	return f.status(ctx, "setxattr", f.meta.SetXattr(ctx, in.NodeId, attr, data, int(in.Flags)))
}

func (f *fileSystem) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if isVirt(h.NodeId) {
		return fuse.EPERM
	}
	if unsupportedXattr(attr) {
		return fuse.ENOATTR
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(h.NodeId)
	return f.status(ctx, "removexattr", f.meta.RemoveXattr(ctx, h.NodeId, attr))
}
