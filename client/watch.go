package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
)

// WatchOptions says what to watch and from where.
type WatchOptions struct {
	// Tenant to watch ("" = "default"); AllTenants watches every tenant (reader or admin role).
	Tenant     string
	AllTenants bool
	// Prefix keeps keys that start with it; Kinds keeps events of those kinds (none: all).
	Prefix []byte
	Kinds  []metadv1.WatchEventKind
	// Start is the first revision wanted; nil: the next change of the member first asked.
	Start *metadv1.Revision
	// Progress is how often an idle stream answers with no events (0: the server's 5 s).
	Progress time.Duration
}

// watchRetryMax bounds the wait between rounds of members that all failed to answer.
const watchRetryMax = 2 * time.Second

// Watch streams the changes of objects to fn, in revision order and each once, until ctx ends or
// fn returns an error (which Watch returns). fn gets every response: events, or progress on an
// idle stream (no events); resp.Next is where the stream has reached.
//
// A member that fails or ends the stream is left for another, from the revision the stream had
// reached, so a member's crash, restart or loss of its window costs the caller nothing: no event
// is lost or repeated. When every member answers that it cannot go on from there
// (REASON_WATCH_COMPACTED, REASON_WATCH_FELL_BEHIND, or REASON_STATE_REPLACED after a snapshot
// restore), Watch returns that error: the caller resynchronises (watch from now, then read the
// objects, applying events after the listing over it) and watches again. Refusals of the request
// (invalid input, permission) are returned at once.
func (c *Client) Watch(ctx context.Context, opts WatchOptions, fn func(*metadv1.WatchResponse) error) error {
	req := &metadv1.WatchRequest{Tenant: opts.Tenant, AllTenants: opts.AllTenants, KeyPrefix: opts.Prefix, Kinds: opts.Kinds,
		Start: opts.Start, ProgressIntervalMs: uint32(opts.Progress / time.Millisecond)}
	ep := c.cur.Load()
	var refusals []error // members that cannot go on from req.Start, this round
	wait := 50 * time.Millisecond
	tried := 0
	for {
		if c.closed.Load() {
			return ErrClosed
		}
		progressed, err := c.watchOn(ctx, ep, req, fn)
		if progressed { // a new round: what other members answered before is old news
			tried, refusals, wait = 0, refusals[:0], 50*time.Millisecond
		}
		var stop *watchStop
		switch {
		case errors.As(err, &stop):
			return stop.err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		switch r := ReasonOf(err); r {
		case metadv1.Reason_REASON_WATCH_COMPACTED, metadv1.Reason_REASON_WATCH_FELL_BEHIND, metadv1.Reason_REASON_STATE_REPLACED:
			refusals = append(refusals, err)
		default:
			if code := status.Code(err); code != codes.Unavailable && code != codes.Unknown && code != codes.Canceled &&
				code != codes.DeadlineExceeded && code != codes.Internal && err != io.EOF {
				return err // the request itself is refused
			}
		}
		c.mu.Lock()
		n := len(c.eps)
		ep = c.eps[(ep.idx+1)%n]
		c.mu.Unlock()
		if tried++; tried < n {
			continue
		}
		if len(refusals) == n {
			return refusals[0]
		}
		// Every member failed this round (some may be down or restarting): wait, then go round again.
		tried, refusals = 0, refusals[:0]
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, watchRetryMax)
	}
}

// watchStop carries fn's error out of watchOn.
type watchStop struct{ err error }

func (w *watchStop) Error() string { return w.err.Error() }

// watchOn runs the watch on ep until the stream ends; req.Start follows the responses, so a
// resume goes on from where this stream reached. progressed reports whether the stream moved past
// the revision it started from (a first response that only names it does not count).
func (c *Client) watchOn(ctx context.Context, ep *endpoint, req *metadv1.WatchRequest, fn func(*metadv1.WatchResponse) error) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := ep.md.Watch(ctx, req)
	if err != nil {
		return false, err
	}
	var from *metadv1.Revision // where this stream started: its first response names it
	for {
		resp, err := stream.Recv()
		if err != nil {
			return progressed, err
		}
		if n := resp.GetNext(); n != nil {
			if from == nil {
				from = n
			} else if n.GetIndex() > from.GetIndex() || n.GetIndex() == from.GetIndex() && n.GetPosition() > from.GetPosition() {
				progressed = true
			}
			req.Start = n
		}
		if err := fn(resp); err != nil {
			return progressed, &watchStop{err: err}
		}
	}
}

// RevisionString renders a revision as index.position.
func RevisionString(r *metadv1.Revision) string {
	return fmt.Sprintf("%d.%d", r.GetIndex(), r.GetPosition())
}
