package service

import (
	"context"
	"slices"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/watch"
	"metad/wire"
)

// Watch streams: every member serves them from its own applied state (watch.Window, which the
// FSM fills as it applies), so they are never forwarded and never wait for the leader.

// Watch bounds.
const (
	// watchBatch is the events one response carries at most.
	watchBatch = 1024
	// DefaultWatchProgress is how often an idle stream gets a progress response.
	DefaultWatchProgress = 5 * time.Second
	minWatchProgress     = 100 * time.Millisecond
)

// Watcher is one open watch. Not safe for concurrent use.
type Watcher struct {
	s        *Service
	cur      *watch.Cursor
	progress time.Duration
	buf      []watch.Event
}

// Watch opens a watch of req's tenant (or of every tenant, for a principal with the reader or
// admin role) from req's start revision. ctx is the call's, authorized for the tenant (Authorize).
// Errors: invalid input, ErrPermissionDenied, *watch.CompactedError.
func (s *Service) Watch(ctx context.Context, req *metadv1.WatchRequest) (*Watcher, error) {
	f := watch.Filter{Tenant: store.NormalizeTenant(req.GetTenant()), Prefix: string(req.GetKeyPrefix())}
	if req.GetAllTenants() {
		if req.GetTenant() != "" {
			return nil, fail(badf("tenant", "must be empty with all_tenants"), req.GetTenant(), nil)
		}
		f.Tenant = ""
	}
	if len(f.Prefix) > store.MaxKeyLen {
		return nil, fail(badf("key_prefix", "length %d over %d", len(f.Prefix), store.MaxKeyLen), f.Tenant, nil)
	}
	for _, k := range req.GetKinds() {
		switch {
		case k == metadv1.WatchEventKind_WATCH_EVENT_KIND_UNSPECIFIED:
		case slices.Contains(watch.Kinds, watch.Kind(k)):
			f.Kinds = append(f.Kinds, watch.Kind(k))
		default:
			return nil, fail(badf("kinds", "unknown kind %d", k), f.Tenant, nil)
		}
	}
	progress := DefaultWatchProgress
	if ms := req.GetProgressIntervalMs(); ms != 0 {
		progress = max(time.Duration(ms)*time.Millisecond, minWatchProgress)
	}
	start := watch.Rev{Index: req.GetStart().GetIndex(), Pos: req.GetStart().GetPosition()}
	cur, err := s.st.Window().Subscribe(start, f)
	if err != nil {
		return nil, err
	}
	return &Watcher{s: s, cur: cur, progress: progress}, nil
}

// Next returns the stream's next response: the events that follow (up to a batch), or, after the
// progress interval with none, a response with no events. Errors: *watch.FellBehindError,
// *watch.ResetError, watch.ErrClosed, ctx's error.
func (w *Watcher) Next(ctx context.Context) (*metadv1.WatchResponse, error) {
	wait := make(chan struct{})
	t := time.AfterFunc(w.progress, func() { close(wait) })
	defer t.Stop()
	var err error
	w.buf, err = w.cur.Next(ctx, w.buf[:0], watchBatch, wait)
	if err != nil {
		return nil, err
	}
	segs := w.s.state().Segments()
	resp := &metadv1.WatchResponse{Events: make([]*metadv1.WatchEvent, len(w.buf))}
	for i := range w.buf {
		resp.Events[i] = eventTo(segs, &w.buf[i])
	}
	w.stamp(resp)
	if len(w.buf) > 0 {
		oldest := &w.buf[0]
		w.s.m.watchLagSeconds.Observe(max(0, float64(w.s.cfg.Now().UnixNano()-oldest.At)/1e9))
		w.s.m.watchLagEntries.Observe(float64(resp.AppliedIndex - min(resp.AppliedIndex, oldest.Rev.Index)))
	}
	clear(w.buf) // keep no states reachable between calls
	return resp, nil
}

// Opened is the stream's first response, sent as soon as the watch is open: no events, and the
// revision it starts at (so a caller that asked for the next change knows where that is, and
// resumes from there if the member fails before the first event).
func (w *Watcher) Opened() *metadv1.WatchResponse {
	resp := &metadv1.WatchResponse{}
	w.stamp(resp)
	return resp
}

// stamp sets resp's next revision and this member's applied and commit indexes.
func (w *Watcher) stamp(resp *metadv1.WatchResponse) {
	next := w.cur.Reached()
	resp.Next = &metadv1.Revision{Index: next.Index, Position: next.Pos}
	hs := w.s.b.Status()
	resp.AppliedIndex, resp.CommitIndex = hs.AppliedIndex, hs.CommitIndex
}

// Close ends the watch.
func (w *Watcher) Close() { w.cur.Close() }

// eventTo renders an event, with the endpoints of its replicas' segments as segs knows them.
func eventTo(segs *alloc.Registry, e *watch.Event) *metadv1.WatchEvent {
	out := &metadv1.WatchEvent{Revision: &metadv1.Revision{Index: e.Rev.Index, Position: e.Rev.Pos},
		Kind: metadv1.WatchEventKind(e.Kind), Tenant: e.Change.Tenant, TimeUnixNano: e.At}
	if e.Change.Key != "" {
		out.Key = []byte(e.Change.Key)
	}
	if e.Change.Group != "" {
		out.Group = []byte(e.Change.Group)
	}
	switch e.Change.Subject {
	case store.GroupChange:
		return out
	case store.SegmentChange:
		out.Segment = wire.SegmentTo(*e.Change.Segment)
		return out
	}
	st := e.Change.After
	if st == nil {
		st = e.Change.Before
	}
	out.Size = st.Size
	if reps := e.Replicas(); len(reps) > 0 {
		out.Replicas = wire.ReplicasTo(segs, reps, st.Size)
	}
	return out
}
