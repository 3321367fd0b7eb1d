package fsm

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// sessionFixture is an FSM with a mounted segment, a registered default tenant and one open
// session, applying at leader time now (seconds since the start).
type sessionFixture struct {
	t     *testing.T
	f     *FSM
	index uint64
	id    uint64
}

const sessionEpoch = int64(1_700_000_000e9)

func newSessionFixture(t *testing.T, ttl time.Duration, window uint32) *sessionFixture {
	x := &sessionFixture{t: t, f: newFSM(t)}
	x.apply(0, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: uuid(0x5e, 1), Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: genClients[0]}}}})
	x.id = x.open(0, ttl, window)
	return x
}

func (x *sessionFixture) apply(at time.Duration, cmds ...*metadv1.Command) []store.Result {
	x.t.Helper()
	x.index++
	return applyCmds(x.t, x.f, x.index, sessionEpoch+int64(at), cmds...)
}

func (x *sessionFixture) open(at, ttl time.Duration, window uint32) uint64 {
	x.t.Helper()
	return x.openAs(at, "", ttl, window)
}

// openAs opens a session as principal p's.
func (x *sessionFixture) openAs(at time.Duration, p string, ttl time.Duration, window uint32) uint64 {
	x.t.Helper()
	r := x.apply(at, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: uint64(ttl / time.Millisecond), Window: window}},
		Principal: p})[0]
	if r.Reason != store.OK || r.Session == 0 {
		x.t.Fatalf("open session: %+v", r)
	}
	return r.Session
}

// put is a PutStart of key in session id with seq and first_unacked.
func (x *sessionFixture) put(at time.Duration, id, seq, unacked uint64, key string) store.Result {
	x.t.Helper()
	return x.apply(at, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: genClients[0], Key: []byte(key), Size: 100,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}, Session: &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: unacked}})[0]
}

func TestSessionRepeatGetsTheFirstAnswer(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	first := x.put(0, x.id, 1, 1, "k")
	if first.Reason != store.OK || len(first.Replicas) != 1 {
		t.Fatalf("first attempt: %+v", first)
	}
	used := x.f.Store().Segments().Used(1)
	again := x.put(time.Second, x.id, 1, 1, "k")
	if again.Reason != store.OK || again.Replicas[0] != first.Replicas[0] {
		t.Fatalf("repeat: %+v, want the first answer %+v", again, first)
	}
	if got := x.f.Store().Segments().Used(1); got != used {
		t.Fatalf("the repeat allocated: used %d -> %d", used, got)
	}
	if x.f.m.sessionDuplicates.Load() != 1 {
		t.Fatal("the repeat was not counted as a duplicate")
	}
	// Without a session the same command is a new attempt, refused as the key exists.
	if r := x.put(time.Second, 0, 0, 0, "k"); r.Reason != store.ObjectAlreadyExists {
		t.Fatalf("sessionless repeat: %s", r.Reason)
	}
	// A rejection is not kept: nothing changed, so the next attempt runs.
	if r := x.put(time.Second, x.id, 2, 1, "k"); r.Reason != store.ObjectAlreadyExists {
		t.Fatalf("seq 2: %s", r.Reason)
	}
	if _, kept := x.f.Replay(&metadv1.SessionHeader{SessionId: x.id, Seq: 2}, ""); kept {
		t.Fatal("a rejection was kept")
	}
}

func TestSessionFloorWindowAndExpiry(t *testing.T) {
	x := newSessionFixture(t, 10*time.Second, 4)
	for seq := uint64(1); seq <= 4; seq++ {
		if r := x.put(0, x.id, seq, 1, string(rune('a'+seq))); r.Reason != store.OK {
			t.Fatalf("seq %d: %+v", seq, r)
		}
	}
	if r := x.put(0, x.id, 5, 1, "five"); r.Reason != store.SequenceTooOld {
		t.Fatalf("seq 5 past the window of 4: %s", r.Reason)
	}
	// Acknowledging 1..2 moves the floor: their answers go, 5 and 6 fit.
	if r := x.put(0, x.id, 5, 3, "five"); r.Reason != store.OK {
		t.Fatalf("seq 5 after the ack: %+v", r)
	}
	if _, kept := x.f.Replay(&metadv1.SessionHeader{SessionId: x.id, Seq: 2}, ""); kept {
		t.Fatal("an acknowledged answer is still kept")
	}
	if r := x.put(0, x.id, 2, 3, "b"); r.Reason != store.SequenceTooOld {
		t.Fatalf("seq below the floor: %s", r.Reason)
	}
	// Expiry is by the leader times in the log: a command 10 s after the last keeps the session,
	// one more than 10 s after it finds it gone.
	if r := x.put(10*time.Second, x.id, 3, 3, "c"); r.Reason != store.OK || len(r.Replicas) == 0 {
		t.Fatalf("within the ttl: %+v", r)
	}
	if r := x.put(20*time.Second+time.Millisecond, x.id, 6, 3, "f"); r.Reason != store.SessionExpired {
		t.Fatalf("past the ttl: %s", r.Reason)
	}
	if n, _ := x.f.Sessions(); n != 0 {
		t.Fatalf("%d sessions after the expiry", n)
	}
	if r := x.put(0, 999, 1, 1, "z"); r.Reason != store.SessionExpired {
		t.Fatalf("unknown session: %s", r.Reason)
	}
}

func TestSessionTableIsBounded(t *testing.T) {
	x := newSessionFixture(t, time.Hour, 4)
	x.f.State().sessions.limit = 3
	b := x.open(time.Second, time.Hour, 4)
	c := x.open(2*time.Second, time.Hour, 4)
	x.put(3*time.Second, x.id, 1, 1, "a") // the first session is now the most recently used
	d := x.open(4*time.Second, time.Hour, 4)
	if n, _ := x.f.Sessions(); n != 3 {
		t.Fatalf("%d sessions, want the limit 3", n)
	}
	for id, want := range map[uint64]bool{x.id: true, b: false, c: true, d: true} {
		r := x.put(5*time.Second, id, 1, 1, "k"+string(rune('0'+id)))
		if got := r.Reason != store.SessionExpired; got != want {
			t.Errorf("session %d open %v, want %v (%s)", id, got, want, r.Reason)
		}
	}
}

// TestSessionsIgnoreNodeClocks: two nodes apply the same entries, whose leader times go back and
// forth as leaders with skewed clocks take turns, and end with the same state, sessions included;
// a snapshot restore keeps every session's answers.
func TestSessionsIgnoreNodeClocks(t *testing.T) {
	run := func() *FSM {
		x := newSessionFixture(t, 5*time.Second, 16)
		skew := []time.Duration{0, 3 * time.Second, -2 * time.Second, 4 * time.Second, 1 * time.Second}
		for i := range 40 {
			at := time.Duration(i)*time.Second/2 + skew[i%len(skew)]
			x.put(at, x.id, uint64(i/2+1), uint64(max(1, i/2-3)), "k"+string(rune('a'+i%26)))
		}
		return x.f
	}
	a, b := run(), run()
	sa, sb := snapshotBytes(t, a), snapshotBytes(t, b)
	if !bytes.Equal(sa, sb) {
		t.Fatal("two nodes applying the same log hold different sessions")
	}
	c := newFSM(t)
	if err := c.Restore(nopCloser{bytes.NewReader(sa)}); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 20; seq++ {
		h := &metadv1.SessionHeader{SessionId: 1, Seq: seq}
		ra, oka := a.Replay(h, "")
		rc, okc := c.Replay(h, "")
		if oka != okc || ra.Reason != rc.Reason || len(ra.Replicas) != len(rc.Replicas) {
			t.Fatalf("seq %d after restore: %+v %v, before %+v %v", seq, rc, okc, ra, oka)
		}
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// BenchmarkSessionMemory reports the heap that open sessions keep: sessions (default 10000) whose
// windows (default 64) are full of kept PutStart results, one replica each, the state a client
// that acknowledges nothing leaves. Run it with
//
//	go test -run '^$' -bench SessionMemory -benchtime 1x ./fsm/
func BenchmarkSessionMemory(b *testing.B) {
	const sessions, window = 10000, 64
	for range b.N {
		t := newSessionTable(1, new(atomic.Uint64))
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range sessions {
			id := t.open(int64(i), owner{known: true}, time.Hour, window).Session
			for seq := uint64(1); seq <= window; seq++ {
				r := store.Result{Replicas: []store.Replica{{ID: seq, Extent: alloc.Extent{Offset: seq << 12, Size: 4096}, Tier: alloc.TierMemory}}}
				t.run(int64(i), &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: 1}, "", true, func() store.Result { return r })
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n, kept := t.counts(); n != sessions || kept != sessions*window {
			b.Fatalf("%d sessions keeping %d results", n, kept)
		}
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(heap/sessions, "bytes/session")
		b.ReportMetric(heap/(1<<20), "MiB")
		runtime.KeepAlive(t)
	}
}

// TestBatchRemoveRefusedItems: a BatchRemove carries the items the leader refused when it prepared
// the batch; apply answers them with the leader's refusal and leaves their objects alone, and answers
// every item in order.
func TestBatchRemoveRefusedItems(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	for _, k := range []string{"a", "b"} {
		if r := x.put(0, 0, 0, 0, k); r.Reason != store.OK {
			t.Fatalf("put %s: %+v", k, r)
		}
		if r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: genClients[0], Key: []byte(k)}}})[0]; r.Reason != store.OK {
			t.Fatalf("put end %s: %+v", k, r)
		}
	}
	r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{Tenant: "default", TenantInstanceId: 1,
		Items: []*metadv1.ObjectRef{
			{Key: []byte("b"), ObjectId: ^uint64(0), Refused: metadv1.Reason_REASON_OBJECT_HAS_LEASE, RefusedMessage: "leased"},
			{Key: []byte("a")},
		}}}})[0]
	if r.Reason != store.OK || len(r.Items) != 2 || r.Items[0].Reason != store.ObjectHasLease || r.Items[0].Message != "leased" ||
		r.Items[1].Reason != store.OK || r.Count != 1 {
		t.Fatalf("BatchRemove: %+v", r)
	}
	ok := 0
	for _, k := range []string{"a", "b"} {
		if x.f.Store().WithObject("default", k, func(*store.LockedObject) error { return nil }) == nil {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d of a (removed) and b (refused, kept) remain, want 1", ok)
	}
}

// TestSessionSeqBounded: a sequence number past MaxSessionSeq is refused, so floor + window never
// wraps.
func TestSessionSeqBounded(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	if r := x.put(0, x.id, MaxSessionSeq+1, MaxSessionSeq+1, "k"); r.Reason != store.InvalidParams {
		t.Fatalf("seq past the bound: %s", r.Reason)
	}
	if r := x.put(0, x.id, MaxSessionSeq, MaxSessionSeq, "k"); r.Reason != store.OK {
		t.Fatalf("seq at the bound: %+v", r)
	}
	_, got := x.f.State().sessions.capture()
	if len(got) != 1 || len(got[0].seqs) != 1 || got[0].seqs[0] != MaxSessionSeq {
		t.Fatalf("captured %+v, want the kept answer at the bound", got)
	}
}
