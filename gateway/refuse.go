package gateway

import (
	"net/http"
	"strings"
)

// Request headers that ask for something flyfs does not do are refused,
// naming the header, before the operation reads a byte or stores anything:
// accepting a protection we do not give (encryption, Object Lock) would be
// worse than refusing it, and an append taken as a write would replace the
// object. (Object lock is given: objectlock.go.)

type refusal struct {
	headers []string // canonical names
	why     string   // what the header asks for
}

var (
	refuseSSE = refusal{[]string{"X-Amz-Server-Side-Encryption", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id",
		"X-Amz-Server-Side-Encryption-Context", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"},
		"server-side encryption (SSE-S3, SSE-KMS), which flyfs does not provide: objects are stored as they are sent"}
	refuseSSEC = refusal{[]string{"X-Amz-Server-Side-Encryption-Customer-Algorithm", "X-Amz-Server-Side-Encryption-Customer-Key",
		"X-Amz-Server-Side-Encryption-Customer-Key-Md5"},
		"encryption with a customer-provided key (SSE-C), which flyfs does not provide: no object is stored encrypted"}
	refuseSourceSSEC = refusal{[]string{"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm",
		"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Key", "X-Amz-Copy-Source-Server-Side-Encryption-Customer-Key-Md5"},
		"a copy source encrypted with a customer-provided key (SSE-C), which flyfs does not provide: no object is stored encrypted"}
	refuseAppend = refusal{[]string{"X-Amz-Write-Offset-Bytes"},
		"an append at an offset, which flyfs does not support through S3"}
)

// refusalsOf are the refusals each operation makes.
var refusalsOf = map[string][]refusal{
	"PutObject":               {refuseSSE, refuseSSEC, refuseAppend},
	"CopyObject":              {refuseSSE, refuseSSEC, refuseSourceSSEC},
	"CreateMultipartUpload":   {refuseSSE, refuseSSEC},
	"UploadPart":              {refuseSSEC},
	"UploadPartCopy":          {refuseSSEC, refuseSourceSSEC},
	"CompleteMultipartUpload": {refuseSSEC},
	"GetObject":               {refuseSSEC},
	"HeadObject":              {refuseSSEC},
}

// refuseHeaders returns the refusal of the first header in h that op
// refuses (nil if none).
func refuseHeaders(h http.Header, op string) error {
	for _, rf := range refusalsOf[op] {
		for _, name := range rf.headers {
			if _, ok := h[name]; ok {
				return errCode("NotImplemented", "The %s header asks for %s; the request is refused and nothing was stored.", strings.ToLower(name), rf.why)
			}
		}
	}
	return nil
}
