package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
)

// IOOp is a kind of data-file I/O that Faults can fail.
type IOOp int

const (
	OpRead  IOOp = iota // preads of block content (reads, verifies, copy-on-write sources)
	OpWrite             // pwrites and kernel copies into blocks
	OpSync              // fdatasync of a data file
	numIOOps
)

var ioOpNames = [numIOOps]string{"read", "write", "sync"}

func (o IOOp) String() string {
	if o >= 0 && o < numIOOps {
		return ioOpNames[o]
	}
	return fmt.Sprintf("ioop(%d)", int(o))
}

// Faults injects I/O errors into an engine's data-file I/O, as a failing
// disk would return them: the fault drills and tests use it to show what a
// bad disk costs. The zero value (and a nil *Faults) injects nothing; it is
// safe for concurrent use and may change while the engine runs.
type Faults struct {
	errs [numIOOps]atomic.Pointer[syscall.Errno]
}

// Fail makes every later op fail with errno (EIO for a dying disk).
func (f *Faults) Fail(op IOOp, errno syscall.Errno) { f.errs[op].Store(&errno) }

// Heal stops injecting errors into every op.
func (f *Faults) Heal() {
	for i := range f.errs {
		f.errs[i].Store(nil)
	}
}

// Set replaces the injected errors with spec (ParseFaults' result).
func (f *Faults) Set(spec map[IOOp]syscall.Errno) {
	for op := IOOp(0); op < numIOOps; op++ {
		if e, ok := spec[op]; ok {
			f.Fail(op, e)
		} else {
			f.errs[op].Store(nil)
		}
	}
}

// check is the error op gets now, or nil.
func (f *Faults) check(op IOOp, file string) error {
	if f == nil {
		return nil
	}
	if e := f.errs[op].Load(); e != nil {
		return ioErr(op.String()+" "+file+" (injected)", *e)
	}
	return nil
}

// faultErrnos are the errors a fault spec may name.
var faultErrnos = map[string]syscall.Errno{"EIO": syscall.EIO, "ENOSPC": syscall.ENOSPC, "EROFS": syscall.EROFS}

// ParseFaults reads a fault spec: one "<op> <errno>" per line (op: read,
// write or sync; errno: EIO, ENOSPC or EROFS), blank lines and #-comments
// ignored. An empty spec injects nothing.
func ParseFaults(text string) (map[IOOp]syscall.Errno, error) {
	out := map[IOOp]syscall.Errno{}
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("fault spec line %d: %q: want \"<op> <errno>\"", i+1, line)
		}
		op := IOOp(-1)
		for o := IOOp(0); o < numIOOps; o++ {
			if fields[0] == o.String() {
				op = o
			}
		}
		if op < 0 {
			return nil, fmt.Errorf("fault spec line %d: unknown op %q (read, write or sync)", i+1, fields[0])
		}
		e, ok := faultErrnos[strings.ToUpper(fields[1])]
		if !ok {
			return nil, fmt.Errorf("fault spec line %d: unknown errno %q (EIO, ENOSPC or EROFS)", i+1, fields[1])
		}
		out[op] = e
	}
	return out, nil
}
