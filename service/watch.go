package service

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

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
	encs     [][]byte
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
// *watch.ResetError, watch.ErrClosed, ctx's error. It is NextWire, decoded.
func (w *Watcher) Next(ctx context.Context) (*metadv1.WatchResponse, error) {
	b, err := w.NextWire(ctx)
	if err != nil {
		return nil, err
	}
	resp := &metadv1.WatchResponse{}
	if err := proto.Unmarshal(b, resp); err != nil {
		return nil, fmt.Errorf("service: a watch response does not decode: %w", err)
	}
	return resp, nil
}

// NextWire is Next's response as a WatchResponse message's wire bytes, which the caller owns.
// Each event is encoded once on this member, whichever streams send it (eventWire): a stream
// pays for copying the bytes, not for encoding them.
func (w *Watcher) NextWire(ctx context.Context) ([]byte, error) {
	wait := make(chan struct{})
	t := time.AfterFunc(w.progress, func() { close(wait) })
	defer t.Stop()
	var err error
	w.buf, err = w.cur.Next(ctx, w.buf[:0], watchBatch, wait)
	if err != nil {
		return nil, err
	}
	segs := w.s.state().Segments()
	encs := w.encs[:0]
	size := 64 // next, applied_index and commit_index
	for i := range w.buf {
		enc := w.s.wire.get(segs, &w.buf[i])
		encs = append(encs, enc)
		size += 1 + protowire.SizeBytes(len(enc))
	}
	b := make([]byte, 0, size)
	for _, enc := range encs {
		b = protowire.AppendTag(b, 1, protowire.BytesType) // WatchResponse.events
		b = protowire.AppendBytes(b, enc)
	}
	applied, commit := w.indexes()
	b = w.appendStamp(b, applied, commit)
	if len(w.buf) > 0 {
		oldest := &w.buf[0]
		w.s.m.watchLagSeconds.Observe(max(0, float64(w.s.cfg.Now().UnixNano()-oldest.At)/1e9))
		w.s.m.watchLagEntries.Observe(float64(applied - min(applied, oldest.Rev.Index)))
	}
	clear(w.buf) // keep no states reachable between calls
	clear(encs)
	w.encs = encs[:0]
	return b, nil
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
	resp.AppliedIndex, resp.CommitIndex = w.indexes()
}

func (w *Watcher) indexes() (applied, commit uint64) {
	hs := w.s.b.Status()
	return hs.AppliedIndex, hs.CommitIndex
}

// appendStamp appends stamp's fields, encoded (WatchResponse.next, .applied_index,
// .commit_index; zero values omitted, as proto.Marshal does), to b.
func (w *Watcher) appendStamp(b []byte, applied, commit uint64) []byte {
	next := w.cur.Reached()
	var rev [2 * binary.MaxVarintLen64]byte
	r := rev[:0]
	if next.Index != 0 {
		r = protowire.AppendTag(r, 1, protowire.VarintType) // Revision.index
		r = protowire.AppendVarint(r, next.Index)
	}
	if next.Pos != 0 {
		r = protowire.AppendTag(r, 2, protowire.VarintType) // Revision.position
		r = protowire.AppendVarint(r, uint64(next.Pos))
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, r)
	for _, f := range []struct {
		num protowire.Number
		v   uint64
	}{{3, applied}, {4, commit}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, f.v)
		}
	}
	return b
}

// eventWire is a member's encodings of recent events (WatchEvent messages), shared by its
// streams: a slot per revision's hash, the newest encoding wins a slot. Streams that follow the
// head of the window within eventWireSlots events of each other find every event encoded once;
// a stream far behind encodes its own. An event's encoding names its replicas' segment endpoints
// as this member knew them when it first encoded the event. A revision names one event forever on
// a member (a restore moves the log past every revision before it), so a slot is never stale.
// Safe for concurrent use.
type eventWire struct {
	slots []atomic.Pointer[encodedEvent]
}

// eventWireSlots is how many encodings eventWire keeps: sixteen full responses.
const eventWireSlots = 16 * watchBatch

type encodedEvent struct {
	rev watch.Rev
	b   []byte
}

func newEventWire() *eventWire {
	return &eventWire{slots: make([]atomic.Pointer[encodedEvent], eventWireSlots)}
}

// get returns e's encoding, encoding it unless a slot holds it.
func (c *eventWire) get(segs *alloc.Registry, e *watch.Event) []byte {
	h := (e.Rev.Index*0x9e3779b97f4a7c15 ^ uint64(e.Rev.Pos)*0xc2b2ae3d27d4eb4f) >> 32
	slot := &c.slots[h%uint64(len(c.slots))]
	if p := slot.Load(); p != nil && p.rev == e.Rev {
		return p.b
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(eventTo(segs, e))
	if err != nil {
		panic(fmt.Sprintf("service: encode watch event %v: %v", e.Rev, err)) // a message of valid fields always encodes
	}
	slot.Store(&encodedEvent{rev: e.Rev, b: b})
	return b
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
