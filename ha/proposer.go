package ha

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// Proposer turns concurrent commands into few log entries. Callers take a slot (bounded: at most
// MaxInflight commands proposed and not yet applied), then hand their command to one loop
// goroutine, which coalesces every command waiting at that moment (up to MaxBatch) into one
// Envelope stamped with the leader's time and a seed, and passes it to Raft. At most MaxEntriesOut
// entries are in flight; while they commit, new commands queue and form the next, larger entry. So
// one fsync carries many commands under load, and a lone command goes out at once.
//
// Concurrency contract: Reserve, TryReserve, Slot.Propose and Propose are safe for concurrent use.
// reqs is sent on by Slot.Propose and read by the loop; it is never closed (the loop stops on
// stop). A Slot must be used at most once and is released when its command completes or, unused,
// by Slot.Release.
type Proposer struct {
	raft     *raft.Raft
	leader   func() (name, addr string)
	maxBatch int
	applyTO  time.Duration
	slots    chan struct{} // a token per free slot
	reqs     chan *proposal
	entries  chan struct{} // a token per entry that may be in flight
	stop     chan struct{} // closed by Close
	loopDone chan struct{} // closed by the loop when it has exited and answered what it drained
	ready    func() bool   // TryReserve hands out slots only when this holds (term-start barrier done)
	wg       sync.WaitGroup
	onEntry  func(commands int)       // metrics hook (commands per entry); may be nil
	onDone   func(took time.Duration) // metrics hook (entry committed and applied); may be nil
	rnd      *rand.Rand               // seeds; only the loop goroutine uses it
	stopOnce sync.Once
	clock    func() time.Time
}

type proposal struct {
	cmd  *metadv1.Command
	done chan proposalResult // buffered 1; the loop or its completion sends exactly once
}

type proposalResult struct {
	res fsm.Result
	err error
}

func newProposer(r *raft.Raft, cfg Config, leader func() (string, string)) *Proposer {
	p := &Proposer{
		raft:     r,
		leader:   leader,
		maxBatch: cfg.MaxBatch,
		applyTO:  cfg.ApplyTimeout,
		slots:    make(chan struct{}, cfg.MaxInflight),
		reqs:     make(chan *proposal, cfg.MaxInflight),
		entries:  make(chan struct{}, cfg.MaxEntriesOut),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
		ready:    func() bool { return true },
		rnd:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6d65746164)),
		clock:    time.Now,
	}
	for range cfg.MaxInflight {
		p.slots <- struct{}{}
	}
	for range cfg.MaxEntriesOut {
		p.entries <- struct{}{}
	}
	p.wg.Add(1)
	go p.loop()
	return p
}

// Slot is a reserved place in the replication pipeline: eviction takes one before it takes any
// metadata lock, so it never holds a lock while waiting for the pipeline.
type Slot struct {
	p    *Proposer
	used bool
}

// TryReserve takes a slot if one is free and this node is a leader whose term-start barrier has
// been applied (so its soft state is the current term's); it never waits.
func (p *Proposer) TryReserve() (*Slot, bool) {
	if p.raft.State() != raft.Leader || !p.ready() {
		return nil, false
	}
	select {
	case <-p.slots:
		return &Slot{p: p}, true
	default:
		return nil, false
	}
}

// Reserve waits for a slot, failing fast when this node is not the leader.
func (p *Proposer) Reserve(ctx context.Context) (*Slot, error) {
	if p.raft.State() != raft.Leader {
		return nil, p.notLeader()
	}
	select {
	case <-p.slots:
		return &Slot{p: p}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.stop:
		return nil, ErrShutdown
	}
}

// Release returns an unused slot.
func (s *Slot) Release() {
	if !s.used {
		s.used = true
		s.p.slots <- struct{}{}
	}
}

// Propose replicates cmd and returns its result. The slot is consumed.
func (s *Slot) Propose(ctx context.Context, cmd *metadv1.Command) (fsm.Result, error) {
	if s.used {
		panic("ha: slot used twice")
	}
	s.used = true
	pr := &proposal{cmd: cmd, done: make(chan proposalResult, 1)}
	select {
	case s.p.reqs <- pr: // never blocks long: reqs has room for every slot
	case <-s.p.stop:
		s.p.slots <- struct{}{}
		return fsm.Result{}, ErrShutdown
	}
	select {
	case r := <-pr.done:
		return r.res, r.err
	case <-ctx.Done():
		return fsm.Result{}, fmt.Errorf("%w: %w", ErrUnknown, ctx.Err())
	case <-s.p.loopDone:
		// The loop is gone. It answered everything it took; a proposal enqueued after its last
		// drain was never sent to Raft.
		select {
		case r := <-pr.done:
			return r.res, r.err
		default:
			return fsm.Result{}, ErrShutdown
		}
	}
}

// Propose reserves a slot and proposes cmd.
func (p *Proposer) Propose(ctx context.Context, cmd *metadv1.Command) (fsm.Result, error) {
	s, err := p.Reserve(ctx)
	if err != nil {
		return fsm.Result{}, err
	}
	return s.Propose(ctx, cmd)
}

// Close stops the loop; proposals waiting get ErrShutdown.
func (p *Proposer) Close() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.wg.Wait()
}

func (p *Proposer) notLeader() error {
	name, addr := p.leader()
	return &NotLeaderError{LeaderName: name, LeaderAddr: addr}
}

// loop coalesces waiting proposals into entries.
func (p *Proposer) loop() {
	defer p.wg.Done()
	defer close(p.loopDone)
	batch := make([]*proposal, 0, p.maxBatch)
	for {
		var first *proposal
		select {
		case first = <-p.reqs:
		case <-p.stop:
			p.drain(ErrShutdown)
			return
		}
		// Wait for room in the pipeline; commands keep queueing meanwhile and join this entry.
		select {
		case <-p.entries:
		case <-p.stop:
			p.finish([]*proposal{first}, nil, ErrShutdown)
			p.drain(ErrShutdown)
			return
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < p.maxBatch {
			select {
			case pr := <-p.reqs:
				batch = append(batch, pr)
			default:
				break fill
			}
		}
		p.send(batch)
		batch = make([]*proposal, 0, p.maxBatch) // the completion goroutine owns the old one
	}
}

// send encodes one entry and hands it to Raft; a goroutine waits for it and answers each proposal.
// If Raft shuts down with the entry queued for the FSM, the future is never answered
// (hashicorp/raft#498) and that goroutine stays blocked; its callers get ErrShutdown from the loop's
// end (Slot.Propose).
func (p *Proposer) send(batch []*proposal) {
	env := &metadv1.Envelope{LeaderTimeUnixNano: p.clock().UnixNano(), Seed: p.rnd.Uint64(),
		Commands: make([]*metadv1.Command, len(batch))}
	for i, pr := range batch {
		env.Commands[i] = pr.cmd
	}
	data, err := fsm.EncodeEnvelope(env)
	if err != nil {
		p.entries <- struct{}{}
		p.finish(batch, nil, fmt.Errorf("ha: encode entry: %w", err))
		return
	}
	if p.onEntry != nil {
		p.onEntry(len(batch))
	}
	start := time.Now()
	f := p.raft.Apply(data, p.applyTO)
	go func() {
		err := f.Error()
		p.entries <- struct{}{}
		if err == nil && p.onDone != nil {
			p.onDone(time.Since(start))
		}
		if err != nil {
			p.finish(batch, nil, p.mapErr(err))
			return
		}
		res, ok := f.Response().(*fsm.EntryResult)
		if !ok || len(res.Results) != len(batch) {
			p.finish(batch, nil, fmt.Errorf("ha: entry %d returned %T", f.Index(), f.Response()))
			return
		}
		// Raft's log cache holds the entry by a pointer into its future, so the future and this
		// response stay reachable until LogCacheEntries later entries have replaced it: the results
		// of the last 1024 entries (a batch command's has a Result per item, with its replicas),
		// which nobody reads again; a bulk load left hundreds of megabytes so on the leader. The
		// callers own the results from here on.
		results := res.Results
		res.Results = nil
		p.finish(batch, results, nil)
	}()
}

func (p *Proposer) finish(batch []*proposal, results []fsm.Result, err error) {
	for i, pr := range batch {
		r := proposalResult{err: err}
		if err == nil {
			r.res = results[i]
		}
		pr.done <- r
		p.slots <- struct{}{}
	}
}

// drain answers every queued proposal with err.
func (p *Proposer) drain(err error) {
	for {
		select {
		case pr := <-p.reqs:
			p.finish([]*proposal{pr}, nil, err)
		default:
			return
		}
	}
}

// mapErr turns Raft's errors into this package's.
func (p *Proposer) mapErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return p.notLeader() // refused before it reached the log: safe to retry elsewhere
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %v", ErrUnknown, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	}
	return err
}
