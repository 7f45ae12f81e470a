package engine

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

// Encryption at rest: an engine opened with a key (Options.EncryptionKey)
// keeps every block's content as AES-256-CTR ciphertext. Each block
// allocation draws a fresh random 128-bit IV, kept in the records that
// point at the block (record format 2); the keystream runs with the offset
// inside the block, so any range can be read or written alone.
//
// A keystream position is written at most once per IV: new content goes
// to a freshly allocated block with a new IV (copy-on-write, which
// re-encrypts the bytes it carries over), and an append in place writes
// only past the block's high-water mark, never below it (cutInPlace keeps
// the mark). CRCs cover the plain content, so a read verifies what it
// decrypted. This is confidentiality of the disk's content, not
// authenticity: whoever can write the disk can still corrupt it, which
// the CRCs catch as they catch any corruption.
//
// Whether a disk is encrypted is decided when it is created: the metadata
// store then records a check value of the key ('k'), and an open with no
// key, the wrong key, or a key for a disk created plain is refused.

// keyCheckKey holds HMAC-SHA256(key, keyCheckLabel) on an encrypted disk.
var keyCheckKey = []byte{'k'}

const keyCheckLabel = "flyfs chunk engine key check"

// ErrKey: the engine was opened with a key its disk was not created with
// (or without the key it was).
var ErrKey = errors.New("engine: encryption key does not match the disk")

// contentCipher encrypts block contents; nil on a plain disk.
type contentCipher struct {
	b cipher.Block
}

func newContentCipher(key []byte) (*contentCipher, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("engine: an encryption key is 32 bytes (AES-256), not %d: %w", len(key), ErrInvalid)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return &contentCipher{b: b}, nil
}

// newIV draws a block's IV.
func newIV() ([16]byte, error) {
	var iv [16]byte
	_, err := rand.Read(iv[:])
	return iv, err
}

// xorAt XORs buf with the keystream of iv from block offset off: it
// encrypts plain content and decrypts ciphertext alike.
func (c *contentCipher) xorAt(buf []byte, iv [16]byte, off int64) {
	if len(buf) == 0 {
		return
	}
	// The counter block of offset off is iv + off/16 (a 128-bit big-endian
	// sum); the keystream then skips off%16 bytes.
	hi, lo := binary.BigEndian.Uint64(iv[:8]), binary.BigEndian.Uint64(iv[8:])
	add := uint64(off / aes.BlockSize)
	nlo := lo + add
	if nlo < lo {
		hi++
	}
	var ctr [16]byte
	binary.BigEndian.PutUint64(ctr[:8], hi)
	binary.BigEndian.PutUint64(ctr[8:], nlo)
	s := cipher.NewCTR(c.b, ctr[:])
	if skip := off % aes.BlockSize; skip > 0 {
		var junk [aes.BlockSize]byte
		s.XORKeyStream(junk[:skip], junk[:skip])
	}
	s.XORKeyStream(buf, buf)
}

// checkKey records the key's check value on a disk that holds no chunk yet
// and compares it on one that has it.
func (e *Engine) checkKey(key []byte) error {
	var want []byte
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(keyCheckLabel))
		want = m.Sum(nil)
	}
	v, closer, err := e.db.Get(keyCheckKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if want == nil {
			return nil // plain, as created
		}
		if !e.holdsNoChunk() {
			return fmt.Errorf("engine: %s was created without encryption and holds plain chunks; a key applies to a new disk: %w", e.dir, ErrKey)
		}
		if err := e.setDurable(keyCheckKey, want); err != nil {
			return fmt.Errorf("engine: write the key check: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("engine: read the key check: %w", err)
	}
	defer closer.Close()
	switch {
	case want == nil:
		return fmt.Errorf("engine: %s is encrypted: open it with its key: %w", e.dir, ErrKey)
	case !hmac.Equal(v, want):
		return fmt.Errorf("engine: %s: %w", e.dir, ErrKey)
	}
	return nil
}

// The I/O of block content goes through these: plain on a plain disk,
// through the cipher on an encrypted one. off is the offset inside the
// block, base the block's offset in its file.

// readContent reads block content [off, off+len(p)) into p, decrypted.
func (e *Engine) readContent(f *os.File, loc blockLoc, p []byte, off int64) error {
	return e.readContentVia(f, loc, p, off, false)
}

// readContentVia is readContent, with direct: its whole aligned head past
// the page cache.
func (e *Engine) readContentVia(f *os.File, loc blockLoc, p []byte, off int64, direct bool) error {
	if err := e.opts.Faults.check(OpRead, f.Name()); err != nil {
		return err
	}
	n := 0
	if direct {
		var err error
		if n, err = e.alloc.directOf(loc).read(p, loc.offset()+off); err != nil {
			return err
		}
	}
	if err := preadFull(f, p[n:], loc.offset()+off+int64(n)); err != nil {
		return err
	}
	if e.ciph != nil {
		e.ciph.xorAt(p, loc.iv, off)
	}
	return nil
}

// writeContent writes p as block content at off; p is not modified.
func (e *Engine) writeContent(f *os.File, loc blockLoc, p []byte, off int64, direct bool) error {
	if err := e.opts.Faults.check(OpWrite, f.Name()); err != nil {
		return err
	}
	if e.ciph == nil {
		n := 0
		if direct {
			var err error
			if n, err = e.alloc.directOf(loc).write(p, loc.offset()+off); err != nil || n == len(p) {
				return err
			}
		}
		return pwriteFull(f, p[n:], loc.offset()+off+int64(n))
	}
	sb := getSeg()
	defer putSeg(sb)
	for len(p) > 0 {
		n := min(len(p), len(*sb))
		buf := (*sb)[:n]
		copy(buf, p[:n])
		e.ciph.xorAt(buf, loc.iv, off)
		if err := pwriteFull(f, buf, loc.offset()+off); err != nil {
			return err
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// writeContentInPlace is writeContent for a scratch buffer the caller no
// longer needs: it is encrypted where it lies.
func (e *Engine) writeContentInPlace(f *os.File, loc blockLoc, p []byte, off int64) error {
	if err := e.opts.Faults.check(OpWrite, f.Name()); err != nil {
		return err
	}
	if e.ciph != nil {
		e.ciph.xorAt(p, loc.iv, off)
	}
	return pwriteFull(f, p, loc.offset()+off)
}

// writeZeros writes n zero bytes of content at off.
func (e *Engine) writeZeros(f *os.File, loc blockLoc, off, n int64) error {
	if err := e.opts.Faults.check(OpWrite, f.Name()); err != nil {
		return err
	}
	if e.ciph == nil {
		return pwriteZeros(f, loc.offset()+off, n)
	}
	sb := getSeg()
	defer putSeg(sb)
	for n > 0 {
		m := min(n, int64(len(*sb)))
		buf := (*sb)[:m]
		clear(buf)
		e.ciph.xorAt(buf, loc.iv, off)
		if err := pwriteFull(f, buf, loc.offset()+off); err != nil {
			return err
		}
		off, n = off+m, n-m
	}
	return nil
}

// copyContent carries content [off, off+n) of block src over to block dst
// at the same offset: in the kernel on a plain disk, re-encrypted under
// dst's IV on an encrypted one.
func (e *Engine) copyContent(dstF *os.File, dst blockLoc, srcF *os.File, src blockLoc, off, n int64, buf []byte) error {
	if n <= 0 {
		return nil
	}
	if e.ciph == nil {
		if err := e.opts.Faults.check(OpRead, srcF.Name()); err != nil {
			return err
		}
		if err := e.opts.Faults.check(OpWrite, dstF.Name()); err != nil {
			return err
		}
		return copyRange(dstF, dst.offset()+off, srcF, src.offset()+off, n, buf)
	}
	for n > 0 {
		m := min(n, int64(len(buf)))
		b := buf[:m]
		if err := e.readContent(srcF, src, b, off); err != nil {
			return err
		}
		if err := e.writeContentInPlace(dstF, dst, b, off); err != nil {
			return err
		}
		off, n = off+m, n-m
	}
	return nil
}

// holdsNoChunk says whether the metadata store has no chunk record.
func (e *Engine) holdsNoChunk() bool {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixChunk}, UpperBound: []byte{prefixChunk + 1}})
	if err != nil {
		return false
	}
	defer it.Close()
	return !it.First()
}

// Encrypted says whether the disk keeps its content encrypted.
func (e *Engine) Encrypted() bool { return e.ciph != nil }
