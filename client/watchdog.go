package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// The attempt watchdog tells a node that is slow from one that is silent. What it waits for is
// any sign of life from the node during the attempt: an answer to a gRPC health probe on the
// attempt's connection (whatever its status: only a live server answers), or progress of the
// attempt itself (a message of a stream received, or taken by the server). An attempt quiet for
// half of Config.AttemptTimeout makes it probe, one probe in flight at a time, again half an
// attempt timeout after each answer; the attempt is abandoned only when the node has shown no
// sign of life for its silence bound (Client.silence):
//
//   - an ordinary call's is AttemptTimeout, stretched to half of it plus the node's measured
//     answer time (answerTime.timeout) when that is longer, at most suspectFor: a probe of a
//     node known to answer in 700 ms gets that long, not just the other half of a 1 s attempt
//     timeout, and a paused or cut-off node costs a call about one attempt timeout;
//   - a long call's (Long) is suspectAttempts times that: several probe windows in a row
//     without a sign of life. Abandoning it throws away work that may have run for minutes
//     (a snapshot, a tenant's erasure), so only a node that is really gone ends it early; a
//     broken connection fails it at once anyway.
//
// A probe has no deadline of its own: a late answer still counts, and is measured; and it gets
// its time counted from when it was really sent, however late a busy client's timer fired. An
// attempt abandoned after it made progress (a stream that had delivered chunks) fails instead of
// being retried elsewhere, where the work would start over.

// longKey marks a context whose calls are long (Long).
type longKey struct{}

// Long returns a context whose calls are long: their attempts are abandoned only when the node
// has shown no sign of life for suspectAttempts times an ordinary call's silence bound (see
// Config.AttemptTimeout). The client marks its own long calls (snapshot save and restore,
// RemoveAll, UnregisterTenant, membership changes, leader transfer, the scans and the write
// batches); Long is for a caller whose other calls may run long on a busy cluster.
func Long(ctx context.Context) context.Context { return context.WithValue(ctx, longKey{}, true) }

func isLong(ctx context.Context) bool { v, _ := ctx.Value(longKey{}).(bool); return v }

// watchKey is the context key of the watchdog of the attempt whose context it is.
type watchKey struct{}

// alive records that the attempt whose context is ctx made progress just now (a stream message
// arrived, or the server took one): the node is alive. A no-op outside a watched attempt.
func alive(ctx context.Context) {
	if w, _ := ctx.Value(watchKey{}).(*watchdog); w != nil {
		w.hear(time.Now())
	}
}

// answerTime is safe for concurrent use. It estimates how long a node takes to answer, from the
// round trips of its health probes and the durations of the ordinary attempts that ended before
// their first probe, as TCP estimates a round trip (RFC 6298): a smoothed mean and mean
// deviation, whose sum mean + 4 x deviation a live node's answer seldom exceeds.
type answerTime struct {
	mu     sync.Mutex // guards srtt, rttvar and seen; a leaf
	srtt   time.Duration
	rttvar time.Duration
	seen   bool
	// rto is srtt + 4*rttvar in ns (0 before the first sample), stored under mu, read without it.
	rto atomic.Int64
}

// sample adds one answer time.
func (a *answerTime) sample(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seen {
		a.srtt, a.rttvar, a.seen = d, d/2, true
	} else {
		dev := a.srtt - d
		if dev < 0 {
			dev = -dev
		}
		a.rttvar = (3*a.rttvar + dev) / 4
		a.srtt = (7*a.srtt + d) / 8
	}
	a.rto.Store(int64(a.srtt + 4*a.rttvar))
}

// timeout is how long to wait for an answer from the node before it is late (0: nothing
// measured yet).
func (a *answerTime) timeout() time.Duration { return time.Duration(a.rto.Load()) }

// silence is how long the node at ep may show no sign of life during an attempt before the
// attempt is abandoned (see the top of this file).
func (c *Client) silence(ep *endpoint, long bool) time.Duration {
	at := c.cfg.AttemptTimeout
	q := min(max(at, at/2+ep.answers.timeout()), c.suspectFor())
	if long {
		q *= suspectAttempts
	}
	return q
}

// answered reports whether err, an attempt's outcome, is an answer of the server's: a success,
// or a rejection that carries the server's ErrorDetail.
func answered(err error) bool { return err == nil || DetailOf(err) != nil }

// try makes one attempt at ep under the caller's context, watched over by a watchdog (unless
// Config.AttemptTimeout is negative). silent reports that the watchdog abandoned the attempt
// because the node showed no sign of life while the caller's context was still live; err is then
// a *noRetryError when the attempt had made progress that a retry would repeat.
func (c *Client) try(ctx context.Context, ep *endpoint, attempt func(context.Context, *endpoint) error) (silent bool, err error) {
	if c.cfg.AttemptTimeout <= 0 {
		return false, attempt(ctx, ep)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.watch(actx, cancel, ep, isLong(ctx))
	err = attempt(context.WithValue(actx, watchKey{}, w), ep)
	abandoned, quiet, probed := w.stop()
	if abandoned && err != nil && ctx.Err() == nil {
		lost := status.Errorf(codes.Unavailable, "client: %s stopped answering (no sign of life for %s); the outcome is unknown",
			ep.addr, quiet)
		if errors.As(err, new(*noRetryError)) {
			return true, &noRetryError{lost} // the attempt made progress that a retry would repeat
		}
		return true, lost
	}
	if !probed && !w.long && answered(err) {
		ep.answers.sample(time.Since(w.start))
	}
	return false, err
}

// watchdog is safe for concurrent use: its timer's goroutine, its probe's and the attempt's
// share it.
type watchdog struct {
	c      *Client
	ep     *endpoint
	actx   context.Context // the attempt's; probes run under it
	cancel context.CancelFunc
	long   bool
	start  time.Time
	// heard is the Unix time in ns of the node's last sign of life for this attempt (the
	// attempt's start at first); it only moves forward.
	heard atomic.Int64

	mu      sync.Mutex // guards the fields below; a leaf
	t       *time.Timer
	probing bool          // a probe is in flight
	probed  time.Time     // when the last probe was sent; zero: none yet
	stopped bool          // the attempt has ended: the timer is not to be rearmed
	silent  bool          // the node showed no sign of life for quiet: the attempt was cancelled
	quiet   time.Duration // the silence bound that abandoned it
}

// watch starts a watchdog over the attempt at ep whose context is actx (cancel cancels it).
func (c *Client) watch(actx context.Context, cancel context.CancelFunc, ep *endpoint, long bool) *watchdog {
	w := &watchdog{c: c, ep: ep, actx: actx, cancel: cancel, long: long, start: time.Now()}
	w.heard.Store(w.start.UnixNano())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = time.AfterFunc(c.cfg.AttemptTimeout/2, w.wake)
	return w
}

// hear records a sign of life at now.
func (w *watchdog) hear(now time.Time) {
	ns := now.UnixNano()
	for {
		old := w.heard.Load()
		if ns <= old || w.heard.CompareAndSwap(old, ns) {
			return
		}
	}
}

// wake runs on the timer: it abandons the attempt when the node has been silent too long, and
// otherwise sends a probe when one is due, and rearms.
func (w *watchdog) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.silent {
		return
	}
	now := time.Now()
	if bound := w.c.silence(w.ep, w.long); !now.Before(w.deadlineLocked(bound)) {
		w.silent, w.quiet = true, bound
		w.cancel()
		return
	}
	if !w.probing && !now.Before(w.probeDueLocked()) {
		w.probing, w.probed = true, now
		go w.probe(now)
	}
	w.armLocked(now)
}

// deadlineLocked is when the attempt is abandoned if nothing is heard meanwhile: bound after the
// last sign of life, and not before a probe in flight has had the part of bound that follows
// half an attempt timeout from when it was really sent (a timer that fired late on a busy client
// does not shorten the node's time to answer).
func (w *watchdog) deadlineLocked(bound time.Duration) time.Time {
	d := time.Unix(0, w.heard.Load()).Add(bound)
	if p := w.probed.Add(bound - w.c.cfg.AttemptTimeout/2); w.probing && p.After(d) {
		d = p
	}
	return d
}

// probeDueLocked is when the next probe is due: half an attempt timeout after the later of the
// last sign of life and the last probe.
func (w *watchdog) probeDueLocked() time.Time {
	last := time.Unix(0, w.heard.Load())
	if w.probed.After(last) {
		last = w.probed
	}
	return last.Add(w.c.cfg.AttemptTimeout / 2)
}

// armLocked sets the timer to the next thing to do: the end of the silence bound, or the next
// probe when none is in flight.
func (w *watchdog) armLocked(now time.Time) {
	next := w.deadlineLocked(w.c.silence(w.ep, w.long))
	if due := w.probeDueLocked(); !w.probing && due.Before(next) {
		next = due
	}
	w.t.Reset(max(next.Sub(now), 0))
}

// probe asks the node for its health, sent at sent, and records the answer, if any, as a sign of
// life and an answer time.
func (w *watchdog) probe(sent time.Time) {
	_, err := w.ep.health.Check(w.actx, &healthpb.HealthCheckRequest{})
	now := time.Now()
	if w.actx.Err() != nil {
		return // the attempt ended, or was abandoned
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		// No answer from the server: the connection failed or refused the probe (a node that is
		// stopping takes no new streams). The next probe goes half an attempt timeout later.
	default: // any answer, even an error, comes from a live server
		w.ep.answers.sample(now.Sub(sent))
		w.hear(now)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.probing = false
	if !w.stopped && !w.silent {
		w.armLocked(now)
	}
}

// stop ends the watch. It reports whether the node was found silent, the silence bound that
// found it so, and whether a probe was sent.
func (w *watchdog) stop() (silent bool, quiet time.Duration, probed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
	return w.silent, w.quiet, !w.probed.IsZero()
}
