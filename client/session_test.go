package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

// full returns a session state whose maxSessions sessions each have a window of one number, in use.
func full() *session {
	s := newSession()
	for i := range maxSessions {
		s.open = append(s.open, &seqs{id: uint64(i + 1), window: 1, next: 2, inflight: map[uint64]struct{}{1: {}}})
	}
	return s
}

// TestSessionWindowWait: a write waits while every session's window is full, gives up with its
// context (nothing sent), and takes the number a returning call releases.
func TestSessionWindowWait(t *testing.T) {
	s := full()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if h, err := s.begin(ctx, nil); !errors.Is(err, context.DeadlineExceeded) || h != nil {
		t.Fatalf("begin on full sessions: %v %v, want the context's deadline", h, err)
	}
	got := make(chan *metadv1.SessionHeader, 1)
	go func() {
		h, err := s.begin(context.Background(), nil)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	s.end(&metadv1.SessionHeader{SessionId: 3, Seq: 1})
	select {
	case h := <-got:
		if h.GetSessionId() != 3 || h.GetSeq() != 2 || h.GetFirstUnackedSeq() != 2 {
			t.Fatalf("took %v, want session 3's next number", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting write did not take the released number")
	}
}

// TestSessionExpiredInEverySession: a write whose first attempt meets SESSION_EXPIRED goes again in
// the client's next session, as many times as it has sessions that expired, and succeeds in one
// that is open.
func TestSessionExpiredInEverySession(t *testing.T) {
	s := newSession()
	for i := range 3 {
		s.open = append(s.open, &seqs{id: uint64(i + 1), window: 4, next: 1, inflight: map[uint64]struct{}{}})
	}
	c := &Client{sess: s}
	expired, _ := status.New(codes.FailedPrecondition, "SESSION_EXPIRED").WithDetails(&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_SESSION_EXPIRED})
	req := &metadv1.PutEndRequest{}
	var used []uint64
	n, err := c.inSession(context.Background(), req, func() (int, error) {
		used = append(used, req.GetSession().GetSessionId())
		if req.GetSession().GetSessionId() < 3 {
			return 1, expired.Err()
		}
		return 1, nil
	})
	if err != nil || n != 1 || len(used) != 3 || used[2] != 3 || len(s.open) != 1 {
		t.Fatalf("n %d err %v, sessions used %v, %d left open; want success in session 3, the 2 expired dropped", n, err, used, len(s.open))
	}
}
