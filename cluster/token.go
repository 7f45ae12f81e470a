package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// TokenFile is where a cluster's token lives in its state directory.
const TokenFile = "token"

// EnsureToken returns the cluster token kept in dir/token, drawing 256
// random bits into a new file (mode 0600) on the first call; created says
// this call drew it.
func EnsureToken(dir string) (token string, created bool, err error) {
	token, created, err = ensureSecretFile(dir, TokenFile, func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return hex.EncodeToString(b)
	})
	if err != nil {
		return "", false, fmt.Errorf("cluster token: %w", err)
	}
	return token, created, nil
}

// ReadToken reads a token file: its first line, without surrounding space.
func ReadToken(path string) (string, error) {
	t, err := readSecretFile(path)
	if err != nil {
		return "", fmt.Errorf("cluster token: %w", err)
	}
	return t, nil
}
