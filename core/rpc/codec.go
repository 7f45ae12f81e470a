package rpc

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Messages are CBOR (RFC 8949) encoded with github.com/fxamacker/cbor/v2.
//
// Message structs should tag every field with a small integer key, keyasint
// and omitempty:
//
//	type WriteReq struct {
//		Chunk   uint64 `cbor:"1,keyasint,omitempty"`
//		Offset  uint32 `cbor:"2,keyasint,omitempty"`
//		Version uint32 `cbor:"3,keyasint,omitempty"`
//	}
//
// Integer keys keep messages small and let a field be renamed freely. To
// evolve a message, add fields with new keys and never reuse or retype an old
// key: a receiver ignores keys it does not know, and a field missing from the
// wire decodes as its zero value, so old and new peers interoperate. Bulk data
// does not belong in a message field; pass it as the call's payload.
//
// An empty message (0 bytes) decodes as the zero value, which is what a nil
// *Req or *Resp encodes to.

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{}).EncMode(); err != nil {
		panic(err)
	}
	// Defaults ignore unknown fields and bound nesting, array and map sizes,
	// which is what untrusted input needs.
	if decMode, err = (cbor.DecOptions{}).DecMode(); err != nil {
		panic(err)
	}
}

func marshal[T any](v *T) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return encMode.Marshal(v)
}

func unmarshal[T any](b []byte, v *T) error {
	if len(b) == 0 {
		return nil
	}
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// helloMsg is the body of KindHello.
type helloMsg struct {
	Token      string `cbor:"1,keyasint,omitempty"`
	MaxMessage uint32 `cbor:"2,keyasint,omitempty"` // the client's receive limits
	MaxPayload uint32 `cbor:"3,keyasint,omitempty"`
}

// helloAckMsg is the body of KindHelloAck.
type helloAckMsg struct {
	MaxMessage uint32 `cbor:"1,keyasint,omitempty"` // the server's receive limits
	MaxPayload uint32 `cbor:"2,keyasint,omitempty"`
}

// errorMsg is the body of a failed KindResponse and of KindError; the code is
// in the header.
type errorMsg struct {
	Message string `cbor:"1,keyasint,omitempty"`
}

// encodeError encodes msg; it cannot fail for a string but falls back to an
// empty body rather than lose the code.
func encodeError(msg string) []byte {
	b, err := encMode.Marshal(&errorMsg{Message: msg})
	if err != nil {
		return nil
	}
	return b
}

// decodeError builds the *Error a failed response or error frame carries. A
// body that does not decode still yields the code.
func decodeError(code Code, b []byte) *Error {
	var m errorMsg
	if err := unmarshal(b, &m); err != nil {
		m.Message = "undecodable error message"
	}
	if code == OK {
		code = Unknown
	}
	return &Error{Code: code, Message: m.Message, peer: true}
}
