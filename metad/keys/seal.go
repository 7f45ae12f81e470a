package keys

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// MasterKeySize is the size of the key that seals access-key secrets
// (AES-256).
const MasterKeySize = 32

// sealer encrypts secrets with AES-256-GCM under the master key, bound to
// their key id, so a sealed secret copied onto another key's record does
// not open.
type sealer struct{ aead cipher.AEAD }

func newSealer(master []byte) (*sealer, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("the master key is %d bytes; want %d", len(master), MasterKeySize)
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal returns nonce || ciphertext of secret, bound to id.
func (s *sealer) seal(id, secret string) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(id))
}

var errUnseal = errors.New("cannot open the sealed secret: a different master key, or a damaged record")

// open reverses seal.
func (s *sealer) open(id string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return "", errUnseal
	}
	p, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return "", errUnseal
	}
	return string(p), nil
}
