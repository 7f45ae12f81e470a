package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flyfs/flyfs/metad/keys"
)

// MasterKeyFile is where a cluster's master key lives in its state
// directory: the key that seals access-key secrets in the metadata store,
// kept apart from the store's own files.
const MasterKeyFile = "master.key"

// EnsureMasterKey returns the master key kept in dir/master.key, drawing a
// new one into the file (mode 0600) on the first call.
func EnsureMasterKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, MasterKeyFile)
	if k, err := ReadMasterKey(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k := make([]byte, keys.MasterKeySize)
	rand.Read(k)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadMasterKey(p) // drawn by another process starting on dir
	}
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(k) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("master key: %w", err)
	}
	return k, nil
}

// ReadMasterKey reads a master key file: the key in hex on its first line.
func ReadMasterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return ParseMasterKey(line)
}

// ParseMasterKey decodes a master key given in hex.
func ParseMasterKey(s string) ([]byte, error) {
	k, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) != keys.MasterKeySize {
		return nil, fmt.Errorf("a master key is %d bytes in hex (%d hex digits)", keys.MasterKeySize, 2*keys.MasterKeySize)
	}
	return k, nil
}
