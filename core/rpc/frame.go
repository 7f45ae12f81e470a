package rpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
)

// Wire format.
//
// Every frame is a fixed 40-byte header, then MsgLen bytes of encoded message
// (CBOR, see codec.go), then PayloadLen bytes of raw payload. The payload is
// bulk data (chunk contents and the like): it is never encoded, escaped or
// copied into the message, so large transfers cost one kernel copy per side.
//
// Header layout, all integers little-endian:
//
//	offset size field
//	 0      4   magic       "FLYR" (0x46 0x4c 0x59 0x52)
//	 4      1   version     ProtocolVersion (1)
//	 5      1   kind        Kind: hello, hello-ack, request, response, cancel, go-away, error
//	 6      2   flags       of a request: FlagRelaxed (durability.go); other bits are
//	                        reserved, sent as 0 and ignored
//	 8      8   request id  chosen by the client, unique among its in-flight calls on a connection
//	16      4   method      Method of a request (echoed in its response)
//	20      4   code        Code of a response or error frame; 0 (OK) otherwise
//	24      4   timeout     request time budget in milliseconds, 0 = none; relative, so
//	                        clocks need not agree
//	28      4   msg len     length of the encoded message that follows the header
//	32      4   payload len length of the raw payload that follows the message
//	36      4   crc         CRC-32C (Castagnoli) of bytes 0..35
//
// The header checksum lets a receiver reject a corrupted or misaligned stream
// before trusting the lengths in it. The message and payload are not
// checksummed here: TCP checksums them in transit, and stored data carries its
// own end-to-end checksums at the chunk layer.
//
// Invariants a decoder enforces before reading the body: the magic matches,
// the version is ProtocolVersion, the checksum matches, the kind is known, and
// both lengths are within the receiver's Limits. Any violation means the
// stream cannot be trusted any more, so the connection is closed.

// HeaderSize is the size in bytes of a frame header.
const HeaderSize = 40

// ProtocolVersion is the version of the frame format this package speaks.
const ProtocolVersion = 1

// magic opens every frame: "FLYR".
const magic uint32 = 'F' | 'L'<<8 | 'Y'<<16 | 'R'<<24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind says what a frame is for.
type Kind uint8

// Frame kinds. A connection starts with Hello from the client, answered by
// HelloAck (accepted) or Error (refused) from the server.
const (
	KindHello    Kind = 1 // client → server, first frame: token and limits
	KindHelloAck Kind = 2 // server → client: accepted, with the server's limits
	KindRequest  Kind = 3 // client → server: a call
	KindResponse Kind = 4 // server → client: result of a call, matched by request id
	KindCancel   Kind = 5 // client → server: the caller gave up on request id
	KindGoAway   Kind = 6 // server → client: send no new calls here, finish the others
	KindError    Kind = 7 // either way: connection-level error, the sender closes next

	kindMax = KindError
)

var kindNames = [...]string{
	KindHello:    "hello",
	KindHelloAck: "hello-ack",
	KindRequest:  "request",
	KindResponse: "response",
	KindCancel:   "cancel",
	KindGoAway:   "go-away",
	KindError:    "error",
}

func (k Kind) String() string {
	if k >= 1 && k <= kindMax {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Decoder errors. They are returned wrapped, with details; test with errors.Is.
var (
	ErrBadMagic      = errors.New("rpc: bad frame magic")
	ErrBadVersion    = errors.New("rpc: unsupported protocol version")
	ErrBadChecksum   = errors.New("rpc: frame header checksum mismatch")
	ErrBadKind       = errors.New("rpc: unknown frame kind")
	ErrFrameTooLarge = errors.New("rpc: frame too large")
	// ErrTruncated means the stream ended inside a frame. It also matches
	// io.ErrUnexpectedEOF. A stream that ends exactly between frames gives
	// io.EOF instead.
	ErrTruncated = errors.New("rpc: truncated frame")
)

// Default limits of one frame.
const (
	DefaultMaxMessage = 1 << 20  // 1 MiB of encoded message
	DefaultMaxPayload = 64 << 20 // 64 MiB of payload
)

// Limits bound the size of frames a receiver accepts. A zero field means the
// default. Both sides announce their limits in the handshake, and a sender
// refuses locally (ResourceExhausted) to send what its peer would reject.
type Limits struct {
	MaxMessage uint32
	MaxPayload uint32
}

func (l Limits) withDefaults() Limits {
	if l.MaxMessage == 0 {
		l.MaxMessage = DefaultMaxMessage
	}
	if l.MaxPayload == 0 {
		l.MaxPayload = DefaultMaxPayload
	}
	return l
}

// Header is the decoded fixed part of a frame (magic and checksum excluded).
type Header struct {
	Kind       Kind
	Flags      uint16
	ID         uint64
	Method     Method
	Code       Code
	Timeout    uint32 // milliseconds, 0 = none
	MsgLen     uint32
	PayloadLen uint32
}

// Put encodes h, with magic, version and checksum, into b[:HeaderSize].
func (h *Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint32(b[0:], magic)
	b[4] = ProtocolVersion
	b[5] = byte(h.Kind)
	binary.LittleEndian.PutUint16(b[6:], h.Flags)
	binary.LittleEndian.PutUint64(b[8:], h.ID)
	binary.LittleEndian.PutUint32(b[16:], uint32(h.Method))
	binary.LittleEndian.PutUint32(b[20:], uint32(h.Code))
	binary.LittleEndian.PutUint32(b[24:], h.Timeout)
	binary.LittleEndian.PutUint32(b[28:], h.MsgLen)
	binary.LittleEndian.PutUint32(b[32:], h.PayloadLen)
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
}

// ParseHeader decodes and validates a frame header from b, which must hold at
// least HeaderSize bytes. On ErrFrameTooLarge the returned header is filled in
// so the caller can report which frame it was.
func ParseHeader(b []byte, lim Limits) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header has %d of %d bytes", ErrTruncated, len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != magic {
		return Header{}, fmt.Errorf("%w: %#08x", ErrBadMagic, m)
	}
	if v := b[4]; v != ProtocolVersion {
		return Header{}, fmt.Errorf("%w: %d (want %d)", ErrBadVersion, v, ProtocolVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[36:]), crc32.Checksum(b[:36], castagnoli); got != want {
		return Header{}, fmt.Errorf("%w: got %#08x, computed %#08x", ErrBadChecksum, got, want)
	}
	h := Header{
		Kind:       Kind(b[5]),
		Flags:      binary.LittleEndian.Uint16(b[6:]),
		ID:         binary.LittleEndian.Uint64(b[8:]),
		Method:     Method(binary.LittleEndian.Uint32(b[16:])),
		Code:       Code(binary.LittleEndian.Uint32(b[20:])),
		Timeout:    binary.LittleEndian.Uint32(b[24:]),
		MsgLen:     binary.LittleEndian.Uint32(b[28:]),
		PayloadLen: binary.LittleEndian.Uint32(b[32:]),
	}
	if h.Kind < 1 || h.Kind > kindMax {
		return h, fmt.Errorf("%w: %d", ErrBadKind, uint8(h.Kind))
	}
	lim = lim.withDefaults()
	if h.MsgLen > lim.MaxMessage {
		return h, fmt.Errorf("%w: %s message of %d bytes exceeds %d", ErrFrameTooLarge, h.Kind, h.MsgLen, lim.MaxMessage)
	}
	if h.PayloadLen > lim.MaxPayload {
		return h, fmt.Errorf("%w: %s payload of %d bytes exceeds %d", ErrFrameTooLarge, h.Kind, h.PayloadLen, lim.MaxPayload)
	}
	return h, nil
}

// Frame is one decoded frame. Msg and Payload are owned by the receiver and
// alias nothing else; a small frame's parts share one backing array but
// neither can grow into the other, and a large payload has its own pooled
// buffer (see ReleasePayload).
type Frame struct {
	Header
	Msg     []byte
	Payload []byte
}

// ReadFrame reads one frame from r, rejecting frames beyond lim (zero fields
// mean the defaults). It never panics on any input. It returns io.EOF if r
// ends cleanly before a frame starts, and otherwise an error matching one of
// ErrBadMagic, ErrBadVersion, ErrBadChecksum, ErrBadKind, ErrFrameTooLarge,
// ErrTruncated, or the reader's own error.
func ReadFrame(r io.Reader, lim Limits) (Frame, error) {
	var hdr [HeaderSize]byte
	return readFrame(r, hdr[:], lim)
}

func readFrame(r io.Reader, hdr []byte, lim Limits) (Frame, error) {
	if _, err := io.ReadFull(r, hdr); err != nil {
		return Frame{}, truncated(err, "header")
	}
	h, err := ParseHeader(hdr, lim)
	if err != nil {
		return Frame{Header: h}, err
	}
	return readBody(r, h)
}

// readBody reads the message and payload of the frame whose header is h.
func readBody(r io.Reader, h Header) (Frame, error) {
	f := Frame{Header: h}
	m, p := int(h.MsgLen), int(h.PayloadLen)
	if p >= minPooled {
		// A large payload gets its own buffer, from the pool (see
		// bufpool.go), read straight into (bufio passes large reads
		// through), so its bytes are copied only by the kernel.
		if m > 0 {
			f.Msg = make([]byte, m)
			if _, err := io.ReadFull(r, f.Msg); err != nil {
				return Frame{Header: h}, truncated(err, "body")
			}
		}
		f.Payload = getPayloadBuffer(p)
		if _, err := io.ReadFull(r, f.Payload); err != nil {
			ReleasePayload(f.Payload)
			return Frame{Header: h}, truncated(err, "body")
		}
		return f, nil
	}
	if m+p == 0 {
		return f, nil
	}
	// Small frames: one allocation for both parts.
	buf := make([]byte, m+p)
	if _, err := io.ReadFull(r, buf); err != nil {
		return Frame{Header: h}, truncated(err, "body")
	}
	if m > 0 {
		f.Msg = buf[:m:m]
	}
	if p > 0 {
		f.Payload = buf[m:]
	}
	return f, nil
}

// truncated turns the EOFs of io.ReadFull into ErrTruncated (io.EOF at the
// very start of a header is a clean end of stream and stays io.EOF).
func truncated(err error, part string) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: stream ended inside frame %s: %w", ErrTruncated, part, io.ErrUnexpectedEOF)
	case errors.Is(err, io.EOF) && part == "body":
		return fmt.Errorf("%w: stream ended before frame %s: %w", ErrTruncated, part, io.ErrUnexpectedEOF)
	}
	return err
}

// frameReader reads frames from a buffered connection without allocating for
// headers; small frames come out of the buffer, large payloads bypass it.
type frameReader struct {
	br  *bufio.Reader
	lim Limits
	hdr [HeaderSize]byte
}

// handshakeLimits bound frames before the peer is authenticated, so that a
// stranger cannot make us allocate a full-size frame buffer.
var handshakeLimits = Limits{MaxMessage: 4 << 10, MaxPayload: 1} // 1, since 0 means the default

func newFrameReader(r io.Reader, size int, lim Limits) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, size), lim: lim.withDefaults()}
}

func (fr *frameReader) next() (Frame, error) {
	return readFrame(fr.br, fr.hdr[:], fr.lim)
}

// nextHandshake reads a handshake frame under handshakeLimits.
func (fr *frameReader) nextHandshake() (Frame, error) {
	return readFrame(fr.br, fr.hdr[:], handshakeLimits)
}

// WriteFrame writes one frame to w in a single vectored write where w
// supports it. h's MsgLen and PayloadLen are set from msg and payload. It is
// meant for tests and tools; connections use the coalescing writer.
func WriteFrame(w io.Writer, h Header, msg, payload []byte) error {
	if uint64(len(msg)) > 1<<32-1 || uint64(len(payload)) > 1<<32-1 {
		return fmt.Errorf("%w: body does not fit a frame", ErrFrameTooLarge)
	}
	h.MsgLen, h.PayloadLen = uint32(len(msg)), uint32(len(payload))
	var hdr [HeaderSize]byte
	h.Put(hdr[:])
	bufs := net.Buffers{hdr[:], msg, payload}
	_, err := bufs.WriteTo(w)
	return err
}
