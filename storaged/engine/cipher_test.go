package engine

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSuiteEncrypted runs this package's every test again on encrypted
// disks (the same binary, with FLYFS_ENGINE_TEST_KEY set): writes, copy-
// on-write, appends and cuts in place, crashes, corruption and recovery
// all hold as they do in plain.
func TestSuiteEncrypted(t *testing.T) {
	if suiteKey() != nil {
		t.Skip("this is the encrypted run")
	}
	if testing.Short() {
		t.Skip("-short: the encrypted run of the suite is skipped")
	}
	args := []string{"-test.run", "^Test", "-test.skip", "^TestSuiteEncrypted$", "-test.count=1"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FLYFS_ENGINE_TEST_KEY=0123456789abcdef0123456789abcdef")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite on encrypted disks: %v\n%s", err, out)
	}
}

// TestXorAt: the keystream of any offset is the one CTR gives from the
// start, across the carry of the counter's low 64 bits too.
func TestXorAt(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	c, err := newContentCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := aes.NewCipher(key)
	for _, iv := range [][16]byte{
		{1, 2, 3},
		{0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, // the low half carries after 32 bytes
	} {
		const n = 4096
		want := make([]byte, n)
		cipher.NewCTR(b, iv[:]).XORKeyStream(want, want)
		for _, off := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 4095} {
			for _, l := range []int64{1, 7, 16, 100} {
				if off+l > n {
					continue
				}
				got := make([]byte, l)
				c.xorAt(got, iv, off)
				if !bytes.Equal(got, want[off:off+l]) {
					t.Fatalf("iv %x offset %d length %d: keystream differs", iv, off, l)
				}
			}
		}
	}
	if _, err := newContentCipher([]byte("short")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a 5-byte key: %v", err)
	}
}

// TestEncryptedDiskHoldsCiphertext: the data files of an encrypted disk do
// not hold the content written (a plain disk's do), and the content reads
// back after a reopen.
func TestEncryptedDiskHoldsCiphertext(t *testing.T) {
	content := bytes.Repeat([]byte("flyfs-plaintext-marker "), 20000) // 460 KB
	for _, tc := range []struct {
		name  string
		key   []byte
		found bool
	}{{"plain", nil, true}, {"encrypted", bytes.Repeat([]byte{9}, 32), false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions()
			opts.EncryptionKey = tc.key
			e := openT(t, dir, opts)
			k := tkey(1, 1, 0)
			mustApply(t, e, k, Update{Data: content, UpdateVer: 1, ChunkSize: 1 << 20})
			// An append in place and a rewrite of the middle (copy-on-write).
			mustApply(t, e, k, Update{Offset: uint32(len(content)), Data: content[:1000], UpdateVer: 2, ChunkSize: 1 << 20})
			mustApply(t, e, k, Update{Offset: 70000, Data: []byte("changed"), UpdateVer: 3, ChunkSize: 1 << 20})
			want := append(append([]byte{}, content...), content[:1000]...)
			copy(want[70000:], "changed")
			if got, _ := readChunk(t, e, k); !bytes.Equal(got, want) {
				t.Fatal("the chunk does not read back")
			}
			e.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "data", "*"))
			found := false
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				found = found || bytes.Contains(b, []byte("flyfs-plaintext-marker"))
			}
			if found != tc.found {
				t.Fatalf("the content is on the disk in plain: %v, want %v", found, tc.found)
			}
			e2 := openT(t, dir, opts)
			if got, _ := readChunk(t, e2, k); !bytes.Equal(got, want) {
				t.Fatal("the chunk does not read back after a reopen")
			}
		})
	}
}

// TestEncryptionKeyChecks: a disk opens with the key it was created with
// and no other; a plain disk that holds chunks does not take a key.
func TestEncryptionKeyChecks(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	open := func(dir string, key []byte) (*Engine, error) {
		opts := testOptions()
		opts.EncryptionKey = key
		return Open(dir, opts)
	}
	enc := t.TempDir()
	e, err := open(enc, key)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, tkey(1, 1, 0), Update{Data: []byte("secret"), UpdateVer: 1, ChunkSize: 1 << 20})
	e.Close()
	for name, k := range map[string][]byte{"without its key": nil, "with another key": other} {
		if e, err := open(enc, k); !errors.Is(err, ErrKey) {
			if e != nil {
				e.Close()
			}
			t.Errorf("an encrypted disk %s: %v", name, err)
		}
	}
	plain := t.TempDir()
	e, err = open(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, tkey(1, 1, 0), Update{Data: []byte("plain"), UpdateVer: 1, ChunkSize: 1 << 20})
	e.Close()
	if e, err := open(plain, key); !errors.Is(err, ErrKey) {
		if e != nil {
			e.Close()
		}
		t.Errorf("a plain disk holding chunks opened with a key: %v", err)
	}
	empty := t.TempDir()
	if e, err := open(empty, nil); err != nil {
		t.Fatal(err)
	} else {
		e.Close()
	}
	e, err = open(empty, key)
	if err != nil {
		t.Fatalf("a plain disk without chunks takes a key: %v", err)
	}
	e.Close()
	if e, err := open(empty, nil); !errors.Is(err, ErrKey) {
		if e != nil {
			e.Close()
		}
		t.Errorf("once keyed, the disk opens only with its key: %v", err)
	}
}
