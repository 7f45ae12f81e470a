package gateway

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"net/http"
	"strings"

	"github.com/minio/crc64nvme"
)

// checksumAlgos are the additional checksums S3 clients send (current SDKs
// send CRC32 or CRC64NVME by default) by their header suffix.
var checksumAlgos = []string{"crc32", "crc32c", "crc64nvme", "sha1", "sha256"}

func newChecksumHash(algo string) hash.Hash {
	switch algo {
	case "crc32":
		return crc32.NewIEEE()
	case "crc32c":
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case "crc64nvme":
		return crc64nvme.New()
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	}
	return nil
}

func checksumHeader(algo string) string { return "x-amz-checksum-" + algo }

// checksumSize is the length of the raw digest of algo.
func checksumSize(algo string) int {
	switch algo {
	case "crc32", "crc32c":
		return 4
	case "crc64nvme":
		return 8
	case "sha1":
		return 20
	case "sha256":
		return 32
	}
	return 0
}

// validChecksumValue says whether v is base64 of a digest of algo's size.
func validChecksumValue(algo, v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(raw) == checksumSize(algo)
}

// checksumSpec is what a request asks to be checked: the algorithm and,
// when the value came in a header, the expected value; when it arrives in a
// trailer the value is filled by the chunked decoder.
type checksumSpec struct {
	algo     string
	expected string // base64; empty until known
	trailer  bool
}

// requestChecksum reads which additional checksum a request carries, from
// x-amz-checksum-<algo> headers or the x-amz-trailer announcement. At most
// one may be given.
func requestChecksum(h http.Header) (*checksumSpec, error) {
	var spec *checksumSpec
	for _, a := range checksumAlgos {
		v := h.Get(checksumHeader(a))
		if v == "" {
			continue
		}
		if spec != nil {
			return nil, errCode("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		if !validChecksumValue(a, v) {
			return nil, errCode("InvalidDigest", "The value of %s is not a valid base64 %s digest.", checksumHeader(a), strings.ToUpper(a))
		}
		spec = &checksumSpec{algo: a, expected: v}
	}
	if t := strings.ToLower(strings.TrimSpace(h.Get("X-Amz-Trailer"))); t != "" {
		if spec != nil {
			return nil, errCode("InvalidRequest", "Expecting a single x-amz-checksum- header.")
		}
		a, ok := strings.CutPrefix(t, "x-amz-checksum-")
		if !ok || newChecksumHash(a) == nil {
			return nil, errCode("InvalidRequest", "The value specified in the x-amz-trailer header is not supported: %q", t)
		}
		spec = &checksumSpec{algo: a, trailer: true}
	}
	if spec == nil {
		// The SDK names an algorithm without a value when the value travels
		// in a trailer; a bare algorithm with no trailer means "compute it",
		// which we do so it can be stored and returned.
		if a := strings.ToLower(h.Get("X-Amz-Sdk-Checksum-Algorithm")); a != "" {
			if newChecksumHash(a) == nil {
				return nil, errCode("InvalidRequest", "Checksum algorithm %q is not supported.", a)
			}
			spec = &checksumSpec{algo: a}
		}
	}
	return spec, nil
}
