package rpc

import (
	"fmt"
	"strconv"
	"sync"
)

// Method identifies a remote procedure. Services own disjoint ranges by
// convention: the high byte of the low 16 bits names the service, so
// storaged's methods are 0x03xx, as in
//
//	const MethodWrite rpc.Method = 0x0301
//
// and name them once for logs and metrics with RegisterMethod. Ids are what
// travel; names never do, so renaming a method is free and renumbering one is
// a protocol change.
type Method uint32

var methodNames sync.Map // Method → string

// RegisterMethod names m for logs and metrics. It is meant for package init
// and panics (a programming error) if m already has a different name.
func RegisterMethod(m Method, name string) {
	if prev, loaded := methodNames.LoadOrStore(m, name); loaded && prev.(string) != name {
		panic(fmt.Sprintf("rpc: method %#x registered as both %q and %q", uint32(m), prev, name))
	}
}

// String returns the registered name of m, or its id in hex.
func (m Method) String() string {
	if name, ok := methodNames.Load(m); ok {
		return name.(string)
	}
	return "0x" + strconv.FormatUint(uint64(m), 16)
}
