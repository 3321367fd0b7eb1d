package fsm

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// Client sessions (exactly-once writes). A session is replicated state: OpenSession assigns the next
// id of a replicated counter, and every command that carries a SessionHeader runs at most once per
// (session, seq): apply keeps the result of every applied command (Reason OK; a rejection changed
// nothing, so running it again is harmless) and answers a repeat with it. The client numbers its
// operations and reuses the number on every retry; its first_unacked_seq lets apply drop the answers
// it no longer needs. Time is the leader's, stamped in each entry, never a node's clock, so every
// node expires the same sessions at the same entry.
//
// A session belongs to the principal that opened it (its OpenSession's Command.principal: "" on a
// cluster that authenticates nothing, and for a member's own session). Ids come from a counter and
// are easy to guess; what makes one useless to anyone else is that only its owner's commands use
// it. The owner is known for a session opened by an entry written under the owner rule
// (rulesSessionOwner) and carried in snapshots from format 6 on. A session opened by an older
// entry, or read from an older snapshot, has no known owner: apply lets every principal use it, as
// it did before the rule (a node that replayed its OpenSession and one that restored an older
// snapshot of it must agree), and the leader lets no one (service.answered), so such a session
// ends at the first request that names it.
//
// The rules, in the order apply checks them:
//   - a session another principal opened (entries of rules version 2 on): SESSION_EXPIRED, the
//     answer of an unknown session, and nothing done, the session untouched;
//   - unknown session, or one unused for its ttl: SESSION_EXPIRED, nothing done (the session is
//     dropped);
//   - seq 0 or above MaxSessionSeq: INVALID_PARAMS;
//   - the floor rises to min(first_unacked_seq, seq): answers below it are dropped;
//   - seq below the floor: SEQUENCE_TOO_OLD;
//   - a kept answer for seq: returned, nothing done (a duplicate);
//   - seq at or past floor + window: SEQUENCE_TOO_OLD (the client acknowledges nothing);
//   - otherwise the command runs, and its result is kept if it applied.
//
// The number of sessions is bounded (MaxSessions): OpenSession first drops every expired session,
// then, if the table is still full, the one unused the longest (ties: the lowest id).

// Session limits.
const (
	// MaxSessions bounds the open sessions.
	MaxSessions = 65536
	// MaxSessionWindow bounds a session's window (OpenSession.window).
	MaxSessionWindow = 4096
	// MinSessionTTL is the shortest session ttl OpenSession accepts.
	MinSessionTTL = time.Second
	// MaxSessionSeq is the largest sequence number a command may carry (floor + window then never
	// overflows).
	MaxSessionSeq = 1<<63 - 1
)

// owner is a plain value: who opened a session. known: the entry that opened it was written under
// the owner rule, or a snapshot recorded it; principal is then that entry's Command.principal.
type owner struct {
	principal string
	known     bool
}

// admits reports whether apply runs a command of principal p in the session: its owner's, or any
// when the owner is not known.
func (o owner) admits(p string) bool { return !o.known || o.principal == p }

// is reports whether p is known to have opened the session: the leader answers from a session only
// for its owner.
func (o owner) is(p string) bool { return o.known && o.principal == p }

// session is one open client session. It is owned by the apply goroutine; readers take the table's
// lock.
type session struct {
	id         uint64
	owner      owner
	ttl        int64 // ns
	window     uint64
	lastActive int64 // leader time of its last command, Unix ns
	floor      uint64
	// kept holds the kept answers, encoded (wire.ResultTo, deterministic protobuf; a fraction of a
	// store.Result's size): a ring of window slots, the answer to seq in slot seq % window. Every
	// kept seq is in [floor, floor+window), so a slot holds at most one.
	kept [][]byte
	n    int // kept answers
}

func (ss *session) expired(now int64) bool { return now-ss.lastActive > ss.ttl }

func newSession(id uint64, o owner, ttl int64, window uint64, lastActive int64, floor uint64) *session {
	return &session{id: id, owner: o, ttl: ttl, window: window, lastActive: lastActive, floor: floor, kept: make([][]byte, window)}
}

// unknownSession is the refusal of a command whose session the state does not hold, or holds for
// another principal: one answer for both, so that it tells nothing about other principals' sessions.
func unknownSession(id uint64) store.Result {
	return store.Result{Reason: store.SessionExpired, Message: fmt.Sprintf("session %d is unknown or expired", id)}
}

// answer returns the kept encoded answer to seq, nil if none.
func (ss *session) answer(seq uint64) []byte {
	if seq < ss.floor || seq-ss.floor >= ss.window {
		return nil
	}
	return ss.kept[seq%ss.window]
}

// keep keeps the encoded answer to seq, which is in the window.
func (ss *session) keep(seq uint64, b []byte) {
	if ss.kept[seq%ss.window] == nil {
		ss.n++
	}
	ss.kept[seq%ss.window] = b
}

// raise moves the floor up to f, dropping the answers below it.
func (ss *session) raise(f uint64) {
	for seq := ss.floor; seq < f && seq < ss.floor+ss.window; seq++ {
		if ss.kept[seq%ss.window] != nil {
			ss.kept[seq%ss.window] = nil
			ss.n--
		}
	}
	ss.floor = f
}

// encodeResult encodes an answer to keep. Results are made by apply from well-formed values, so
// encoding cannot fail.
func encodeResult(r store.Result) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(wire.ResultTo(r))
	if err != nil {
		panic(fmt.Sprintf("fsm: encode a kept session result: %v", err))
	}
	return b
}

// decodeResult decodes a kept answer.
func decodeResult(b []byte) (store.Result, error) {
	rec := &metadv1.ResultRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return store.Result{}, err
	}
	return wire.ResultFrom(rec)
}

// sessionTable is safe for concurrent use: the apply goroutine writes under mu, the leader's
// service reads (Replay) under its read lock. A snapshot restore replaces the whole table.
type sessionTable struct {
	mu      sync.RWMutex // guards next and byID; a leaf
	limit   int          // MaxSessions (tests lower it)
	next    uint64       // the next session id (ids start at 1)
	byID    map[uint64]*session
	expired *atomic.Uint64 // counts the sessions dropped as expired or least recently used
}

func newSessionTable(next uint64, expired *atomic.Uint64) *sessionTable {
	return &sessionTable{limit: MaxSessions, next: max(next, 1), byID: map[uint64]*session{}, expired: expired}
}

// open opens a session of owner o at leader time now.
func (t *sessionTable) open(now int64, o owner, ttl time.Duration, window uint32) store.Result {
	if ttl < MinSessionTTL || window < 1 || window > MaxSessionWindow {
		return store.Result{Reason: store.InvalidParams, Message: fmt.Sprintf(
			"open session: ttl %s (at least %s) or window %d (1..%d) out of range", ttl, MinSessionTTL, window, MaxSessionWindow)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, ss := range t.byID { // every expired one goes, whatever the order
		if ss.expired(now) {
			delete(t.byID, id)
			t.expired.Add(1)
		}
	}
	if len(t.byID) >= t.limit {
		var lru *session
		for _, ss := range t.byID {
			if lru == nil || ss.lastActive < lru.lastActive || ss.lastActive == lru.lastActive && ss.id < lru.id {
				lru = ss
			}
		}
		delete(t.byID, lru.id)
		t.expired.Add(1)
	}
	id := t.next
	t.next++
	t.byID[id] = newSession(id, o, int64(ttl), uint64(window), now, 1)
	return store.Result{Session: id}
}

// run applies a command of principal by in session h at leader time now: exec runs it unless the
// rules above answer first. ownerRule: the command's entry was written under the owner rule.
func (t *sessionTable) run(now int64, h *metadv1.SessionHeader, by string, ownerRule bool, exec func() store.Result) (r store.Result, duplicate bool) {
	t.mu.Lock()
	ss := t.byID[h.GetSessionId()]
	if ss != nil && ownerRule && !ss.owner.admits(by) {
		t.mu.Unlock()
		return unknownSession(h.GetSessionId()), false
	}
	if ss == nil || ss.expired(now) {
		if ss != nil {
			delete(t.byID, ss.id)
			t.expired.Add(1)
		}
		t.mu.Unlock()
		return unknownSession(h.GetSessionId()), false
	}
	seq := h.GetSeq()
	if seq == 0 || seq > MaxSessionSeq {
		t.mu.Unlock()
		return store.Result{Reason: store.InvalidParams, Message: fmt.Sprintf("session.seq: %d not in 1..%d", seq, uint64(MaxSessionSeq))}, false
	}
	ss.lastActive = max(ss.lastActive, now)
	if f := min(h.GetFirstUnackedSeq(), seq); f > ss.floor {
		ss.raise(f)
	}
	if seq < ss.floor {
		t.mu.Unlock()
		return store.Result{Reason: store.SequenceTooOld, Message: fmt.Sprintf(
			"session %d: seq %d is below the acknowledged floor %d", ss.id, seq, ss.floor)}, false
	}
	if b := ss.answer(seq); b != nil {
		t.mu.Unlock()
		kept, err := decodeResult(b)
		if err != nil {
			panic(fmt.Sprintf("fsm: session %d seq %d: a kept answer does not decode: %v", h.GetSessionId(), seq, err))
		}
		return kept, true
	}
	if seq-ss.floor >= ss.window {
		t.mu.Unlock()
		return store.Result{Reason: store.SequenceTooOld, Message: fmt.Sprintf(
			"session %d: seq %d is past the window of %d above the acknowledged floor %d", ss.id, seq, ss.window, ss.floor)}, false
	}
	t.mu.Unlock()
	r = exec() // the apply goroutine is the only writer: ss stays in the table meanwhile
	if r.Reason == store.OK {
		b := encodeResult(r)
		t.mu.Lock()
		ss.keep(seq, b)
		t.mu.Unlock()
	}
	return r, false
}

// close ends session id of principal by at leader time now (applyCloseSession).
func (t *sessionTable) close(now int64, id uint64, by string) store.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := t.byID[id]
	switch {
	case ss == nil || !ss.owner.admits(by):
		return unknownSession(id)
	case ss.expired(now):
		delete(t.byID, id)
		t.expired.Add(1)
		return unknownSession(id)
	}
	delete(t.byID, id)
	return store.Result{}
}

// replay returns the kept answer of h's (session, seq), if there is one and principal opened the
// session.
func (t *sessionTable) replay(h *metadv1.SessionHeader, principal string) (store.Result, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if ss := t.byID[h.GetSessionId()]; ss != nil && ss.owner.is(principal) {
		if b := ss.answer(h.GetSeq()); b != nil {
			r, err := decodeResult(b)
			return r, err == nil
		}
	}
	return store.Result{}, false
}

// counts returns the open sessions and the answers they keep.
func (t *sessionTable) counts() (sessions, results int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, ss := range t.byID {
		results += ss.n
	}
	return len(t.byID), results
}

// sessionCopy is a session as a snapshot holds it: encoded answers by seq ascending.
type sessionCopy struct {
	id, floor, window uint64
	owner             owner
	ttl, lastActive   int64
	seqs              []uint64
	results           [][]byte
}

// capture copies the table for a snapshot (on the apply goroutine): sessions by id ascending. Kept
// answers are never changed once kept, so they are shared, not copied.
func (t *sessionTable) capture() (next uint64, out []sessionCopy) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ids := slices.Sorted(maps.Keys(t.byID))
	out = make([]sessionCopy, len(ids))
	for i, id := range ids {
		ss := t.byID[id]
		c := sessionCopy{id: id, floor: ss.floor, window: ss.window, owner: ss.owner, ttl: ss.ttl, lastActive: ss.lastActive}
		for seq := ss.floor; seq < ss.floor+ss.window; seq++ {
			if b := ss.kept[seq%ss.window]; b != nil {
				c.seqs, c.results = append(c.seqs, seq), append(c.results, b)
			}
		}
		out[i] = c
	}
	return t.next, out
}

// add installs a session read from a snapshot.
func (t *sessionTable) add(c sessionCopy) error {
	if c.id == 0 || c.id >= t.next {
		return fmt.Errorf("session %d not below the next session id %d", c.id, t.next)
	}
	if _, dup := t.byID[c.id]; dup {
		return fmt.Errorf("session %d twice", c.id)
	}
	if c.window < 1 || c.window > MaxSessionWindow || c.ttl <= 0 || c.floor < 1 {
		return fmt.Errorf("session %d: window %d, ttl %d ns or floor %d out of range", c.id, c.window, c.ttl, c.floor)
	}
	ss := newSession(c.id, c.owner, c.ttl, c.window, c.lastActive, c.floor)
	for i, s := range c.seqs {
		if s < c.floor || s-c.floor >= c.window {
			return fmt.Errorf("session %d: kept answer %d outside its window [%d, %d)", c.id, s, c.floor, c.floor+c.window)
		}
		if _, err := decodeResult(c.results[i]); err != nil {
			return fmt.Errorf("session %d seq %d: %v", c.id, s, err)
		}
		ss.keep(s, c.results[i])
	}
	t.byID[c.id] = ss
	return nil
}

// applyOpenSession opens a client session.
func applyOpenSession(st *State, e env, c *metadv1.Command) store.Result {
	m := c.GetOpenSession()
	o := owner{principal: c.GetPrincipal(), known: e.rules >= rulesSessionOwner}
	if !o.known {
		o.principal = "" // the entry's leader did not stand for its principal: no owner is recorded
	}
	r := st.sessions.open(e.now, o, time.Duration(min(m.GetTtlMs(), 1<<40))*time.Millisecond, m.GetWindow())
	if r.Reason == store.OK {
		e.m.sessionsOpened.Add(1)
	}
	return r
}

// applyCloseSession ends a session of the command's principal: SESSION_EXPIRED, the answer of an
// unknown session, for one the state does not hold, one unused for its ttl, or one another
// principal opened.
func applyCloseSession(st *State, e env, c *metadv1.Command) store.Result {
	return st.sessions.close(e.now, c.GetCloseSession().GetSessionId(), c.GetPrincipal())
}

// runCommand applies one command, through its session when it carries one. A command authorized
// against an older auth revision is refused first (AUTH_REVISION_STALE): its session never sees
// it, so the refusal is not kept as the answer to its seq and the retry with the same seq runs.
func (f *FSM) runCommand(st *State, e env, c *metadv1.Command) store.Result {
	if r, stale := auth.Stale(st.Auth(), c); stale {
		return r
	}
	h := c.GetSession()
	if h.GetSessionId() == 0 {
		return dispatch(st, e, c)
	}
	r, dup := st.sessions.run(e.now, h, c.GetPrincipal(), e.rules >= rulesSessionOwner, func() store.Result { return dispatch(st, e, c) })
	if dup {
		f.m.sessionDuplicates.Add(1)
	}
	return r
}
