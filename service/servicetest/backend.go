package servicetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Backend is safe for concurrent use. It is a service.Backend over a real fsm.FSM with no Raft:
// Propose encodes the command in an envelope and applies it as the next log entry. It is the
// leader unless told otherwise (SetLeader). The exported fields are its counters and knobs; set
// them at any time.
type Backend struct {
	f   *fsm.FSM
	now func() time.Time

	mu    sync.Mutex // serializes apply, as Raft's single apply goroutine does; guards index
	index uint64

	// Proposals counts the calls of Propose, whatever became of them.
	Proposals atomic.Int64
	// Barriers counts the calls of ReadBarrier.
	Barriers atomic.Int64
	// LoseAnswer makes the next proposal apply and its answer be lost (ha.ErrUnknown), as for a
	// leader killed after the commit.
	LoseAnswer atomic.Bool
	// Deposed makes a leader that has lost its leadership without noticing: it still believes it
	// leads (IsLeader, LeaderReady), but confirming leadership and proposing fail with NOT_LEADER.
	Deposed atomic.Bool
	// Silent makes a follower report that it has not heard from its leader recently.
	Silent atomic.Bool
	// Lease makes the leader hold the leader lease while it leads (not deposed): a service with
	// arenas then answers PutStarts from them.
	Lease atomic.Bool
	// StaleAuth, when not 0, is the auth revision every proposal carries, as if the leader had
	// authorized it against that revision before auth commands committed.
	StaleAuth atomic.Uint64
	// OlderMember, when not 0, is the feature level of a member of an older binary (ClusterLevel),
	// and Propose refuses a command that needs more, as ha.Node does.
	OlderMember atomic.Uint32

	leader   atomic.Bool
	failNext atomic.Pointer[error] // the next Propose fails with this error
	// beforeApply, when set, runs once just before the next proposal applies (with apply held).
	beforeApply  atomic.Pointer[func()]
	term         atomic.Uint64                                   // the current term (Status)
	onLeadership atomic.Pointer[func(leading bool, term uint64)] // the leadership hook; nil until set
	members      atomic.Pointer[[]string]                        // the servers of the configuration; nil: "self" alone
	learners     sync.Map                                        // names of members that are learners (non-voters) -> struct{}
	levels       sync.Map                                        // names of members -> the feature level they record (uint32)
	lastProposed atomic.Pointer[metadv1.Command]                 // the last command given to Propose

	leaderMu   sync.Mutex // guards leaderName and leaderAddr; a leaf
	leaderName string
	leaderAddr string
}

// NewBackend returns a leader over a new state machine with the store's default configuration, in
// term 1, whose log entries carry the time of now (nil: time.Now).
func NewBackend(t testing.TB, now func() time.Time) *Backend {
	t.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if now == nil {
		now = time.Now
	}
	b := &Backend{f: f, now: now}
	b.leader.Store(true)
	b.term.Store(1)
	return b
}

// FSM is the state machine the backend applies to (the service's State).
func (b *Backend) FSM() *fsm.FSM { return b.f }

// Now is the backend's clock, the time its log entries carry.
func (b *Backend) Now() time.Time { return b.now() }

// SetLeadershipHook makes fn the leadership hook that SetLeader runs, as ha.Node runs
// Config.OnLeadership (service.Leadership.Changed).
func (b *Backend) SetLeadershipHook(fn func(leading bool, term uint64)) { b.onLeadership.Store(&fn) }

// SetLeader makes the backend a follower that knows the leader (name, addr), or the leader.
// A change of leadership runs the leadership hook, as ha.Node does; gaining it starts a new term.
func (b *Backend) SetLeader(isLeader bool, name, addr string) {
	b.leaderMu.Lock()
	b.leaderName, b.leaderAddr = name, addr
	b.leaderMu.Unlock()
	if b.leader.Swap(isLeader) == isLeader {
		return
	}
	term := b.term.Load()
	if isLeader {
		term = b.term.Add(1)
	}
	if fn := b.onLeadership.Load(); fn != nil {
		(*fn)(isLeader, term)
	}
}

// FailNextPropose makes the next Propose fail with err, nothing applied.
func (b *Backend) FailNextPropose(err error) { b.failNext.Store(&err) }

// BeforeNextApply makes fn run once, just before the next proposal applies, with apply held (fn
// may call ApplyLocked): as a command committed between a leader's check and its command's commit.
func (b *Backend) BeforeNextApply(fn func()) { b.beforeApply.Store(&fn) }

// LastProposed is the last command given to Propose, whatever became of it (nil: none yet).
func (b *Backend) LastProposed() *metadv1.Command { return b.lastProposed.Load() }

// SetMembers makes names the servers of the configuration (Members, InConfiguration); none:
// "self" alone again.
func (b *Backend) SetMembers(names ...string) {
	if len(names) == 0 {
		b.members.Store(nil)
		return
	}
	b.members.Store(&names)
}

// SetMemberLevel makes the member name (of SetMembers) record feature level l.
func (b *Backend) SetMemberLevel(name string, l uint32) { b.levels.Store(name, l) }

// SetLearner makes the member name (of SetMembers) a learner, until PromoteMember promotes it.
func (b *Backend) SetLearner(name string) { b.learners.Store(name, struct{}{}) }

// AppliedIndex is the index of the last log entry the backend's state machine applied.
func (b *Backend) AppliedIndex() uint64 {
	idx, _ := b.f.Applied()
	return idx
}

func (b *Backend) notLeader() error {
	name, addr := b.Leader()
	return &ha.NotLeaderError{LeaderName: name, LeaderAddr: addr}
}

// Propose applies cmd as the next log entry on the leader (see the knobs for its faults).
func (b *Backend) Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	b.Proposals.Add(1)
	b.lastProposed.Store(cmd)
	if errp := b.failNext.Swap(nil); errp != nil {
		return store.Result{}, *errp
	}
	if !b.IsLeader() || b.Deposed.Load() {
		return store.Result{}, b.notLeader()
	}
	if err := ctx.Err(); err != nil {
		return store.Result{}, err
	}
	if have, member := b.ClusterLevel(); fsm.LevelOf(cmd) > have {
		return store.Result{}, &ha.FeatureLevelError{Command: cmd, Need: fsm.LevelOf(cmd), Have: have, Member: member}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn := b.beforeApply.Swap(nil); fn != nil {
		(*fn)()
	}
	if rev := b.StaleAuth.Load(); rev != 0 {
		cmd = proto.CloneOf(cmd)
		cmd.AuthRevision = rev
	}
	res, err := b.applyLocked(cmd)
	if err != nil {
		return store.Result{}, err
	}
	if b.LoseAnswer.Swap(false) {
		// Applied, and the answer lost on its way back (a leader killed after the commit).
		return store.Result{}, fmt.Errorf("%w: answer lost after apply (test fault)", ha.ErrUnknown)
	}
	return res, nil
}

// applyLocked applies cmd as the next log entry; the caller holds b.mu.
func (b *Backend) applyLocked(cmd *metadv1.Command) (store.Result, error) {
	b.index++
	data, err := fsm.EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: b.now().UnixNano(), Seed: b.index,
		Commands: []*metadv1.Command{cmd}})
	if err != nil {
		return store.Result{}, err
	}
	return b.f.Apply(&raft.Log{Index: b.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.EntryResult).Results[0], nil
}

// ApplyLocked applies cmd (as given: unstamped, unchecked) to the state as the next log entry and
// returns its result. Call it only from a function that BeforeNextApply runs (apply is held there).
func (b *Backend) ApplyLocked(t testing.TB, cmd *metadv1.Command) store.Result {
	t.Helper()
	res, err := b.applyLocked(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// MustApply applies cmd (as given: unstamped, unchecked) as the next log entry and fails the test
// unless it applied.
func (b *Backend) MustApply(t testing.TB, cmd *metadv1.Command) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.ApplyLocked(t, cmd); r.Reason != store.OK {
		t.Fatalf("apply %v: %s %s", cmd, r.Reason, r.Message)
	}
}

// ReadBarrier confirms leadership: NOT_LEADER on a follower or a deposed leader.
func (b *Backend) ReadBarrier(ctx context.Context) error {
	b.Barriers.Add(1)
	if !b.IsLeader() || b.Deposed.Load() {
		return b.notLeader()
	}
	return ctx.Err()
}

// LeaderReady returns at once: NOT_LEADER on a follower.
func (b *Backend) LeaderReady(ctx context.Context) error {
	if !b.IsLeader() {
		return b.notLeader()
	}
	return ctx.Err()
}

// Store is the state machine's current store.
func (b *Backend) Store() *store.Store { return b.f.Store() }

// IsLeader reports whether the backend leads (SetLeader).
func (b *Backend) IsLeader() bool { return b.leader.Load() }

// Leader is "self" at "self-addr" on the leader, else the leader SetLeader named.
func (b *Backend) Leader() (string, string) {
	if b.IsLeader() {
		return "self", "self-addr"
	}
	b.leaderMu.Lock()
	defer b.leaderMu.Unlock()
	return b.leaderName, b.leaderAddr
}

// LeaseTerm is the current term while Lease is set and the backend leads, not deposed; else 0.
func (b *Backend) LeaseTerm() uint64 {
	if b.Lease.Load() && b.IsLeader() && !b.Deposed.Load() {
		return b.term.Load()
	}
	return 0
}

// LeaseDuration is 200 ms.
func (b *Backend) LeaseDuration() time.Duration { return 200 * time.Millisecond }

// LeaderReachable is true on the leader, and on a follower unless Silent.
func (b *Backend) LeaderReachable() bool { return b.IsLeader() || !b.Silent.Load() }

// Status describes the backend as member "self": every index is the last one applied.
func (b *Backend) Status() ha.Status {
	role := ha.RoleFollower
	if b.IsLeader() {
		role = ha.RoleLeader
	}
	name, addr := b.Leader()
	b.mu.Lock()
	defer b.mu.Unlock()
	return ha.Status{Name: "self", ClientAddr: "self-addr", Role: role, Term: b.term.Load(), AppliedIndex: b.index,
		CommitIndex: b.index, LastLogIndex: b.index, LeaderName: name, LeaderAddr: addr}
}

// Members lists "self" alone, or the names SetMembers gave (n at n-peer and n-addr).
func (b *Backend) Members() ([]ha.Member, error) {
	names := b.members.Load()
	if names == nil {
		return []ha.Member{{Name: "self", PeerAddr: "self-peer", ClientAddr: "self-addr", Voter: true, Leader: b.IsLeader()}}, nil
	}
	var ms []ha.Member
	for _, n := range *names {
		_, learner := b.learners.Load(n)
		var level uint32
		if l, ok := b.levels.Load(n); ok {
			level = l.(uint32)
		}
		ms = append(ms, ha.Member{Name: n, PeerAddr: n + "-peer", ClientAddr: n + "-addr", Voter: !learner, Level: level})
	}
	return ms, nil
}

// InConfiguration reports whether Members names name.
func (b *Backend) InConfiguration(name string) bool {
	ms, _ := b.Members()
	return slices.ContainsFunc(ms, func(m ha.Member) bool { return m.Name == name })
}

// AddMember adds nothing and succeeds (index 1).
func (b *Backend) AddMember(context.Context, string, string) (uint64, error) { return 1, nil }

// AddLearner adds nothing and succeeds (index 1).
func (b *Backend) AddLearner(context.Context, string, string) (uint64, error) { return 1, nil }

// PromoteMember makes a learner of SetLearner a voter (index 1); a voter it leaves (index 0);
// MEMBER_NOT_FOUND for a name not in Members.
func (b *Backend) PromoteMember(_ context.Context, name string) (uint64, error) {
	if _, ok := b.learners.LoadAndDelete(name); ok {
		return 1, nil
	}
	ms, _ := b.Members()
	for _, m := range ms {
		if m.Name == name {
			return 0, nil
		}
	}
	return 0, &ha.MemberNotFoundError{Name: name}
}

// RemoveMember removes nothing: MEMBER_NOT_FOUND for any name but "self".
func (b *Backend) RemoveMember(_ context.Context, name string) error { return knownMember(name) }

// TransferLeader answers "self" for "", MEMBER_NOT_FOUND for a name but "self", and moves nothing.
func (b *Backend) TransferLeader(_ context.Context, to string) (string, error) {
	if to == "" {
		return "self", nil
	}
	if err := knownMember(to); err != nil {
		return "", err
	}
	return to, nil
}

// knownMember is MEMBER_NOT_FOUND for any name but "self", the backend's one member, as ha.Node
// answers for a name that is not in its configuration.
func knownMember(name string) error {
	if name != "self" {
		return &ha.MemberNotFoundError{Name: name}
	}
	return nil
}

// RecordMember records nothing: the only member, "self", is always recorded.
func (b *Backend) RecordMember(_ context.Context, m ha.MemberRecord) error {
	if !b.IsLeader() {
		return b.notLeader()
	}
	if name := m.Name; name != "self" {
		return &ha.MemberNotFoundError{Name: name}
	}
	return nil
}

// SelfRecorded is always true.
func (b *Backend) SelfRecorded() bool { return true }

// Self is the record of "self" at this binary's feature level.
func (b *Backend) Self() ha.MemberRecord {
	return ha.MemberRecord{Name: "self", PeerAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Level: fsm.FeatureLevel}
}

// ClusterLevel is this binary's feature level, or OlderMember's when set.
func (b *Backend) ClusterLevel() (uint32, string) {
	if l := b.OlderMember.Load(); l != 0 {
		return l, "older"
	}
	return fsm.FeatureLevel, "self"
}
