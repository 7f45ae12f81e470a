package storaged

import (
	"errors"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/engine"
)

// engineErrors maps the chunk engine's errors onto wire codes: the one table.
var engineErrors = []struct {
	err  error
	code rpc.Code
}{
	{engine.ErrNotFound, rpc.NotFound},
	{engine.ErrChecksum, rpc.DataLoss},
	{engine.ErrNoSpace, storageapi.CodeNoSpace},
	{engine.ErrReadOnly, storageapi.CodeReadOnly},
	{engine.ErrIO, storageapi.CodeDiskError},
	{engine.ErrOutOfRange, rpc.OutOfRange},
	{engine.ErrChunkSizeMismatch, storageapi.CodeChunkSizeMismatch},
	{engine.ErrInvalid, rpc.InvalidArgument},
	{engine.ErrClosed, rpc.Unavailable},
}

// wireError turns an engine error into an *rpc.Error with its code.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	var re *rpc.Error
	if errors.As(err, &re) {
		return err
	}
	for _, m := range engineErrors {
		if errors.Is(err, m.err) {
			return rpc.Errorf(m.code, "%v", err)
		}
	}
	return rpc.Errorf(rpc.Internal, "%v", err)
}
