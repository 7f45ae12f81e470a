package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
)

const encryptionKeyHelp = `file holding the key that encrypts chunk content at rest on new disks (32 bytes, raw or as 64 hex digits; make one with: head -c 32 /dev/urandom > KEYFILE). Keep it apart from the data directories: a disk created with it opens only with it`

// readEncryptionKey reads --encryption-key-file ("" : no key).
func readEncryptionKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--encryption-key-file: %w", err)
	}
	if len(b) == 32 {
		return b, nil
	}
	t := bytes.TrimSpace(b)
	if k, err := hex.DecodeString(string(t)); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, fmt.Errorf("--encryption-key-file %s: a key is 32 bytes, raw or as 64 hex digits; this file has %d bytes", path, len(b))
}
