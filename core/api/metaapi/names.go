package metaapi

import "github.com/flyfs/flyfs/core/rpc"

// The methods' names, for logs and metrics (the method label of the RPC
// metrics, the op label of metad's).
func init() {
	rpc.RegisterMethod(MethodStat, "metad.Stat")
	rpc.RegisterMethod(MethodLookup, "metad.Lookup")
	rpc.RegisterMethod(MethodResolve, "metad.Resolve")
	rpc.RegisterMethod(MethodCreate, "metad.Create")
	rpc.RegisterMethod(MethodMkdir, "metad.Mkdir")
	rpc.RegisterMethod(MethodReadDir, "metad.ReadDir")
	rpc.RegisterMethod(MethodUnlink, "metad.Unlink")
	rpc.RegisterMethod(MethodRmdir, "metad.Rmdir")
	rpc.RegisterMethod(MethodRename, "metad.Rename")
	rpc.RegisterMethod(MethodClose, "metad.Close")
	rpc.RegisterMethod(MethodSetAttr, "metad.SetAttr")
	rpc.RegisterMethod(MethodSymlink, "metad.Symlink")
	rpc.RegisterMethod(MethodLink, "metad.Link")
	rpc.RegisterMethod(MethodReadlink, "metad.Readlink")
	rpc.RegisterMethod(MethodReport, "metad.Report")
	rpc.RegisterMethod(MethodMkdirAll, "metad.MkdirAll")
	rpc.RegisterMethod(MethodRemoveAll, "metad.RemoveAll")
	rpc.RegisterMethod(MethodOpen, "metad.Open")
	rpc.RegisterMethod(MethodStatFS, "metad.StatFS")
	rpc.RegisterMethod(MethodGetXattr, "metad.GetXattr")
	rpc.RegisterMethod(MethodSetXattr, "metad.SetXattr")
	rpc.RegisterMethod(MethodListXattr, "metad.ListXattr")
	rpc.RegisterMethod(MethodRemoveXattr, "metad.RemoveXattr")
	rpc.RegisterMethod(MethodSetLayout, "metad.SetLayout")
	rpc.RegisterMethod(MethodGetLayout, "metad.GetLayout")
	rpc.RegisterMethod(MethodFsck, "metad.Fsck")
	rpc.RegisterMethod(MethodMknod, "metad.Mknod")
	rpc.RegisterMethod(MethodSync, "metad.Sync")
}
