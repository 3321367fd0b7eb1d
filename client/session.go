package client

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"metad/proto/metadv1"
)

// Sessions (exactly-once writes). Unless Config.NoSession is set, the client opens a session on
// the cluster with its first write (OpenSession) and numbers its writes: every request that takes a
// SessionHeader carries the session, a sequence number of its own that every retry of the call
// reuses (to any endpoint), and the lowest number still waiting for its answer. The cluster runs a
// numbered write at most once and answers a retry of one that applied with the first answer: a
// retried PutStart returns the replicas of the attempt whose answer was lost, a retried Remove
// succeeds. A session's numbers in use span at most its window (64 by default); a client writes
// through up to maxSessions sessions, and a write waits only when every one is full.
//
// A session unused for its ttl (5 minutes by default) expires, and a snapshot restore ends every
// session. A call whose first attempt meets SESSION_EXPIRED (nothing was done) drops that session
// and goes again in another, opening a new one when none is left; one whose later attempt meets it
// returns the error: an earlier attempt may have applied, and the outcome is unknown.
// Without a session (NoSession, or a cluster that does not know OpenSession) a write is at most
// once, and its outcome is unknown when its answer is lost.

// maxSessions bounds the sessions one client writes through. A write takes a number of any session
// whose window has room; one slow write pins its session's window (its answer, and every later one
// of that session, stay unacknowledged), so the others carry on, and a client opens another session
// only when every open one is full.
const maxSessions = 4

// session is safe for concurrent use. It is this client's sessions and the numbers in use.
type session struct {
	openMu sync.Mutex // serializes opening; taken before mu, never while mu is held

	mu      sync.Mutex    // guards the fields below; a leaf (no I/O under it)
	changed chan struct{} // closed and replaced when a number is released or a session changes
	off     bool          // the cluster does not know sessions: write without
	open    []*seqs       // the open sessions
}

// seqs is one open session: its window and the numbers in use (guarded by session.mu).
type seqs struct {
	id       uint64
	window   uint64
	next     uint64              // the next sequence number
	inflight map[uint64]struct{} // numbers whose calls have not returned
}

func newSession() *session { return &session{changed: make(chan struct{})} }

// wake tells waiting writes that a number was released or a session changed (mu held).
func (s *session) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// floor is the lowest number in use, or next when none is.
func (q *seqs) floor() uint64 {
	f := q.next
	for seq := range q.inflight {
		f = min(f, seq)
	}
	return f
}

func (q *seqs) room() bool { return q.next-q.floor() < q.window }

// begin takes the next number of an open session with room, opening a session when none is open or
// every open one is full (up to maxSessions), and waiting while all are full (until ctx ends: its
// error, nothing sent). nil, nil: write without a session.
func (s *session) begin(ctx context.Context, c *Client) (*metadv1.SessionHeader, error) {
	for {
		s.mu.Lock()
		if s.off {
			s.mu.Unlock()
			return nil, nil
		}
		for _, q := range s.open {
			if q.room() {
				seq := q.next
				q.next++
				q.inflight[seq] = struct{}{}
				h := &metadv1.SessionHeader{SessionId: q.id, Seq: seq, FirstUnackedSeq: q.floor()}
				s.mu.Unlock()
				return h, nil
			}
		}
		if len(s.open) >= maxSessions {
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		have := len(s.open)
		s.mu.Unlock()
		if err := s.add(ctx, c, have); err != nil {
			return nil, err
		}
	}
}

// add opens a session unless one was added since the caller saw have open.
func (s *session) add(ctx context.Context, c *Client, have int) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	done := s.off || len(s.open) != have
	s.mu.Unlock()
	if done {
		return nil
	}
	resp, err := call(ctx, c, metadv1.MetadataClient.OpenSession, &metadv1.OpenSessionRequest{ClientId: c.idBytes})
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case status.Code(err) == codes.Unimplemented:
		s.off = true // a cluster without sessions: at most once, as before
		return nil
	case err != nil:
		return err
	}
	s.open = append(s.open, &seqs{id: resp.GetSessionId(), window: uint64(max(resp.GetWindow(), 1)), next: 1, inflight: map[uint64]struct{}{}})
	s.wake()
	return nil
}

// end releases h's number.
func (s *session) end(h *metadv1.SessionHeader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.open {
		if q.id == h.GetSessionId() {
			delete(q.inflight, h.GetSeq())
			s.wake()
			return
		}
	}
}

// expired forgets the session h named, so that a later begin opens another.
func (s *session) expired(h *metadv1.SessionHeader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = slices.DeleteFunc(s.open, func(q *seqs) bool { return q.id == h.GetSessionId() })
	s.wake()
}

// drain forgets every open session and returns their ids (Close ends them on the cluster).
func (s *session) drain() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uint64, len(s.open))
	for i, q := range s.open {
		ids[i] = q.id
	}
	s.open = nil
	s.wake()
	return ids
}

// using reports whether the client writes with sessions (open, or to be opened).
func (s *session) using() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.off
}

// sessionField returns req's session header field, nil if the request takes none.
func sessionField(req any) protoreflect.FieldDescriptor {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	fd := m.ProtoReflect().Descriptor().Fields().ByName("session")
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != (&metadv1.SessionHeader{}).ProtoReflect().Descriptor().FullName() {
		return nil
	}
	return fd
}

// inSession runs run, which sends req (retried), under the client's session when req takes a
// header and the client has one (see the rules above). It returns run's attempt count and error.
func (c *Client) inSession(ctx context.Context, req any, run func() (int, error)) (int, error) {
	fd := sessionField(req)
	if fd == nil || c.sess == nil {
		return run()
	}
	m := req.(proto.Message).ProtoReflect()
	for try := 0; ; try++ {
		h, err := c.sess.begin(ctx, c)
		if err != nil {
			return 0, err
		}
		if h == nil {
			m.Clear(fd)
			return run()
		}
		m.Set(fd, protoreflect.ValueOfMessage(h.ProtoReflect()))
		n, err := run()
		c.sess.end(h)
		// A first attempt that met SESSION_EXPIRED did nothing: drop the session and go again in
		// another (each of the client's sessions may have expired, and a new one is opened last).
		if n == 1 && try <= maxSessions && IsReason(err, metadv1.Reason_REASON_SESSION_EXPIRED) {
			c.sess.expired(h)
			continue
		}
		return n, err
	}
}

// sessions reports whether this client's writes carry a session header.
func (c *Client) sessions() bool { return c.sess != nil && c.sess.using() }
