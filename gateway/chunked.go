package gateway

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"strconv"
	"strings"
)

// The aws-chunked payload encodings: STREAMING-AWS4-HMAC-SHA256-PAYLOAD
// (every chunk signed, chained from the request's seed signature), its
// -TRAILER variant (plus signed trailing headers) and
// STREAMING-UNSIGNED-PAYLOAD-TRAILER (plain chunks plus trailing headers,
// the default of current SDKs over TLS-less endpoints). The decoder hands
// out only the payload bytes, never the framing.

const (
	maxChunkLine    = 4096
	maxChunkSize    = 1 << 30 // no client sends chunks anywhere near this
	maxTrailerBytes = 16 << 10
)

var errChunkFormat = errCode("IncompleteBody", "The chunked (aws-chunked) payload is malformed.")

// chunkSigner checks chunk signatures; nil for unsigned streams.
type chunkSigner struct {
	key     []byte
	amzDate string
	scope   string
	prevSig string
}

func (s *chunkSigner) chunkSig(dataHash string) string {
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + s.amzDate + "\n" + s.scope + "\n" + s.prevSig + "\n" + emptySHA256 + "\n" + dataHash
	return hex.EncodeToString(hmacSHA256(s.key, sts))
}

func (s *chunkSigner) trailerSig(trailer []byte) string {
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + s.amzDate + "\n" + s.scope + "\n" + s.prevSig + "\n" + sha256Hex(trailer)
	return hex.EncodeToString(hmacSHA256(s.key, sts))
}

// chunkedReader decodes an aws-chunked body.
type chunkedReader struct {
	r        *bufio.Reader
	signer   *chunkSigner // nil: unsigned chunks
	trailers bool         // trailing headers follow the last chunk
	// Trailer holds the trailing headers once the body is read to EOF.
	Trailer map[string]string

	left    int64     // bytes left in the current chunk
	wantSig string    // the current chunk's claimed signature
	h       hash.Hash // sha256 of the current chunk (signed streams)
	started bool
	err     error
}

// chunkedBuffer is the decoder's read buffer: room for the framing lines
// (longer ones are read in pieces). Kept small so a chunk's data, once past
// what came in with its header line, is read straight into the caller's
// buffer: a 64 KiB buffer copied every byte of a large upload once more.
const chunkedBuffer = 1 << 10

func newChunkedReader(r io.Reader, signer *chunkSigner, trailers bool) *chunkedReader {
	cr := &chunkedReader{r: bufio.NewReaderSize(r, chunkedBuffer), signer: signer, trailers: trailers}
	if signer != nil {
		cr.h = sha256.New()
	}
	return cr
}

func (cr *chunkedReader) Read(p []byte) (int, error) {
	if cr.err != nil {
		return 0, cr.err
	}
	for cr.left == 0 {
		if err := cr.nextChunk(); err != nil {
			cr.err = err
			return 0, err
		}
	}
	if int64(len(p)) > cr.left {
		p = p[:cr.left]
	}
	n, err := cr.r.Read(p)
	cr.left -= int64(n)
	if cr.h != nil {
		cr.h.Write(p[:n])
	}
	if err == io.EOF {
		if cr.left > 0 {
			err = io.ErrUnexpectedEOF
		} else {
			err = nil
		}
	}
	if err != nil {
		cr.err = errCode("IncompleteBody", "")
		return n, cr.err
	}
	return n, nil
}

// readLine reads one CRLF-terminated line (without the CRLF). A bare LF is
// accepted, as some encoders send it.
func (cr *chunkedReader) readLine() (string, error) {
	var buf []byte
	for {
		frag, err := cr.r.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > maxChunkLine {
			return "", errChunkFormat
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(buf) == 0 {
				return "", io.EOF
			}
			return "", errChunkFormat
		}
		break
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	return string(buf), nil
}

// endChunk verifies the chunk just read and consumes its CRLF.
func (cr *chunkedReader) endChunk() error {
	if cr.signer != nil {
		got := cr.signer.chunkSig(hex.EncodeToString(cr.h.Sum(nil)))
		if !hmac.Equal([]byte(got), []byte(cr.wantSig)) {
			return errCode("SignatureDoesNotMatch", "The chunk signature does not match.")
		}
		cr.signer.prevSig = got
		cr.h.Reset()
	}
	line, err := cr.readLine()
	if err != nil || line != "" {
		return errChunkFormat
	}
	return nil
}

func (cr *chunkedReader) nextChunk() error {
	if cr.started {
		if err := cr.endChunk(); err != nil {
			return err
		}
	}
	cr.started = true
	line, err := cr.readLine()
	if err != nil {
		return errChunkFormat
	}
	sizeStr, ext, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeStr), 16, 64)
	if err != nil || size < 0 || size > maxChunkSize {
		return errChunkFormat
	}
	cr.wantSig = ""
	if cr.signer != nil {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok || !validSignature(sig) {
			return errCode("IncompleteBody", "A chunk of a signed aws-chunked payload has no valid chunk-signature.")
		}
		cr.wantSig = sig
	}
	if size > 0 {
		cr.left = size
		return nil
	}
	// The last chunk: check its signature (over the empty data), then read
	// the trailing headers, if any, up to the blank line or EOF.
	if cr.signer != nil {
		got := cr.signer.chunkSig(emptySHA256)
		if !hmac.Equal([]byte(got), []byte(cr.wantSig)) {
			return errCode("SignatureDoesNotMatch", "The final chunk signature does not match.")
		}
		cr.signer.prevSig = got
	}
	if err := cr.readTrailers(); err != nil {
		return err
	}
	return io.EOF
}

func (cr *chunkedReader) readTrailers() error {
	cr.Trailer = map[string]string{}
	var signed bytes.Buffer
	trailerSig := ""
	total := 0
	for {
		line, err := cr.readLine()
		if err == io.EOF || (err == nil && line == "") {
			break
		}
		if err != nil {
			return errCode("MalformedTrailerError", "")
		}
		total += len(line)
		if total > maxTrailerBytes {
			return errCode("MalformedTrailerError", "")
		}
		if !cr.trailers {
			return errChunkFormat
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return errCode("MalformedTrailerError", "")
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if k == "x-amz-trailer-signature" {
			trailerSig = v
			continue
		}
		cr.Trailer[k] = v
		signed.WriteString(k + ":" + v + "\n")
	}
	if cr.signer != nil && cr.trailers {
		got := cr.signer.trailerSig(signed.Bytes())
		if !hmac.Equal([]byte(got), []byte(trailerSig)) {
			return errCode("SignatureDoesNotMatch", "The trailer signature does not match.")
		}
	}
	return nil
}

// isChunkedPayload says whether an x-amz-content-sha256 value announces an
// aws-chunked body.
func isChunkedPayload(v string) bool {
	return v == streamingSigned || v == streamingSignedTrailer || v == streamingUnsignedTrailr
}

// sha256Reader checks a body against the SHA256 its signature covered.
type sha256Reader struct {
	r    io.Reader
	h    hash.Hash
	want string
	err  error
}

func newSHA256Reader(r io.Reader, want string) *sha256Reader {
	return &sha256Reader{r: r, h: sha256.New(), want: want}
}

func (s *sha256Reader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		if hex.EncodeToString(s.h.Sum(nil)) != s.want {
			s.err = errCode("XAmzContentSHA256Mismatch", "")
			return n, s.err
		}
	}
	if err != nil {
		s.err = err
	}
	return n, err
}
