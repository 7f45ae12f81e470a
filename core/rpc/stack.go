package rpc

// handlerStack is about the stack a deep handler reaches (DeepStack: a KV
// transaction through Pebble's iterators, CBOR). A handler runs on a fresh
// goroutine, whose stack starts small and doubles as it deepens; each
// doubling copies the stack and walks every frame on it, which at depth
// cost a tenth of the CPU of a metadata call. Growing it once at the start,
// when there is one frame to walk, costs zeroing the pad (about 1 µs; far
// more under the race detector, so shallow handlers do without).
const handlerStack = 32 << 10

// growStack makes the calling goroutine's stack at least handlerStack deep.
//
//go:noinline
func growStack() {
	var pad [handlerStack - 2<<10]byte
	touchStack(pad[:])
}

//go:noinline
func touchStack(b []byte) { b[0] = 1 }
