// Package watch keeps the recent changes of the replicated state as events stamped with their
// revision, for subscribers to read from any revision still retained, in order, each once.
//
// A revision is the position of an event in the Raft log: the index of the entry whose apply made
// the change and the event's position among that entry's events. Every member applies the same
// entries in the same order and so makes the same events at the same revisions: a subscriber may
// resume on any member from the revision after the last event it read.
//
// The Window is written by the state machine's apply goroutine (Append, Advance, Reset), which
// never waits for a reader: a reader that falls out of the retained window is told so (FellBehind)
// and must resynchronise. Readers (Cursor) may be on any goroutine.
package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"metad/store"
)

// Rev is a revision: a log index and a position among the events of that entry. Revisions are
// ordered by Index, then Pos.
type Rev struct {
	Index uint64
	Pos   uint32
}

// Less reports whether r comes before o.
func (r Rev) Less(o Rev) bool { return r.Index < o.Index || (r.Index == o.Index && r.Pos < o.Pos) }

// Next returns the revision right after r.
func (r Rev) Next() Rev { return Rev{r.Index, r.Pos + 1} }

func (r Rev) String() string { return fmt.Sprintf("%d.%d", r.Index, r.Pos) }

// Kind is what an event says happened.
type Kind uint8

const (
	// Stored: the object became readable (its first COMPLETE replica).
	Stored Kind = iota + 1
	// Changed: a readable object's set of COMPLETE replicas changed (one added or dropped).
	Changed
	// Removed: the object stopped being readable (erased, or its last COMPLETE replica dropped)
	// by anything but eviction.
	Removed
	// Evicted: as Removed, by eviction.
	Evicted
	// GroupCreated: an explicit group got its first object.
	GroupCreated
	// GroupRemoved: an explicit group is gone (its last object left, or it was removed).
	GroupRemoved
	// SegmentMounted: a segment was mounted. Segment events belong to no tenant.
	SegmentMounted
	// SegmentUnmounted: a segment was unmounted.
	SegmentUnmounted
)

var kindNames = [...]string{"", "STORED", "CHANGED", "REMOVED", "EVICTED", "GROUP_CREATED", "GROUP_REMOVED",
	"SEGMENT_MOUNTED", "SEGMENT_UNMOUNTED"}

// Kinds is every kind, in order.
var Kinds = []Kind{Stored, Changed, Removed, Evicted, GroupCreated, GroupRemoved, SegmentMounted, SegmentUnmounted}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Event is one change at one revision. For an object, Change's states are the object's before and
// after the command (immutable); Replicas are the object's COMPLETE replicas after it (none for
// Removed and Evicted). A group event names its tenant and group, a segment event its segment.
type Event struct {
	Rev    Rev
	Kind   Kind
	At     int64 // the entry's leader time (unix ns): when the leader proposed the change
	Change store.Change
}

// Replicas returns the COMPLETE replicas the object has after the event.
func (e *Event) Replicas() []store.Replica {
	if e.Change.After == nil {
		return nil
	}
	return complete(e.Change.After.Replicas)
}

// Of returns the event a change makes, if any: every group and segment change makes one; an
// object's change makes one when what a reader of the object can see changed (its COMPLETE
// replicas). evicted says the change is an eviction's. A change that only touches PROCESSING
// replicas, tasks, pins or sizes makes none.
func Of(c store.Change, evicted bool) (Kind, bool) {
	switch {
	case c.Subject == store.GroupChange && c.Gone:
		return GroupRemoved, true
	case c.Subject == store.GroupChange:
		return GroupCreated, true
	case c.Subject == store.SegmentChange && c.Gone:
		return SegmentUnmounted, true
	case c.Subject == store.SegmentChange:
		return SegmentMounted, true
	}
	var before, after []store.Replica
	if c.Before != nil {
		before = c.Before.Replicas
	}
	if c.After != nil {
		after = c.After.Replicas
	}
	nb, na := countComplete(before), countComplete(after)
	switch {
	case nb == 0 && na == 0:
		return 0, false
	case nb == 0:
		return Stored, true
	case na == 0 && evicted:
		return Evicted, true
	case na == 0:
		return Removed, true
	case sameComplete(before, after):
		return 0, false
	}
	return Changed, true
}

func countComplete(rs []store.Replica) int {
	n := 0
	for i := range rs {
		if rs[i].Status == store.Complete {
			n++
		}
	}
	return n
}

// complete returns rs's COMPLETE replicas: rs itself when all are (no copy).
func complete(rs []store.Replica) []store.Replica {
	if countComplete(rs) == len(rs) {
		return rs
	}
	out := make([]store.Replica, 0, len(rs))
	for _, r := range rs {
		if r.Status == store.Complete {
			out = append(out, r)
		}
	}
	return out
}

// sameComplete reports whether a and b have the same COMPLETE replicas (by id and place), in any
// order.
func sameComplete(a, b []store.Replica) bool {
	if countComplete(a) != countComplete(b) {
		return false
	}
	for _, r := range a {
		if r.Status != store.Complete {
			continue
		}
		found := false
		for _, o := range b {
			if o.Status == store.Complete && o.ID == r.ID && o.Extent == r.Extent && o.Tier == r.Tier {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// size is what the window counts an event as holding: the event, its key and group, and the
// replicas of the states it keeps reachable.
func (e *Event) size() int64 {
	n := int64(128 + len(e.Change.Key) + len(e.Change.Group))
	if s := e.Change.Segment; s != nil {
		n += 96 + int64(len(s.Name)+len(s.Endpoint))
	}
	if e.Change.Before != nil {
		n += 96 + 40*int64(len(e.Change.Before.Replicas))
	}
	if e.Change.After != nil {
		n += 96 + 40*int64(len(e.Change.After.Replicas))
	}
	return n
}

// CompactedError: a subscription asked for a revision older than the window retains.
type CompactedError struct {
	Asked  Rev
	Oldest Rev // every event at or after this revision is retained
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("watch: revision %s is no longer retained on this member (the oldest is %s): resynchronise with a listing, then watch from the revision it was taken at", e.Asked, e.Oldest)
}

// FellBehindError: a cursor's next event left the window before the cursor read it (the reader was
// slower than the writes). Resume is the revision it had reached; it is no longer retained here.
type FellBehindError struct {
	Resume Rev
	Oldest Rev
}

func (e *FellBehindError) Error() string {
	return fmt.Sprintf("watch: the subscriber fell behind: its next revision %s left this member's window (the oldest is now %s); resume elsewhere from %s or resynchronise", e.Resume, e.Oldest, e.Resume)
}

// ResetError: the state was replaced by a snapshot at Index (a restore, or a follower's install);
// no event before it is retained, and events do not describe the replacement.
type ResetError struct {
	Index uint64
}

func (e *ResetError) Error() string {
	return fmt.Sprintf("watch: the state was replaced by a snapshot at index %d: resynchronise with a listing", e.Index)
}

// ErrClosed: the window was closed (the member is shutting down).
var ErrClosed = errors.New("watch: the member is shutting down")

// Limits bound what a window retains: the newest events within both bounds.
type Limits struct {
	Events int   // events at most (> 0)
	Bytes  int64 // bytes at most as events count them (> 0)
}

// DefaultLimits retain about a minute of a busy member's changes in a few hundred MiB at most.
var DefaultLimits = Limits{Events: 1 << 20, Bytes: 256 << 20}

// Window is the retained events of one member. The apply goroutine writes it; cursors read it.
type Window struct {
	lim Limits

	mu      sync.Mutex
	ring    []Event // a circular buffer of retained events, the oldest at head
	head    int
	n       int
	bytes   int64
	first   uint64 // sequence number of the oldest retained event (each appended event has one)
	floor   Rev    // every event at or after floor is retained (or not yet made)
	applied uint64 // the last index applied
	epoch   uint64 // +1 on every Reset
	// unsettled: Reset emptied the window and no entry has applied since (Reset's comment).
	unsettled bool
	wake      chan struct{}
	closed    bool
	m         *metrics
}

// NewWindow returns an empty window whose first events will follow index applied.
func NewWindow(lim Limits, applied uint64) *Window {
	if lim.Events <= 0 || lim.Bytes <= 0 {
		lim = DefaultLimits
	}
	return &Window{lim: lim, ring: make([]Event, min(lim.Events, 1024)), floor: Rev{applied + 1, 0},
		applied: applied, wake: make(chan struct{}), m: newMetrics()}
}

// Append adds the events of the entry at index (in order, their Rev set by the caller) and marks
// index applied. It never waits for a reader.
func (w *Window) Append(index uint64, evs []Event) {
	w.mu.Lock()
	w.settle(index)
	for i := range evs {
		w.push(evs[i])
	}
	if index > w.applied {
		w.applied = index
	}
	w.signal()
	w.mu.Unlock()
	w.m.events.Add(float64(len(evs)))
}

// Advance marks index applied with no events (an entry that changed no object).
func (w *Window) Advance(index uint64) {
	w.mu.Lock()
	w.settle(index)
	if index > w.applied {
		w.applied = index
		w.signal()
	}
	w.mu.Unlock()
}

// Reset empties the window: the state was replaced by a snapshot at index. Every cursor gets a
// ResetError. Where the replaced state's revisions end is known only when the first entry after
// it applies: a restored file's index may be older than what this member has applied, and the
// log index the restore took may be later than both. Until then the window is unsettled: a
// subscription from a given revision is refused as compacted (it may have been taken before the
// restore), one from the next change is served; when the first entry applies, the floor moves to
// it. So no start taken before the restore is ever served across it.
func (w *Window) Reset(index uint64) {
	w.mu.Lock()
	clear(w.ring)
	w.first += uint64(w.n)
	w.head, w.n, w.bytes = 0, 0, 0
	index = max(index, w.applied)
	w.floor, w.applied = Rev{index + 1, 0}, index
	w.unsettled = true
	w.epoch++
	w.signal()
	w.mu.Unlock()
	w.m.retained.Set(0)
	w.m.bytes.Set(0)
}

// settle ends an unsettled window at the first entry after a Reset, index (mu held).
func (w *Window) settle(index uint64) {
	if !w.unsettled {
		return
	}
	w.unsettled = false
	if w.floor.Less(Rev{index, 0}) {
		w.floor = Rev{index, 0}
	}
}

// Close wakes every cursor with ErrClosed.
func (w *Window) Close() {
	w.mu.Lock()
	w.closed = true
	w.signal()
	w.mu.Unlock()
}

// push appends e (mu held), dropping the oldest events beyond the limits.
func (w *Window) push(e Event) {
	sz := e.size()
	for w.n > 0 && (w.n >= w.lim.Events || w.bytes+sz > w.lim.Bytes) {
		w.dropOldest()
	}
	if w.n == len(w.ring) {
		w.grow()
	}
	w.ring[(w.head+w.n)%len(w.ring)] = e
	w.n++
	w.bytes += sz
	w.m.retained.Set(float64(w.n))
	w.m.bytes.Set(float64(w.bytes))
}

func (w *Window) dropOldest() {
	old := &w.ring[w.head]
	w.bytes -= old.size()
	w.floor = old.Rev.Next()
	*old = Event{}
	w.head = (w.head + 1) % len(w.ring)
	w.n--
	w.first++
}

func (w *Window) grow() {
	n := min(max(2*len(w.ring), 1024), w.lim.Events)
	ring := make([]Event, n)
	for i := range w.n {
		ring[i] = w.ring[(w.head+i)%len(w.ring)]
	}
	w.ring, w.head = ring, 0
}

// signal wakes every waiting cursor (mu held).
func (w *Window) signal() {
	close(w.wake)
	w.wake = make(chan struct{})
}

// at returns the event with sequence number seq (mu held; first <= seq < first+n).
func (w *Window) at(seq uint64) *Event {
	return &w.ring[(w.head+int(seq-w.first))%len(w.ring)]
}

// Applied returns the last index applied and the oldest revision retained.
func (w *Window) Applied() (applied uint64, oldest Rev) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applied, w.floor
}

// Filter selects the events a subscriber wants: all of one tenant's ("" for every tenant, and
// the segments, which belong to none), objects whose key and groups whose name has a prefix (a
// prefix excludes the segments), of some kinds (none: all).
type Filter struct {
	Tenant string
	Prefix string
	Kinds  []Kind
}

func (f *Filter) match(e *Event) bool {
	if f.Tenant != "" && e.Change.Tenant != f.Tenant {
		return false
	}
	name := e.Change.Key
	switch e.Change.Subject {
	case store.GroupChange:
		name = e.Change.Group
	case store.SegmentChange:
		if f.Prefix != "" {
			return false
		}
	}
	if len(name) < len(f.Prefix) || name[:len(f.Prefix)] != f.Prefix {
		return false
	}
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if k == e.Kind {
			return true
		}
	}
	return false
}

// Cursor reads a window's events from a start revision on, in order. Not safe for concurrent use.
type Cursor struct {
	w      *Window
	filter Filter
	seq    uint64 // sequence number of the next event to look at
	next   Rev    // the revision the cursor has reached: every matching event before it was read
	epoch  uint64
}

// Subscribe returns a cursor at start: its first event is the first one at or after start. A zero
// start means the next change: after the last index applied. A start older than the window
// retains is refused with a CompactedError.
func (w *Window) Subscribe(start Rev, f Filter) (*Cursor, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if start == (Rev{}) {
		start = Rev{w.applied + 1, 0}
	} else if w.unsettled {
		w.m.compacted.Inc()
		return nil, &CompactedError{Asked: start, Oldest: w.floor}
	}
	if start.Less(w.floor) {
		w.m.compacted.Inc()
		return nil, &CompactedError{Asked: start, Oldest: w.floor}
	}
	// The first retained event at or after start (binary search over the ring's order).
	lo, hi := 0, w.n
	for lo < hi {
		mid := (lo + hi) / 2
		if w.at(w.first + uint64(mid)).Rev.Less(start) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	w.m.subscribers.Inc()
	return &Cursor{w: w, filter: f, seq: w.first + uint64(lo), next: start, epoch: w.epoch}, nil
}

// Close ends the subscription.
func (c *Cursor) Close() {
	if c.w != nil {
		c.w.m.subscribers.Dec()
		c.w = nil
	}
}

// Reached returns the revision the cursor has reached: every matching event before it was read.
func (c *Cursor) Reached() Rev { return c.next }

// Next appends to buf up to max matching events after the last one read and returns it, waiting
// until there is at least one, the window passes wait's end (then it returns no events, with the
// cursor moved up to the last index applied: Reached tells the subscriber where it is), or ctx
// ends. Errors: FellBehindError, ResetError, ErrClosed, ctx's error.
func (c *Cursor) Next(ctx context.Context, buf []Event, max int, wait <-chan struct{}) ([]Event, error) {
	for {
		w := c.w
		w.mu.Lock()
		switch {
		case w.closed:
			w.mu.Unlock()
			return buf, ErrClosed
		case c.epoch != w.epoch:
			idx := w.applied
			w.mu.Unlock()
			w.m.cutOff.Inc()
			return buf, &ResetError{Index: idx}
		case c.seq < w.first:
			oldest := w.floor
			w.mu.Unlock()
			w.m.cutOff.Inc()
			return buf, &FellBehindError{Resume: c.next, Oldest: oldest}
		}
		end := w.first + uint64(w.n)
		for c.seq < end && len(buf) < max {
			e := w.at(c.seq)
			c.seq++
			if e.Rev.Less(c.next) {
				continue // before the start revision
			}
			c.next = e.Rev.Next()
			if c.filter.match(e) {
				buf = append(buf, *e)
			}
		}
		if c.seq == end && c.next.Less(Rev{w.applied + 1, 0}) {
			c.next = Rev{w.applied + 1, 0} // everything up to the last index applied was looked at
		}
		if len(buf) > 0 {
			w.mu.Unlock()
			return buf, nil
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-wake:
		case <-wait:
			return buf, nil
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
}
