package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ensureSecretFile returns the first line of dir/name, writing draw() there
// first (a new file, mode 0600) when there is none; created says this call
// wrote it. O_EXCL makes two processes starting on one directory agree on
// one secret.
func ensureSecretFile(dir, name string, draw func() string) (secret string, created bool, err error) {
	p := filepath.Join(dir, name)
	if s, err := readSecretFile(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return s, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	secret = draw()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		s, err := readSecretFile(p)
		return s, false, err
	}
	if err != nil {
		return "", false, err
	}
	_, werr := f.WriteString(secret + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(p)
		return "", false, err
	}
	return secret, true, nil
}

// readSecretFile reads a secret file's first line, without surrounding space.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s, _, _ := strings.Cut(string(b), "\n")
	if s = strings.TrimSpace(s); s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}
