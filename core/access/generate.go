package access

import (
	"crypto/rand"
	"strings"
)

const (
	upperAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// NewKeyID draws an access key id: prefix and random upper-case letters and
// digits, 20 characters in all.
func NewKeyID(prefix string) string { return prefix + random(max(20-len(prefix), 8), upperAlnum) }

// NewSecret draws a secret key of 40 letters and digits (about 238 bits).
func NewSecret() string { return random(40, secretChars) }

func random(n int, alphabet string) string {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	var sb strings.Builder
	// The modulo bias is slight: 40 characters keep well over 200 bits.
	for _, c := range b {
		sb.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return sb.String()
}
