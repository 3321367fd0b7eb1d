package ha

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// fakeVerifier is a Raft whose commit index moves on its own and whose VerifyLeader succeeds after
// a few yields. It counts the rounds running at once.
type fakeVerifier struct {
	commit  atomic.Uint64
	running atomic.Int32
	most    atomic.Int32
	rounds  atomic.Int64
	fail    atomic.Bool
}

func (f *fakeVerifier) CommitIndex() uint64 { return f.commit.Load() }

func (f *fakeVerifier) VerifyLeader() raft.Future {
	n := f.running.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	f.rounds.Add(1)
	for range 20 {
		runtime.Gosched()
	}
	f.running.Add(-1)
	if f.fail.Load() {
		return errFuture{raft.ErrNotLeader}
	}
	return errFuture{}
}

type errFuture struct{ err error }

func (e errFuture) Error() error { return e.err }

// Every read is answered by a round that started after it arrived: once wait returns, the state
// machine has applied at least the commit index the read saw when it arrived. One round runs at a
// time, concurrent reads share rounds, and an error reaches every read of its round.
func TestReadBarrierRounds(t *testing.T) {
	f := &fakeVerifier{}
	applied := newAppliedWaiter()
	stop := make(chan struct{})
	b := &readBarrier{raft: f, applied: applied, waitReady: func(context.Context) error { return nil },
		ready: func() error { return nil }, stop: stop}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { // writes commit, and apply trails them
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			c := f.commit.Add(1)
			runtime.Gosched()
			applied.advance(c)
		}
	}()
	const readers, reads = 16, 300
	var rg sync.WaitGroup
	for range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for range reads {
				seen := f.commit.Load()
				if err := b.wait(context.Background()); err != nil {
					t.Errorf("wait: %v", err)
					return
				}
				applied.mu.Lock()
				got := applied.index
				applied.mu.Unlock()
				if got < seen {
					t.Errorf("answered with applied index %d < %d committed before the read arrived", got, seen)
					return
				}
			}
		}()
	}
	rg.Wait()
	if m := f.most.Load(); m > 1 {
		t.Errorf("%d rounds ran at once", m)
	}
	if r := f.rounds.Load(); r >= readers*reads {
		t.Errorf("%d rounds for %d reads: reads did not share rounds", r, readers*reads)
	}
	t.Logf("%d reads in %d rounds, at most %d at once", readers*reads, f.rounds.Load(), f.most.Load())

	f.fail.Store(true)
	var fg sync.WaitGroup
	for range readers {
		fg.Add(1)
		go func() {
			defer fg.Done()
			if err := b.wait(context.Background()); !errors.Is(err, raft.ErrNotLeader) {
				t.Errorf("wait with leadership lost: %v", err)
			}
		}()
	}
	fg.Wait()
	close(done)
	wg.Wait()
	close(stop)
}
