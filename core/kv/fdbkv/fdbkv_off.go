//go:build !fdb

package fdbkv

import (
	"context"
	"errors"

	"github.com/flyfs/flyfs/core/kv"
)

// Available reports whether this binary was built with FoundationDB support.
const Available = false

// Open fails: this binary was built without `-tags fdb`.
func Open(ctx context.Context, opts Options, kvOpts kv.Options) (*kv.DB, error) {
	return nil, errors.New("fdbkv: this flyfs was built without FoundationDB support; install libfdb_c (foundationdb-clients) and build with `go build -tags fdb`")
}
