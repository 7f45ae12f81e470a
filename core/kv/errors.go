package kv

import (
	"errors"
	"fmt"
)

// Code classifies a KV error.
type Code int

// The error codes. Retryable codes are those a Run loop re-runs the body for.
const (
	CodeConflict       Code = iota + 1 // a read key or range was written after the read version
	CodeTooOld                         // the read version is older than the engine keeps history for
	CodeMaybeCommitted                 // the commit may or may not have been applied
	CodeRetryable                      // a transient failure (throttled, unavailable, injected)
	CodeTxnTooLarge                    // the transaction exceeds the size bound
	CodeTxnTooLong                     // the transaction ran longer than the time bound
	CodeKeyTooLarge
	CodeValueTooLarge
	CodeInvalid      // bad argument: empty range, bad versionstamp offset
	CodeReadOnly     // a write on a read-only transaction
	CodeTxnDone      // use of a transaction after Commit or Cancel
	CodeClosed       // the engine is closed
	CodeTooManyTries // Run gave up
)

var codeNames = map[Code]string{
	CodeConflict:       "transaction conflict",
	CodeTooOld:         "read version too old",
	CodeMaybeCommitted: "commit result unknown (maybe committed)",
	CodeRetryable:      "transient failure",
	CodeTxnTooLarge:    "transaction too large",
	CodeTxnTooLong:     "transaction ran too long",
	CodeKeyTooLarge:    "key too large",
	CodeValueTooLarge:  "value too large",
	CodeInvalid:        "invalid argument",
	CodeReadOnly:       "write in a read-only transaction",
	CodeTxnDone:        "transaction already finished",
	CodeClosed:         "engine closed",
	CodeTooManyTries:   "transaction gave up after too many retries",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("kv code %d", int(c))
}

// Error is the error type of this package. errors.Is matches two Errors with the
// same code, so callers write errors.Is(err, kv.ErrConflict).
type Error struct {
	Code   Code
	Detail string // what happened, for people
	Err    error  // the cause, if any
}

func (e *Error) Error() string {
	s := "kv: " + e.Code.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrConflict       = &Error{Code: CodeConflict}
	ErrTooOld         = &Error{Code: CodeTooOld}
	ErrMaybeCommitted = &Error{Code: CodeMaybeCommitted}
	ErrRetryable      = &Error{Code: CodeRetryable}
	ErrTxnTooLarge    = &Error{Code: CodeTxnTooLarge}
	ErrTxnTooLong     = &Error{Code: CodeTxnTooLong}
	ErrKeyTooLarge    = &Error{Code: CodeKeyTooLarge}
	ErrValueTooLarge  = &Error{Code: CodeValueTooLarge}
	ErrInvalid        = &Error{Code: CodeInvalid}
	ErrReadOnly       = &Error{Code: CodeReadOnly}
	ErrTxnDone        = &Error{Code: CodeTxnDone}
	ErrClosed         = &Error{Code: CodeClosed}
	ErrTooManyTries   = &Error{Code: CodeTooManyTries}
)

// Errorf returns an *Error with the code and a formatted detail.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the code whose cause is err.
func Wrap(code Code, err error, detail string) error {
	return &Error{Code: code, Detail: detail, Err: err}
}

// CodeOf returns the code of the *Error in err's chain, or 0 when there is
// none.
func CodeOf(err error) Code {
	var e *Error
	if !errors.As(err, &e) {
		return 0
	}
	return e.Code
}

// IsRetryable reports whether re-running the whole transaction may succeed.
// ErrMaybeCommitted is retryable: the body must then be idempotent, which is
// exactly what flyfs's metadata layer guarantees with request ids.
func IsRetryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeConflict, CodeTooOld, CodeMaybeCommitted, CodeRetryable, CodeTxnTooLong:
		return true
	}
	return false
}
