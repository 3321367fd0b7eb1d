package service

import (
	"errors"
	"fmt"

	"metad/store"
)

// The service's errors say what went wrong; the gRPC adapter (package server) alone turns them into
// statuses. Every error a method returns is one of:
//   - ErrForward: this node does not lead; the request was validated and nothing else was done;
//   - *Error: the request failed, with the tenant and key it is about; its cause is a *store.Error
//     (a rejection, INVALID_PARAMS for bad input), an error of package ha (not the leader, outcome
//     unknown, timeout, shutdown), a context error, ErrInternal or ErrUnimplemented.

// ErrForward says that this node does not lead and the request, valid, was not acted on.
var ErrForward = errors.New("service: not the leader; the request is for the leader")

// ErrInternal marks a broken expectation (a result of the wrong shape).
var ErrInternal = errors.New("internal error")

// ErrUnimplemented marks a call the node cannot serve (a Backend without Snapshots).
var ErrUnimplemented = errors.New("not implemented")

// Error is a failed request: Err is the cause, Tenant and Key what the request was about (either
// may be empty).
type Error struct {
	Err    error
	Tenant string
	Key    []byte
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// fail wraps err with the tenant and key of the request (nil stays nil, ErrForward and an *Error
// stay as they are).
func fail(err error, tenant string, key []byte) error {
	var e *Error
	if err == nil || errors.Is(err, ErrForward) || errors.As(err, &e) {
		return err
	}
	return &Error{Err: err, Tenant: tenant, Key: key}
}

// rejected is the error of a command's result (nil when it was applied).
func rejected(res *store.Result, tenant string, key []byte) error {
	if res.Reason == store.OK {
		return nil
	}
	return &Error{Err: &store.Error{Reason: res.Reason, Msg: res.Message}, Tenant: tenant, Key: key}
}

// internalf is an ErrInternal with a message.
func internalf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf("%w: %s", ErrInternal, fmt.Sprintf(format, args...))}
}
