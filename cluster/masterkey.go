package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
	s, _, err := ensureSecretFile(dir, MasterKeyFile, func() string {
		k := make([]byte, keys.MasterKeySize)
		rand.Read(k)
		return hex.EncodeToString(k)
	})
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return ParseMasterKey(s)
}

// ReadMasterKey reads a master key file: the key in hex on its first line.
func ReadMasterKey(path string) ([]byte, error) {
	s, err := readSecretFile(path)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return ParseMasterKey(s)
}

// ParseMasterKey decodes a master key given in hex.
func ParseMasterKey(s string) ([]byte, error) {
	k, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) != keys.MasterKeySize {
		return nil, fmt.Errorf("a master key is %d bytes in hex (%d hex digits)", keys.MasterKeySize, 2*keys.MasterKeySize)
	}
	return k, nil
}
