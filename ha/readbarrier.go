package ha

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// readBarrier gives linearizable reads a shared confirmation of leadership, like a ReadIndex. A
// round records the commit index, confirms leadership with one heartbeat round (VerifyLeader), and
// waits until the state machine has applied up to that index; every read that arrived before the
// round started is answered by it. Reads arriving during a round join the next one, so a burst of
// concurrent reads costs one round trip to the followers, not one each.
//
// Concurrency contract: wait is safe for concurrent use. mu guards waiters and running; at most one
// round goroutine runs at a time.
type readBarrier struct {
	raft    leaderVerifier
	applied *appliedWaiter
	ready   func() error    // nil when this node may serve linearizable reads (leader, term's barrier done)
	stop    <-chan struct{} // closed when the node shuts down
	// observe, when set, is told how long each successful round spent confirming leadership and
	// then waiting for apply (metrics).
	observe func(verify, applyWait time.Duration)

	mu      sync.Mutex
	waiters []chan error
	running bool
}

// wait returns nil once a read started now may be served from the local state machine.
//
// Why waiting for the recorded commit index is enough: the FSM sees every command and configuration
// entry. The only entries it does not see are the no-op a leader appends when its term starts and
// Raft barriers; a node becomes ready for reads only after its term-start barrier has been applied,
// and the node records the applied index after every barrier it runs, so every index a round
// records is one the FSM will report.
func (b *readBarrier) wait(ctx context.Context) error {
	if err := b.ready(); err != nil {
		return err
	}
	ch := make(chan error, 1)
	b.mu.Lock()
	b.waiters = append(b.waiters, ch)
	if !b.running {
		b.running = true
		go b.rounds()
	}
	b.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderVerifier is what a round needs of Raft (*raft.Raft; tests fake it).
type leaderVerifier interface {
	CommitIndex() uint64
	VerifyLeader() raft.Future
}

func (b *readBarrier) rounds() {
	for {
		b.mu.Lock()
		ws := b.waiters
		b.waiters = nil
		if len(ws) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		err := b.round()
		for _, w := range ws {
			w <- err
		}
	}
}

func (b *readBarrier) round() error {
	start := time.Now()
	idx := b.raft.CommitIndex()
	if err := b.raft.VerifyLeader().Error(); err != nil {
		return err
	}
	verified := time.Now()
	if err := b.ready(); err != nil {
		return err
	}
	if !b.applied.waitFor(idx, b.stop) {
		return ErrShutdown
	}
	if b.observe != nil {
		b.observe(verified.Sub(start), time.Since(verified))
	}
	return nil
}

// appliedWaiter lets goroutines wait until the FSM has applied an index. The FSM wrapper calls
// advance after every batch it applies. Concurrency contract: mu guards index and ch; ch is closed
// (and replaced) on every advance, which is how waiters learn to look again.
type appliedWaiter struct {
	mu    sync.Mutex
	index uint64
	ch    chan struct{}
}

func newAppliedWaiter() *appliedWaiter { return &appliedWaiter{ch: make(chan struct{})} }

func (w *appliedWaiter) advance(idx uint64) {
	w.mu.Lock()
	if idx > w.index {
		w.index = idx
	}
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// waitFor returns true once index idx is applied, false if stop closes first.
func (w *appliedWaiter) waitFor(idx uint64, stop <-chan struct{}) bool {
	for {
		w.mu.Lock()
		if w.index >= idx {
			w.mu.Unlock()
			return true
		}
		ch := w.ch
		w.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			return false
		}
	}
}
