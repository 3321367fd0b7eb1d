package fsm

import (
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/watch"
)

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// env is what every handler gets from its log entry: the leader's time, this command's seed, and
// the apply rules the leader checked it against (metadv1.RulesVersion: a handler enforces a rule
// of version N only when rules >= N, so an entry written before the rule replays as it applied).
type env struct {
	index uint64
	now   int64
	seed  uint64
	rules uint32
	m     *metrics // what apply counts; counting never changes an outcome
}

// Apply rules by the RulesVersion that added them.
const (
	// rulesLimits: a segment's size, name and endpoint limits; a batch command's keys distinct; a
	// member name recorded by SetMember.
	rulesLimits uint32 = 1
	// rulesSessionOwner: an OpenSession records its principal as the session's owner, and a
	// command in a session another principal opened is refused as if the session were unknown
	// (sessions.go).
	rulesSessionOwner uint32 = 2
)

// FSM is metad's state machine. Concurrency contract: Raft calls Apply, ApplyBatch, Snapshot and
// Restore from one goroutine; every other method may be called from any goroutine. The replicated
// state is one value (State) behind one pointer, swapped by Restore, so a reader that loads it
// once holds one state for its whole read.
type FSM struct {
	cfg   store.Config
	log   *slog.Logger
	state atomic.Pointer[State]
	spare atomic.Pointer[store.Capture] // a released capture's storage, reused by the next Snapshot
	m     metrics
	// verified is the state VerifySnapshot built, which Restore installs when it is given the
	// same file, instead of building it again (ForgetVerified drops it).
	verified atomic.Pointer[readResult]

	// Applied position, written by the apply goroutine only.
	applied  atomic.Uint64 // index of the last entry applied
	term     atomic.Uint64 // its term
	lastTime atomic.Int64  // its leader time (unix ns), for snapshot headers

	// The watch events (events.go): the window the apply goroutine appends each entry's events to,
	// and that entry's events so far (apply goroutine only).
	window   *watch.Window
	pending  []watch.Event
	evicting bool // the command being applied is an eviction's
}

// New returns an FSM over a new store (tenant `default` registered).
func New(cfg store.Config, log *slog.Logger) (*FSM, error) {
	s, err := store.New(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FSM{cfg: cfg, log: log, window: watch.NewWindow(watch.DefaultLimits, 0)}
	s.SetChangeSink(f.changed)
	f.state.Store(newState(s, nil, newSessionTable(1, &f.m.sessionsExpired), auth.Empty))
	return f, nil
}

// State returns the current replicated state.
func (f *FSM) State() *State { return f.state.Load() }

// Members returns the current state's member records (a copy, any order).
func (f *FSM) Members() map[string]Member { return f.state.Load().Members() }

// Member returns the current state's record of member name (Members without the copy).
func (f *FSM) Member(name string) (Member, bool) { return f.state.Load().Member(name) }

// Store returns the current state's store.
func (f *FSM) Store() *store.Store { return f.state.Load().store }

// Auth returns the current state's auth state; never nil.
func (f *FSM) Auth() *auth.State { return f.state.Load().Auth() }

// Replay is State.Replay of the current state.
func (f *FSM) Replay(h *metadv1.SessionHeader, principal string) (store.Result, bool) {
	return f.state.Load().Replay(h, principal)
}

// NextSessionID is State.NextSessionID of the current state.
func (f *FSM) NextSessionID() uint64 { return f.state.Load().NextSessionID() }

// SessionOpen is State.SessionOpen of the current state.
func (f *FSM) SessionOpen(id uint64, principal string) bool {
	return f.state.Load().SessionOpen(id, principal)
}

// Sessions is State.Sessions of the current state.
func (f *FSM) Sessions() (sessions, results int) { return f.state.Load().Sessions() }

// Carried is State.Carried of the current state.
func (f *FSM) Carried() snapshot.Carried { return f.state.Load().Carried() }

// Applied returns the index and term of the last entry applied.
func (f *FSM) Applied() (index, term uint64) { return f.applied.Load(), f.term.Load() }

// StateEpoch returns the current state's epoch (store.Store.Epoch).
func (f *FSM) StateEpoch() uint64 { return f.Store().Epoch() }

// Objects returns how many objects the current state holds, over every tenant.
func (f *FSM) Objects() int64 {
	var n int64
	for _, t := range f.Store().Tenants().List() {
		n += t.Directory().Objects()
	}
	return n
}

// ResetSoftState starts the current store's leader soft state afresh at now (unix ns):
// store.Store.ResetSoftState.
func (f *FSM) ResetSoftState(now int64) { f.Store().ResetSoftState(now) }

// Apply applies one log entry.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.apply(l)
}

// ApplyBatch applies committed entries in order; one response per entry.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	for i, l := range logs {
		out[i] = f.apply(l)
	}
	return out
}

func (f *FSM) apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		f.advance(l, f.lastTime.Load())
		f.window.Advance(l.Index)
		return nil
	}
	envl, err := DecodeEnvelope(l.Data)
	if err != nil {
		panic(fmt.Sprintf("fsm: log index %d term %d: %v", l.Index, l.Term, err))
	}
	res := &EntryResult{Index: l.Index, Results: make([]store.Result, len(envl.GetCommands()))}
	st := f.state.Load()
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("fsm: log index %d term %d: %v", l.Index, l.Term, r))
		}
	}()
	for i, c := range envl.GetCommands() {
		e := env{index: l.Index, now: envl.GetLeaderTimeUnixNano(), seed: store.ItemSeed(envl.GetSeed(), i),
			rules: envl.GetRulesVersion(), m: &f.m}
		f.evicting = c.GetEvict() != nil
		res.Results[i] = f.runCommand(st, e, c)
	}
	f.advance(l, envl.GetLeaderTimeUnixNano())
	f.publish(l.Index)
	return res
}

func (f *FSM) advance(l *raft.Log, now int64) {
	f.applied.Store(l.Index)
	f.term.Store(l.Term)
	f.lastTime.Store(now)
}

// dispatch applies c by its declaration (commands).
func dispatch(st *State, e env, c *metadv1.Command) store.Result {
	m := c.ProtoReflect()
	fd := m.WhichOneof(commandOp)
	if fd == nil {
		panic(fmt.Sprintf("fsm: log index %d: command with no operation (unknown to this binary?)", e.index))
	}
	sp, ok := byField[fd.Number()]
	if !ok {
		panic(fmt.Sprintf("fsm: log index %d: no declaration of command %s", e.index, fd.Name()))
	}
	if op, ok := m.Get(fd).Message().Interface().(fenced); ok && op.GetStateEpoch() != st.store.Epoch() {
		return store.Result{Reason: store.StateReplaced, Message: fmt.Sprintf(
			"%s was prepared against state epoch %d; a snapshot restore replaced it (epoch %d)", fd.Name(), op.GetStateEpoch(), st.store.Epoch())}
	}
	return sp.apply(st, e, c)
}

// commandOp is the Command message's oneof of operations, looked up once.
var commandOp = (*metadv1.Command)(nil).ProtoReflect().Descriptor().Oneofs().ByName("op")

// fenced is a command the leader prepared by checking its own state (leases, marks, the census):
// every command with a state_epoch field. Such a command applies only to the state it was checked
// against; after a snapshot restore replaced that state it is refused whole with STATE_REPLACED,
// nothing changed, and the leader prepares it again against the restored state.
type fenced interface{ GetStateEpoch() uint64 }

// DecodeEnvelope decodes one log entry's data. It returns an error, never panics, for garbage, for a
// newer format or rules version and for a command this binary does not know.
func DecodeEnvelope(data []byte) (*metadv1.Envelope, error) {
	envl := &metadv1.Envelope{}
	if err := proto.Unmarshal(data, envl); err != nil {
		return nil, fmt.Errorf("undecodable entry (%d bytes): %w", len(data), err)
	}
	if v := envl.GetFormatVersion(); v > metadv1.EnvelopeFormatVersion {
		return nil, fmt.Errorf("envelope format version %d, this binary applies up to %d", v, metadv1.EnvelopeFormatVersion)
	}
	// Rules this binary does not know would apply here as the older rules it knows, and the
	// members' states would part: stop instead (a leader of a newer release wrote the entry
	// before every member ran it; restart this member on that release).
	if v := envl.GetRulesVersion(); v > metadv1.RulesVersion {
		return nil, fmt.Errorf("rules version %d, this binary applies up to %d: a newer release wrote the entry; run this member on it", v, metadv1.RulesVersion)
	}
	for i, c := range envl.GetCommands() {
		m := c.ProtoReflect()
		if m.WhichOneof(commandOp) == nil {
			return nil, fmt.Errorf("command %d has no operation known to this binary", i)
		}
	}
	return envl, nil
}

// EncodeEnvelope encodes one log entry's data (deterministic encoding), stamping this release's
// format and rules versions where they are unset.
func EncodeEnvelope(e *metadv1.Envelope) ([]byte, error) {
	if e.FormatVersion == 0 {
		e.FormatVersion = metadv1.EnvelopeFormatVersion
	}
	if e.RulesVersion == 0 {
		e.RulesVersion = metadv1.RulesVersion
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(e)
}

// Snapshot captures the replicated state; it runs on the apply goroutine and only copies pointers.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	st := f.state.Load()
	c := st.store.CaptureInto(f.spare.Swap(nil))
	next, sessions := st.sessions.capture()
	return &fsmSnapshot{capture: c, fsm: f, members: sortedMembers(*st.members.Load()), nextSess: next, sessions: sessions, auth: st.Auth(),
		index: f.applied.Load(), term: f.term.Load(), createdAt: f.lastTime.Load(), log: f.log}, nil
}

// VerifySnapshot reads a whole snapshot file from r and verifies it as Restore would (ReadSnapshot
// with this FSM's store config), changing nothing; it returns the file's header. A refused file
// gives an error wrapping the snapshot package's error that names what is wrong. The state it
// built is kept for a Restore of the same file (an operator's restore verifies the file, then
// installs it through Raft: the state is built once, not twice) until Restore takes it or
// ForgetVerified drops it.
func (f *FSM) VerifySnapshot(r io.Reader) (*metadv1.SnapshotHeader, error) {
	res, err := readState(f.cfg, r, &f.m.sessionsExpired)
	if err != nil {
		return nil, err
	}
	f.verified.Store(res)
	return res.header, nil
}

// ForgetVerified drops the state the last VerifySnapshot kept, if Restore has not taken it.
func (f *FSM) ForgetVerified() { f.verified.Store(nil) }

// Restore replaces the state with a snapshot's: it reads and verifies the whole snapshot into a new
// store and swaps it in only if everything holds. On error the FSM is unchanged. The file that the
// last VerifySnapshot read (the same header, size and checksum) is only read through, its
// checksums verified, and the state built then is installed.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	sr, err := snapshot.NewReader(rc)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	var st *readResult
	if v := f.verified.Swap(nil); v != nil && proto.Equal(sr.Header(), v.header) {
		same, err := sameFile(sr, v)
		if err != nil {
			return fmt.Errorf("fsm: restore: %w", err)
		}
		if !same {
			return fmt.Errorf("fsm: restore: the file has the header of the one verified, but another size or checksum: %w", snapshot.ErrCorrupt)
		}
		st = v
	} else if st, err = readStateFrom(f.cfg, sr, &f.m.sessionsExpired); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	h := st.header
	st.state.store.SetChangeSink(f.changed)
	f.state.Store(st.state)
	f.applied.Store(h.GetIndex())
	f.term.Store(h.GetTerm())
	f.lastTime.Store(h.GetCreatedAtUnixNano())
	f.pending = f.pending[:0]
	f.window.Reset(h.GetIndex())
	f.log.Info("restored snapshot", "index", h.GetIndex(), "term", h.GetTerm(), "objects", h.GetObjects(), "tenants", h.GetTenants())
	return nil
}
