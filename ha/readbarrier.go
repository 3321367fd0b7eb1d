package ha

import (
	"context"
	"sync"
	"sync/atomic"
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
	// waitReady returns nil once this node leads and its term's barrier is applied, waiting while it
	// leads but is not ready yet; an error when it does not lead (or stops, or ctx ends first).
	waitReady func(ctx context.Context) error
	ready     func() error    // waitReady without the wait: nil when ready now
	stop      <-chan struct{} // closed when the node shuts down
	// observe, when set, is told how long each successful round spent confirming leadership and
	// then waiting for apply (metrics).
	observe func(verify, applyWait time.Duration)
	// confirmed, when set, is told the term a successful round confirmed leadership in and when
	// the round started (the leader lease).
	confirmed func(term uint64, start time.Time)
	// term returns the term this node is ready in (0: none).
	term func() uint64
	// leased, when set, returns the commit index to read at without a round, and true, while the
	// leader lease holds with at least half of it left (lease.go); false otherwise.
	leased func() (uint64, bool)

	mu      sync.Mutex
	waiters []chan error
	running bool
}

// wait returns nil once a read started now may be served from the local state machine. A leader
// that has not applied its term-start barrier yet makes the read wait for it rather than refuse it:
// the client asked the right node, which will answer shortly.
//
// Why waiting for the recorded commit index is enough: the FSM sees every command and configuration
// entry. The only entries it does not see are the no-op a leader appends when its term starts and
// Raft barriers; a node becomes ready for reads only after its term-start barrier has been applied,
// and the node records the applied index after every barrier it runs, so every index a round
// records is one the FSM will report.
func (b *readBarrier) wait(ctx context.Context) error {
	if err := b.waitReady(ctx); err != nil {
		return err
	}
	// Under the leader lease no other node can lead, so no write this node has not committed can
	// have been acknowledged: its commit index, read now, is a linearizable read point, and the
	// heartbeat round can be skipped. With less than half the lease left the read runs a round,
	// which renews the lease for the reads after it.
	if b.leased != nil {
		if idx, ok := b.leased(); ok {
			if !b.applied.waitFor(idx, b.stop) {
				return ErrShutdown
			}
			return nil
		}
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
	var term uint64
	if b.term != nil {
		term = b.term()
	}
	idx := b.raft.CommitIndex()
	if err := b.raft.VerifyLeader().Error(); err != nil {
		return err
	}
	verified := time.Now()
	if err := b.ready(); err != nil {
		return err
	}
	if b.confirmed != nil && term != 0 && b.term() == term {
		b.confirmed(term, start)
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

// readiness is safe for concurrent use: term is read without a lock and written only by the
// leadership goroutine (set); mu guards ch and waiting, and ch is closed (and replaced) on every
// change of term, which is how waiters learn to look again. It records the term in which this node,
// leading, has applied its term-start barrier: from then until that term ends its state holds
// everything committed before the term, so it may decide requests from its own state
// (linearizable reads, removal checks, refusals).
type readiness struct {
	term    atomic.Uint64 // 0: not ready in any term
	mu      sync.Mutex
	ch      chan struct{}
	waiting int // goroutines blocked in wait (tests watch it)
}

func newReadiness() *readiness { return &readiness{ch: make(chan struct{})} }

// set records the term this node is ready in (0: none) and wakes every waiter.
func (r *readiness) set(term uint64) {
	r.term.Store(term)
	r.mu.Lock()
	close(r.ch)
	r.ch = make(chan struct{})
	r.mu.Unlock()
}

// wait returns what check answers once check is done, or ctx's error, or ErrShutdown when stop
// closes first. check reports done false while the node leads but is not ready yet: wait then
// blocks until the next change of term and asks again.
func (r *readiness) wait(ctx context.Context, stop <-chan struct{}, check func() (done bool, err error)) error {
	for {
		r.mu.Lock()
		ch := r.ch // taken before looking, so that a change after the look wakes us
		r.mu.Unlock()
		done, err := check()
		if done {
			return err
		}
		r.mu.Lock()
		r.waiting++
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop:
			err = ErrShutdown
		}
		r.mu.Lock()
		r.waiting--
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// waiters returns how many goroutines wait for readiness now.
func (r *readiness) waiters() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}
