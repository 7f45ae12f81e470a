package access

import (
	"net"
	"strings"
)

// ValidKeyID says whether id can be an access key id: 3 to 128 of A-Z a-z
// 0-9 - _ . (an id travels in SigV4's Credential field, split on '/').
func ValidKeyID(id string) bool {
	if len(id) < 3 || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// reservedBucketAffixes are the prefixes and suffixes AWS keeps for itself
// (punycode, access point aliases, Object Lambda, directory and table
// buckets): S3 refuses a general purpose bucket named with them.
var (
	reservedBucketPrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedBucketSuffixes = []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}
)

// ValidBucketName follows S3's bucket naming rules: 3 to 63 of a-z 0-9 . -,
// starting and ending with a letter or digit, no "..", ".-" or "-.", not an
// IP address, and none of the prefixes and suffixes AWS reserves.
func ValidBucketName(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; !(isAlnum(c) || c == '.' || c == '-') {
			return false
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return false
	}
	if strings.Contains(b, "..") || strings.Contains(b, ".-") || strings.Contains(b, "-.") {
		return false
	}
	for _, p := range reservedBucketPrefixes {
		if strings.HasPrefix(b, p) {
			return false
		}
	}
	for _, x := range reservedBucketSuffixes {
		if strings.HasSuffix(b, x) {
			return false
		}
	}
	return net.ParseIP(b) == nil
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// ValidateGrants checks a key's per-bucket permissions.
func ValidateGrants(buckets map[string]Permission) error {
	for b, p := range buckets {
		if b != "*" && !ValidBucketName(b) {
			return invalid("bucket %q is not a valid bucket name", b)
		}
		if p != Read && p != ReadWrite {
			return invalid("bucket %q: permission %q, want read or readwrite", b, p)
		}
	}
	return nil
}

// Validate checks a key about to be stored.
func (k *Key) Validate() error {
	if !ValidKeyID(k.ID) {
		return invalid("access key id %q: want 3..128 of A-Z a-z 0-9 - _ .", k.ID)
	}
	if len(k.Secret) < 8 {
		return invalid("secret key: want at least 8 characters")
	}
	if len(k.Description) > 256 {
		return invalid("description: at most 256 bytes")
	}
	return ValidateGrants(k.Buckets)
}
