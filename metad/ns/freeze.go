package ns

import (
	"context"
	"errors"
	"time"
)

// The freeze. A snapshot too large for one transaction copies its tree in
// several (snapshot.go), and the namespace must not change between them, or
// the copy would not be the tree at one moment. So it first sets the FRZE
// key, which every other change reads with conflict tracking (a change
// racing the freeze's commit aborts and retries): while the freeze holds,
// changes wait, and resume when the snapshot thaws it, or at Until if the
// snapshot's metad died (every batch pushes Until on). Writes of open files' data go on (files open for
// writing are not captured anyway).
//
//	FRZE -> freezeRecord

var keyFreeze = []byte("FRZE")

// freezeRecord says who froze the namespace (the snapshot and its request)
// and until when (unix ns).
type freezeRecord struct {
	Snapshot string    `cbor:"1,keyasint"`
	Until    int64     `cbor:"2,keyasint"`
	Req      RequestID `cbor:"3,keyasint,omitempty"`
}

// errFrozen makes a change wait for the thaw (never recorded as an answer:
// it is no Errno).
var errFrozen = errors.New("ns: the namespace is frozen for a snapshot")

// maxFreeze bounds a freeze past a snapshot's last batch (each renews it):
// a snapshot whose metad died holds changes up that long at most.
const maxFreeze = 30 * time.Second

// checkFrozen fails with errFrozen while a freeze holds.
func (o *op) checkFrozen() error {
	v, found, err := o.tx.Get(o.ctx, keyFreeze)
	if err != nil || !found {
		return err
	}
	var f freezeRecord
	if err := decode(v, &f); err != nil {
		return err
	}
	if o.now < f.Until {
		return errFrozen
	}
	return nil
}

// waitThaw sleeps a little before a frozen change tries again.
func waitThaw(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return errors.Join(errFrozen, ctx.Err())
	case <-time.After(20 * time.Millisecond):
		return nil
	}
}
