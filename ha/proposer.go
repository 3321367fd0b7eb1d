package ha

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// Proposer turns concurrent commands into few log entries. Callers take a slot (bounded: at most
// MaxInflight commands proposed and not yet applied), then hand their command to one loop
// goroutine, which coalesces every command waiting at that moment (up to the batch limit) into one
// Envelope stamped with the leader's time and a seed, and passes it to Raft. How many entries may
// be in flight at once, and when a further one opens, is the pipeline rule's (pipelineRule):
// while entries commit, new commands queue and form the next entry, so one fsync carries many
// commands under load, and a lone command goes out at once.
//
// Concurrency contract: Reserve, TryReserve, Slot.Propose and Propose are safe for concurrent use.
// reqs is sent on by Slot.Propose and read by the loop; it is never closed (the loop stops on
// stop). freed is sent on by each entry's completion goroutine, once per entry, and read by the
// loop; it has room for every entry that may be in flight, so a completion never waits on it. A
// Slot must be used at most once and is released when its command completes or, unused, by
// Slot.Release.
type Proposer struct {
	raft     *raft.Raft
	leader   func() (name, addr string)
	maxBatch int
	applyTO  time.Duration
	slots    chan struct{}      // a token per free slot
	reqs     chan *proposal     // queued commands, for the loop
	freed    chan time.Duration // an entry's end, with its commit latency (0 when it failed)
	stop     chan struct{}      // closed by Close
	loopDone chan struct{}      // closed by the loop when it has exited and answered what it drained
	ready    func() bool        // TryReserve hands out slots only when this holds (term-start barrier done)
	wg       sync.WaitGroup
	onEntry  func(commands int)       // metrics hook (commands per entry); may be nil
	onDone   func(took time.Duration) // metrics hook (entry committed and applied); may be nil
	rnd      *rand.Rand               // seeds; only the loop goroutine uses it
	stopOnce sync.Once
	clock    func() time.Time

	rule     pipelineRule // only the loop goroutine uses it
	inflight atomic.Int64 // entries in Raft's hands now; written by the loop, read by metrics
	open     atomic.Int64 // the rule's threshold for a further entry, in commands (-1: none yet); loop writes
}

// The pipeline rule. Raft sends a follower one AppendEntries at a time (peerMaxInFlight), so a
// commit round has two stages that can overlap: the leader's write of its log (one fsync) and the
// followers' write of what the leader sent them. A third entry in flight finds both stages busy: it
// waits in Raft's apply queue and joins the next leader write, or is sent to a follower with the
// entry before it, so it adds no overlap, only a split of one entry into two. Each overlapping
// stage needs a processor to run on. Hence at most pipelineStages entries in flight, and no more
// than GOMAXPROCS.
const pipelineStages = peerMaxInFlight + 1

// ewmaGain is the weight of a new sample in the proposer's moving averages (commit latency,
// arrival rate): RFC 6298's smoothing gain for round-trip times, a filter over the last eight
// or so samples that follows a change of load within a few rounds and ignores one slow fsync.
const ewmaGain = 1.0 / 8

// cpuTimes reads the machine's CPU time counters (Linux /proc/stat, in clock ticks): idle (idle
// and iowait: no work to run) and total, summed over every CPU; ok is false where they cannot be
// read.
func cpuTimes() (idle, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total, true
}

// machineCPUTimes is what a new proposer reads the machine's CPU counters with (tests replace it
// before they start a node).
var machineCPUTimes = cpuTimes

// pipelineRule decides when the proposer opens a log entry. Not safe for concurrent use: the
// proposer's loop owns it.
//
// An entry goes out at once when none is in flight. With k in flight and k < limit, a further
// entry goes out only in adaptive mode and only when the commands queued already number what one
// commit round brings, arrival rate x commit latency (both measured, moving averages): then the
// entry that would leave when the in-flight one commits is full already, sending it now carries as
// many commands per fsync as waiting would, and saves them the rest of the round. The overlapping
// stage needs a processor of its own, and clients that wait for their answers split among the
// entries in flight (with k in flight each carries about 1/(k+1) of them), so a second entry costs
// fsyncs and processor time per command that only an idle processor pays for: it also needs the
// machine to have had at least one whole CPU idle over the last sample (about eight commit rounds,
// the averages' window; where the machine's CPU times cannot be read, none counts as idle). With a
// fixed limit (Config's MaxEntriesOut), a further entry goes out whenever fewer than limit are in
// flight.
type pipelineRule struct {
	limit    int  // entries in flight at most
	adaptive bool // false: open an entry whenever fewer than limit are in flight

	latency  float64 // seconds; moving average of an entry's commit latency; 0 until measured
	rate     float64 // commands per second; moving average of the arrival rate; 0 until measured
	lastSend time.Time

	cpus     int                                  // CPUs the machine has (runtime.NumCPU)
	cpuTimes func() (idle, total uint64, ok bool) // the machine's CPU time counters (cpuTimes)
	idleCPUs float64                              // CPUs idle on average over the last sample
	sampled  time.Time                            // when the counters were last read
	idle0    uint64                               // the counters read then
	total0   uint64
}

// pipelineLimits returns the entries in flight at most and the commands per entry at most for a
// config and a processor count (GOMAXPROCS): MaxEntriesOut and MaxBatch where set, else derived.
// The derived batch limit shares the slots among the entries that may be in flight, so every
// command holding a slot can be in an entry and the slots alone bound what waits.
func pipelineLimits(cfg Config, procs int) (entries, batch int, adaptive bool) {
	entries, adaptive = cfg.MaxEntriesOut, cfg.MaxEntriesOut == 0
	if adaptive {
		entries = max(1, min(pipelineStages, procs))
	}
	batch = cfg.MaxBatch
	if batch == 0 {
		batch = max(1, cfg.MaxInflight/entries)
	}
	return entries, batch, adaptive
}

// threshold returns how many queued commands open a further entry while some are in flight:
// the commands one commit round brings, at least one; ok is false until both averages are
// measured (until then one entry at a time).
func (r *pipelineRule) threshold() (n float64, ok bool) {
	if r.latency == 0 || r.rate == 0 {
		return 0, false
	}
	return max(1, r.rate*r.latency), true
}

// mayOpen reports whether an entry of queued commands may go out with inflight entries in flight.
func (r *pipelineRule) mayOpen(inflight, queued int) bool {
	switch {
	case queued == 0 || inflight >= r.limit:
		return false
	case inflight == 0 || !r.adaptive:
		return true
	}
	n, ok := r.threshold()
	return ok && float64(queued) >= n && r.idleCPUs >= 1
}

// sampleCPU reads the machine's CPU counters when a sample's window (eight commit rounds) has
// passed since the last read, and sets idleCPUs to the CPUs idle on average in between.
func (r *pipelineRule) sampleCPU(now time.Time) {
	if r.cpuTimes == nil || (!r.sampled.IsZero() && now.Sub(r.sampled).Seconds() < r.latency/ewmaGain) {
		return
	}
	idle, total, ok := r.cpuTimes()
	if !ok {
		r.idleCPUs, r.sampled = 0, now
		return
	}
	if !r.sampled.IsZero() && total > r.total0 && idle >= r.idle0 {
		r.idleCPUs = float64(idle-r.idle0) / float64(total-r.total0) * float64(r.cpus)
	}
	r.sampled, r.idle0, r.total0 = now, idle, total
}

// sent records an entry of n commands sent at now: the commands that arrived since the previous
// entry, a sample of the arrival rate. An entry cut short by the batch limit counts too: its
// commands arrived in that interval, and the ones left over count in the next.
func (r *pipelineRule) sent(n int, now time.Time) {
	if !r.lastSend.IsZero() {
		if d := now.Sub(r.lastSend).Seconds(); d > 0 {
			r.rate = ewma(r.rate, float64(n)/d)
		}
	}
	r.lastSend = now
}

// committed records an entry's commit latency (handed to Raft until applied).
func (r *pipelineRule) committed(took time.Duration) {
	if took > 0 {
		r.latency = ewma(r.latency, took.Seconds())
	}
}

// ewma folds sample into avg; the first sample (avg 0) is taken as it is.
func ewma(avg, sample float64) float64 {
	if avg == 0 {
		return sample
	}
	return avg + ewmaGain*(sample-avg)
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
	entries, batch, adaptive := pipelineLimits(cfg, runtime.GOMAXPROCS(0))
	p := &Proposer{
		raft:     r,
		leader:   leader,
		maxBatch: batch,
		applyTO:  cfg.ApplyTimeout,
		slots:    make(chan struct{}, cfg.MaxInflight),
		reqs:     make(chan *proposal, cfg.MaxInflight),
		freed:    make(chan time.Duration, entries),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
		ready:    func() bool { return true },
		rnd:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6d65746164)),
		clock:    time.Now,
		rule:     pipelineRule{limit: entries, adaptive: adaptive, cpus: runtime.NumCPU(), cpuTimes: machineCPUTimes},
	}
	p.open.Store(-1)
	for range cfg.MaxInflight {
		p.slots <- struct{}{}
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

// loop coalesces waiting proposals into entries: it gathers what is queued (up to the batch
// limit) and sends it as one entry when the pipeline rule allows, else waits for a command or for
// an entry to end.
func (p *Proposer) loop() {
	defer p.wg.Done()
	defer close(p.loopDone)
	batch := make([]*proposal, 0, p.maxBatch)
	inflight := 0
	for {
	fill:
		for len(batch) < p.maxBatch {
			select {
			case pr := <-p.reqs:
				batch = append(batch, pr)
			default:
				break fill
			}
		}
		if p.rule.mayOpen(inflight, len(batch)) {
			// The completion goroutine owns what it is sent: a copy of its length, so that an
			// entry of a few commands does not cost a batch limit's worth of slots.
			if p.send(slices.Clone(batch)) {
				inflight++
				p.inflight.Store(int64(inflight))
			}
			clear(batch)
			batch = batch[:0]
			continue
		}
		reqs := p.reqs
		if len(batch) == p.maxBatch {
			reqs = nil // full: wait for an entry to end
		}
		select {
		case pr := <-reqs:
			batch = append(batch, pr)
		case took := <-p.freed:
			inflight--
			p.inflight.Store(int64(inflight))
			p.rule.committed(took)
			if p.rule.adaptive {
				p.rule.sampleCPU(p.clock())
			}
			if n, ok := p.rule.threshold(); ok && p.rule.adaptive {
				p.open.Store(int64(math.Ceil(n)))
			}
		case <-p.stop:
			p.finish(batch, nil, ErrShutdown)
			p.drain(ErrShutdown)
			return
		}
	}
}

// send encodes one entry and hands it to Raft, and reports whether it did; a goroutine waits for
// it, answers each proposal and reports the entry's end on freed. An entry that cannot be encoded
// is answered with the error and never reaches Raft. If Raft shuts down with the entry queued for
// the FSM, the future is never answered (hashicorp/raft#498) and that goroutine stays blocked; its
// callers get ErrShutdown from the loop's end (Slot.Propose).
func (p *Proposer) send(batch []*proposal) bool {
	now := p.clock()
	env := &metadv1.Envelope{LeaderTimeUnixNano: now.UnixNano(), Seed: p.rnd.Uint64(),
		Commands: make([]*metadv1.Command, len(batch))}
	for i, pr := range batch {
		env.Commands[i] = pr.cmd
	}
	data, err := fsm.EncodeEnvelope(env)
	if err != nil {
		p.finish(batch, nil, fmt.Errorf("ha: encode entry: %w", err))
		return false
	}
	p.rule.sent(len(batch), now)
	if p.onEntry != nil {
		p.onEntry(len(batch))
	}
	start := time.Now()
	f := p.raft.Apply(data, p.applyTO)
	go func() {
		err := f.Error()
		took := time.Since(start)
		if err != nil {
			took = 0 // a failure measures no commit
		}
		p.freed <- took
		if err == nil && p.onDone != nil {
			p.onDone(took)
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
	return true
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
