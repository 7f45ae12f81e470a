package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Code classifies an error so that it survives the wire and callers can act on
// it (retry on Unavailable, give up on InvalidArgument...). Codes below
// CodeServiceBase belong to this package and follow the familiar gRPC
// numbering; services define their own codes from CodeServiceBase up and name
// them with RegisterCode. A code this build does not know (sent by a newer
// peer) is carried through unchanged.
type Code uint32

// Codes owned by the rpc package.
const (
	OK                 Code = 0
	Canceled           Code = 1  // the caller canceled
	Unknown            Code = 2  // a handler returned an error without a code
	InvalidArgument    Code = 3  // the request is malformed or makes no sense
	DeadlineExceeded   Code = 4  // the deadline passed before the call completed
	NotFound           Code = 5  // the named thing does not exist
	AlreadyExists      Code = 6  // the thing to create exists already
	PermissionDenied   Code = 7  // authenticated, but not allowed
	ResourceExhausted  Code = 8  // a quota, a limit or a size bound was hit
	FailedPrecondition Code = 9  // the system is not in a state to do this
	Aborted            Code = 10 // a conflict (e.g. a transaction) aborted the call; retry from the top
	OutOfRange         Code = 11 // past the end
	Unimplemented      Code = 12 // no handler for the method
	Internal           Code = 13 // an invariant broke (a handler panicked, an encoding failed)
	Unavailable        Code = 14 // transport failure; the call may not have run, retry elsewhere or later
	DataLoss           Code = 15 // unrecoverable loss or corruption of data
	Unauthenticated    Code = 16 // missing or wrong cluster token

	// CodeServiceBase is the first code services may define. Codes in
	// [CodeServiceBase, 1<<32) are theirs; codes below are reserved.
	CodeServiceBase Code = 1 << 16
)

var codeNames = [...]string{
	OK:                 "OK",
	Canceled:           "Canceled",
	Unknown:            "Unknown",
	InvalidArgument:    "InvalidArgument",
	DeadlineExceeded:   "DeadlineExceeded",
	NotFound:           "NotFound",
	AlreadyExists:      "AlreadyExists",
	PermissionDenied:   "PermissionDenied",
	ResourceExhausted:  "ResourceExhausted",
	FailedPrecondition: "FailedPrecondition",
	Aborted:            "Aborted",
	OutOfRange:         "OutOfRange",
	Unimplemented:      "Unimplemented",
	Internal:           "Internal",
	Unavailable:        "Unavailable",
	DataLoss:           "DataLoss",
	Unauthenticated:    "Unauthenticated",
}

var serviceCodeNames sync.Map // Code → string

// RegisterCode names a service-defined code for logs, metrics and error text.
// It is meant for package init and panics (a programming error) if code is
// below CodeServiceBase or already has another name.
func RegisterCode(code Code, name string) {
	if code < CodeServiceBase {
		panic(fmt.Sprintf("rpc: code %d is reserved for package rpc (service codes start at %d)", code, CodeServiceBase))
	}
	if prev, loaded := serviceCodeNames.LoadOrStore(code, name); loaded && prev.(string) != name {
		panic(fmt.Sprintf("rpc: code %d registered as both %q and %q", code, prev, name))
	}
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	if name, ok := serviceCodeNames.Load(c); ok {
		return name.(string)
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Error is an error with a Code. It is what a caller gets back for any failed
// call: the handler's error (its code and text travel over the wire), a
// transport failure (Unavailable), or the caller's own context ending
// (DeadlineExceeded or Canceled).
//
// errors.Is(err, target) holds when target is an *Error with the same code,
// so the sentinels below work as categories: errors.Is(err, rpc.ErrNotFound).
// A DeadlineExceeded or Canceled error also matches context.DeadlineExceeded
// or context.Canceled.
type Error struct {
	Code    Code
	Message string

	cause error // local only, never sent; reachable through Unwrap
	peer  bool  // the peer answered with this error
}

// Errorf returns an *Error with code and a formatted message. A %w verb in
// format makes the wrapped error reachable locally through errors.Is/As; only
// the text crosses the wire.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: err.Error()}
	if errors.Unwrap(err) != nil {
		e.cause = err
	}
	return e
}

// NewError returns an *Error with code and message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "rpc: " + e.Code.String()
	}
	return "rpc: " + e.Code.String() + ": " + e.Message
}

// Unwrap returns the local cause (a network error, a context error), if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, or the context
// error corresponding to DeadlineExceeded or Canceled.
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.Code == DeadlineExceeded
	case context.Canceled:
		return e.Code == Canceled
	}
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; they match any *Error with the same code.
var (
	ErrCanceled           = &Error{Code: Canceled}
	ErrUnknown            = &Error{Code: Unknown}
	ErrInvalidArgument    = &Error{Code: InvalidArgument}
	ErrDeadlineExceeded   = &Error{Code: DeadlineExceeded}
	ErrNotFound           = &Error{Code: NotFound}
	ErrAlreadyExists      = &Error{Code: AlreadyExists}
	ErrPermissionDenied   = &Error{Code: PermissionDenied}
	ErrResourceExhausted  = &Error{Code: ResourceExhausted}
	ErrFailedPrecondition = &Error{Code: FailedPrecondition}
	ErrAborted            = &Error{Code: Aborted}
	ErrOutOfRange         = &Error{Code: OutOfRange}
	ErrUnimplemented      = &Error{Code: Unimplemented}
	ErrInternal           = &Error{Code: Internal}
	ErrUnavailable        = &Error{Code: Unavailable}
	ErrDataLoss           = &Error{Code: DataLoss}
	ErrUnauthenticated    = &Error{Code: Unauthenticated}
)

// CodeOf returns the code of err: OK for nil, the code of the first *Error in
// its chain, DeadlineExceeded or Canceled for context errors, Unknown
// otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return Unknown
}

// toWire turns whatever a handler returned into a code and the text to send.
// An *Error returned as is sends its own message; a wrapped one sends the
// whole chain's text so the context added on the way up is not lost.
func toWire(err error) (Code, string) {
	code, msg := CodeOf(err), err.Error()
	if e, ok := err.(*Error); ok {
		msg = e.Message
	}
	if code == OK { // an *Error with code OK is still a failure
		code = Unknown
	}
	return code, msg
}

// unavailable wraps a transport failure.
// FromPeer reports whether err is an answer the peer sent (its handler
// refused the call), as opposed to one made on this side: no connection, a
// connection that broke, a deadline that passed with no answer.
func FromPeer(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.peer
}

func unavailable(cause error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{Code: Unavailable, Message: msg, cause: cause}
}

// contextError converts the caller's ctx.Err() into a coded error that still
// matches the context error.
func contextError(ctx context.Context, method Method) *Error {
	err := ctx.Err()
	if err == nil { // the deadline has passed but ctx has not noticed yet
		err = context.DeadlineExceeded
	}
	code := Canceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = DeadlineExceeded
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return &Error{Code: code, Message: method.String() + ": " + err.Error(), cause: err}
}
