package client

import (
	"context"
	"errors"
	"testing"
	"time"

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
