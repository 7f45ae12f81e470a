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
)

// TokenFile is where a cluster's token lives in its state directory.
const TokenFile = "token"

// EnsureToken returns the cluster token kept in dir/token, drawing 256
// random bits into a new file (mode 0600) on the first call; created says
// this call drew it.
func EnsureToken(dir string) (token string, created bool, err error) {
	p := filepath.Join(dir, TokenFile)
	if t, err := ReadToken(p); err == nil {
		return t, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	b := make([]byte, 32)
	rand.Read(b)
	token = hex.EncodeToString(b)
	// O_EXCL: two processes starting on one directory agree on one token.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		t, err := ReadToken(p)
		return t, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("cluster token: %w", err)
	}
	_, werr := f.WriteString(token + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(p)
		return "", false, fmt.Errorf("cluster token: %w", err)
	}
	return token, true, nil
}

// ReadToken reads a token file: its first line, without surrounding space.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	t, _, _ := strings.Cut(string(b), "\n")
	t = strings.TrimSpace(t)
	if t == "" {
		return "", fmt.Errorf("cluster token file %s is empty", path)
	}
	return t, nil
}
