package client

import (
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

// Errors of the client itself. Errors from the cluster are gRPC status errors, returned unwrapped:
// read them with status.FromError, ReasonOf and LeaderOf.
var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("client: closed")
	// ErrBadResponse is returned when a server's answer breaks the API contract (a batch answer
	// with the wrong number of results).
	ErrBadResponse = errors.New("client: malformed response")
	// ErrRepeatedKey is returned, before anything is sent, by a batch write whose list names a key
	// twice: the server rejects a request with a repeated key whole (SEMANTICS section 1), and a
	// list split into several requests must not depend on where the repeat falls.
	ErrRepeatedKey = errors.New("client: a key repeats in the batch")
	// ErrNegativeGrace is returned, before anything is sent, by UnmountSegmentGraceful with a
	// negative grace period (0 would unmount at once, which a caller who asked for grace did not
	// mean).
	ErrNegativeGrace = errors.New("client: negative grace period")
)

// DetailOf returns the ErrorDetail carried in err's gRPC status, or nil if there is none.
func DetailOf(err error) *metadv1.ErrorDetail {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if ed, ok := d.(*metadv1.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

// ReasonOf returns the stable reason code of err: the reason of an *ItemError or of the
// ErrorDetail in its gRPC status, or, for a status
// without one, REASON_UNAVAILABLE when the gRPC code is Unavailable (a connection error) and
// REASON_UNSPECIFIED otherwise. A nil error gives REASON_UNSPECIFIED.
func ReasonOf(err error) metadv1.Reason {
	var ie *ItemError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	if d := DetailOf(err); d != nil {
		return d.GetReason()
	}
	if err != nil && status.Code(err) == codes.Unavailable {
		return metadv1.Reason_REASON_UNAVAILABLE
	}
	return metadv1.Reason_REASON_UNSPECIFIED
}

// LeaderOf returns the leader named by err (a NOT_LEADER error, usually): its Raft server name and
// client address, either of which may be empty.
func LeaderOf(err error) (name, address string) {
	d := DetailOf(err)
	return d.GetLeaderName(), d.GetLeaderAddress()
}

// MessageOf returns the human-readable message of err: its gRPC status message, or an
// *ItemError's message, without leading copies of the reason name ("OBJECT_NOT_FOUND: ..."),
// since callers show the reason beside it. Other errors give err.Error().
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var ie *ItemError
	if errors.As(err, &ie) {
		return trimReason(ie.Message, ie.Reason)
	}
	if st, ok := status.FromError(err); ok {
		return trimReason(st.Message(), ReasonOf(err))
	}
	return err.Error()
}

// trimReason drops leading "NAME: " prefixes naming reason r from msg.
func trimReason(msg string, r metadv1.Reason) string {
	if r == metadv1.Reason_REASON_UNSPECIFIED {
		return msg
	}
	prefix := ReasonName(r) + ": "
	for strings.HasPrefix(msg, prefix) {
		msg = msg[len(prefix):]
	}
	return msg
}

// ReasonName is the code clients and logs show for a reason: its name without the REASON_ prefix
// (OBJECT_NOT_FOUND), or "OK" for REASON_UNSPECIFIED.
func ReasonName(r metadv1.Reason) string {
	if r == metadv1.Reason_REASON_UNSPECIFIED {
		return "OK"
	}
	return strings.TrimPrefix(r.String(), "REASON_")
}

// RetryAfterOf returns how long the cluster asked the caller to wait before calling again: the
// retry-after of a REASON_RATE_LIMITED refusal (its principal over a rate limit on the member it
// called), 0 for any other error. The client does not retry such a refusal itself: the caller
// decides whether the call is worth the wait, and waits at least this long.
func RetryAfterOf(err error) time.Duration {
	return time.Duration(DetailOf(err).GetRetryAfterMs()) * time.Millisecond
}

// IsReason reports whether err carries reason r.
func IsReason(err error, r metadv1.Reason) bool {
	return err != nil && ReasonOf(err) == r
}

// retryAction is what the retry loop does after a failed attempt.
type retryAction int

const (
	actStop     retryAction = iota // deterministic rejection or a local error: return it
	actRedirect                    // NOT_LEADER naming another address: go there
	actFailover                    // UNAVAILABLE, a connection error, or NOT_LEADER with no address
)

// classify decides what to do after err from an attempt sent to addr.
func classify(err error, addr string) (retryAction, string) {
	st, ok := status.FromError(err)
	if !ok {
		return actStop, ""
	}
	if d := DetailOf(err); d != nil && d.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
		switch d.GetReason() {
		case metadv1.Reason_REASON_NOT_LEADER:
			if la := d.GetLeaderAddress(); la != "" && la != addr {
				return actRedirect, la
			}
			return actFailover, ""
		case metadv1.Reason_REASON_UNAVAILABLE:
			return actFailover, ""
		default:
			return actStop, ""
		}
	}
	if st.Code() == codes.Unavailable {
		return actFailover, ""
	}
	return actStop, ""
}

// noteUnknown warns, once per reason, of an answer from addr whose reason this client does not
// know: the member runs a newer release than the client was built with.
func (c *Client) noteUnknown(err error, addr string) {
	d := DetailOf(err)
	if d == nil {
		return
	}
	r := d.GetReason()
	if _, known := metadv1.Reason_name[int32(r)]; known {
		return
	}
	if _, seen := c.unknownReasons.LoadOrStore(r, true); seen {
		return
	}
	c.cfg.Logger.Warn("metad client: a member answered with a reason this client does not know; it runs a newer release than this client, which should be upgraded",
		"reason", int32(r), "endpoint", addr, "message", status.Convert(err).Message())
}
