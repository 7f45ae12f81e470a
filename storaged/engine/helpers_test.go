package engine

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/flyfs/flyfs/core/layout"
)

// testOptions keep preallocation small so tests do not eat the disk, and
// keep every chunk in a block (inline_test.go tests inline chunks). Under
// TestSuiteEncrypted (FLYFS_ENGINE_TEST_KEY set) every test's disk is an
// encrypted one.
func testOptions() Options {
	return Options{GroupBlocks: 8, MaxGroupBytes: 64 << 20, ReserveBytes: -1, EncryptionKey: suiteKey(), InlineMax: -1}
}

// suiteKey is the key the whole suite runs under (nil: plain disks).
func suiteKey() []byte {
	if v := os.Getenv("FLYFS_ENGINE_TEST_KEY"); v != "" {
		return []byte(v)
	}
	return nil
}

func openT(t testing.TB, dir string, opts Options) *Engine {
	t.Helper()
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func tkey(chain uint32, ino, idx uint64) Key {
	return Key{Chain: chain, Chunk: layout.MakeChunkID(ino, idx)}
}

// pattern returns n deterministic pseudo-random bytes for seed.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustApply(t testing.TB, e *Engine, k Key, u Update) Meta {
	t.Helper()
	m, err := e.Apply(k, u)
	if err != nil {
		t.Fatalf("Apply(%v): %v", k, err)
	}
	return m
}

// readChunk reads k's whole content through a handle.
func readChunk(t testing.TB, e *Engine, k Key) ([]byte, Meta) {
	t.Helper()
	h, err := e.Get(k)
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	defer h.Release()
	b, err := readHandle(h)
	if err != nil {
		t.Fatalf("read %v: %v", k, err)
	}
	return b, h.Meta()
}

func readHandle(h *Handle) ([]byte, error) {
	b := make([]byte, h.Meta().Len)
	n, err := h.ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	if n != len(b) {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// model is the reference semantics of a chunk, used to check the engine.
type model struct {
	exists bool
	data   []byte
	meta   Meta
}

func (m *model) apply(u Update) {
	var d []byte
	switch {
	case u.Replace:
		d = append([]byte(nil), u.Data...)
	case u.Truncate:
		d = append([]byte(nil), m.data...)
		if int(u.Length) <= len(d) {
			d = d[:u.Length]
		} else {
			d = append(d, make([]byte, int(u.Length)-len(d))...)
		}
	default:
		d = append([]byte(nil), m.data...)
		if len(u.Data) > 0 {
			if end := int(u.Offset) + len(u.Data); end > len(d) {
				d = append(d, make([]byte, end-len(d))...)
			}
			copy(d[u.Offset:], u.Data)
		}
	}
	m.exists, m.data = true, d
	m.meta = Meta{ChainVer: u.ChainVer, CommitVer: u.CommitVer, UpdateVer: u.UpdateVer,
		Len: uint32(len(d)), ChunkSize: u.ChunkSize, Checksum: ContentChecksum(d)}
}

func (m *model) commit(commitVer, chainVer uint32) {
	m.meta.CommitVer, m.meta.ChainVer = commitVer, chainVer
}

func (m *model) remove() { *m = model{} }

// check compares the engine's view of k with the model; returns a reason.
func (m *model) check(e *Engine, k Key) string {
	h, err := e.Get(k)
	if !m.exists {
		if err == nil {
			h.Release()
			return "exists, want missing"
		}
		if !errors.Is(err, ErrNotFound) {
			return "get: " + err.Error()
		}
		return ""
	}
	if err != nil {
		return "get: " + err.Error()
	}
	defer h.Release()
	if h.Meta() != m.meta {
		return "meta differs"
	}
	b, err := readHandle(h)
	if err != nil {
		return "read: " + err.Error()
	}
	if !bytes.Equal(b, m.data) {
		return "content differs"
	}
	return ""
}
