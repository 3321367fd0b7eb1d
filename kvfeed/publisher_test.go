package kvfeed

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmihailenco/msgpack/v5"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
	"metad/watch"
)

// gotEvent is an event as a subscriber decodes it (the keys a router reads, and the hashes).
type gotEvent struct {
	EventID      uint64   `msgpack:"event_id"`
	Timestamp    int64    `msgpack:"timestamp"`
	EventType    string   `msgpack:"event_type"`
	Type         string   `msgpack:"type"`
	TenantID     string   `msgpack:"tenant_id"`
	BackendID    string   `msgpack:"backend_id"`
	GroupID      *string  `msgpack:"group_id"`
	Medium       string   `msgpack:"medium"`
	ObjectKey    string   `msgpack:"object_key"`
	SeqHashes    []uint64 `msgpack:"seq_hashes"`
	BlockHashes  []int64  `msgpack:"block_hashes"`
	BaseBlockIdx *uint32  `msgpack:"base_block_idx"`
}

// short is the event as "type tenant/key@medium[group]".
func (e gotEvent) short() string {
	s := fmt.Sprintf("%s %s/%s@%s", e.EventType, e.TenantID, e.ObjectKey, e.Medium)
	if e.GroupID != nil {
		s += "[" + *e.GroupID + "]"
	}
	return s
}

// gotMessage is one message as a subscriber decodes it.
type gotMessage struct {
	seq    uint64
	ts     int64
	dp     uint32
	events []gotEvent
}

// decodeMessage checks a message's frames and envelope and decodes it.
func decodeMessage(t *testing.T, m zmq4.Msg) gotMessage {
	t.Helper()
	if len(m.Frames) != 3 || len(m.Frames[0]) != 0 || len(m.Frames[1]) != 8 {
		t.Fatalf("frames %q: want an empty topic, an 8-byte sequence number and a payload", m.Frames)
	}
	var env struct {
		_msgpack struct{} `msgpack:",as_array"`
		TS       int64
		Events   []gotEvent
		DP       uint32
	}
	if err := msgpack.Unmarshal(m.Frames[2], &env); err != nil {
		t.Fatalf("payload %x: %v", m.Frames[2], err)
	}
	if len(env.Events) == 0 || len(env.Events) > MaxBatch {
		t.Fatalf("a message of %d events", len(env.Events))
	}
	for _, e := range env.Events {
		if e.Timestamp != env.TS {
			t.Fatalf("event timestamp %d in a batch of %d", e.Timestamp, env.TS)
		}
	}
	return gotMessage{seq: binary.BigEndian.Uint64(m.Frames[1]), ts: env.TS, dp: env.DP, events: env.Events}
}

// subscriber is a ZMQ SUB on a publisher, its messages on a channel.
type subscriber struct {
	t    *testing.T
	sock zmq4.Socket
	msgs chan zmq4.Msg // sent by the receiving goroutine, closed when it stops (the socket closed)
}

func subscribe(t *testing.T, p *Publisher) *subscriber {
	t.Helper()
	s := &subscriber{t: t, sock: zmq4.NewSub(context.Background()), msgs: make(chan zmq4.Msg, 1024)}
	if err := s.sock.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.sock.Dial("tcp://" + p.Addr().String()); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.msgs)
		for {
			m, err := s.sock.Recv()
			if err != nil {
				return
			}
			s.msgs <- m
		}
	}()
	t.Cleanup(func() {
		_ = s.sock.Close()
		for range s.msgs { // until the receiver has stopped
		}
	})
	return s
}

// next returns the next message, failing the test after d.
func (s *subscriber) next(d time.Duration) gotMessage {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatal("subscriber closed")
		}
		return decodeMessage(s.t, m)
	case <-time.After(d):
		s.t.Fatalf("no message within %s", d)
	}
	return gotMessage{}
}

// join works around ZMQ's slow joiner: until the subscriber's subscription has reached the
// publisher, messages are dropped. It calls probe (which must make a change the feed publishes)
// until the subscriber gets a message, within 10 s, and returns that message.
func (s *subscriber) join(probe func(i int)) gotMessage {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		probe(i)
		select {
		case m, ok := <-s.msgs:
			if !ok {
				s.t.Fatal("subscriber closed")
			}
			return decodeMessage(s.t, m)
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.t.Fatal("the subscriber got nothing within 10 s")
	return gotMessage{}
}

// until reads messages until one holds an event of key last, within 10 s, checking that sequence
// numbers and event ids follow on from prev's. It returns the events after prev, probes skipped.
func (s *subscriber) until(prev gotMessage, last string) (msgs []gotMessage, evs []gotEvent) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := s.next(time.Until(deadline))
		if m.seq != prev.seq+1 {
			s.t.Fatalf("sequence %d after %d", m.seq, prev.seq)
		}
		if want := prev.events[len(prev.events)-1].EventID + 1; m.events[0].EventID != want {
			s.t.Fatalf("event id %d after %d", m.events[0].EventID, want-1)
		}
		for i := 1; i < len(m.events); i++ {
			if m.events[i].EventID != m.events[i-1].EventID+1 {
				s.t.Fatalf("event ids %d, %d in a message", m.events[i-1].EventID, m.events[i].EventID)
			}
		}
		msgs, prev = append(msgs, m), m
		found := false
		for _, e := range m.events {
			if !strings.HasPrefix(e.ObjectKey, "probe-") {
				evs = append(evs, e)
			}
			found = found || e.ObjectKey == last
		}
		if found {
			return msgs, evs
		}
	}
}

func newPublisher(t *testing.T, w *watch.Window, now func() time.Time) *Publisher {
	t.Helper()
	p, err := New(Config{Endpoint: "tcp://127.0.0.1:0", BackendID: "n1", Now: now}, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

var (
	memSeg = alloc.MustParseID("5a5a5a5a-0000-4000-8000-00000000005a")
	nofSeg = alloc.MustParseID("5b5b5b5b-0000-4000-8000-00000000005b")
)

// fsmFixture applies commands to a real state machine, as Raft would.
type fsmFixture struct {
	t *testing.T
	b *servicetest.Backend
}

func newFSMFixture(t *testing.T) *fsmFixture {
	x := &fsmFixture{t: t, b: servicetest.NewBackend(t, nil)}
	for i, seg := range []alloc.ID{memSeg, nofSeg} {
		tier := metadv1.Tier_TIER_MEMORY
		if i == 1 {
			tier = metadv1.Tier_TIER_NOF
		}
		x.b.MustApply(t, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Id: seg[:], Name: fmt.Sprintf("seg%d", i), Base: uint64(i+1) << 32, Size: 1 << 20,
				Endpoint: "127.0.0.1:7000", Tier: tier, OwnerClientId: servicetest.ClientA[:]}}}})
	}
	return x
}

// put writes key with mem MEMORY and nof NOF replicas and ends it on each tier in turn.
func (x *fsmFixture) put(tenant, key, group string, mem, nof uint32) {
	x.t.Helper()
	cl := servicetest.ClientA
	x.b.MustApply(x.t, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: tenant, ClientId: cl[:],
		Key: []byte(key), Group: []byte(group), Size: 100, Config: &metadv1.ReplicaConfig{MemoryReplicas: mem, NofReplicas: nof}}}})
	var tiers []metadv1.Tier
	if mem > 0 {
		tiers = append(tiers, metadv1.Tier_TIER_MEMORY)
	}
	if nof > 0 {
		tiers = append(tiers, metadv1.Tier_TIER_NOF)
	}
	for _, tier := range tiers {
		x.b.MustApply(x.t, &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: tenant, ClientId: cl[:],
			Key: []byte(key), Tier: tier}}})
	}
}

// evict evicts key's replicas on tier, as the evictor's commit does.
func (x *fsmFixture) evict(tenant, key string, tier metadv1.Tier) {
	x.t.Helper()
	var tok *metadv1.ObjectToken
	x.b.Store().VisitHandles(16, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			if h.Tenant.Name() == tenant && h.Entry.Key() == key {
				st := h.Entry.State()
				tok = &metadv1.ObjectToken{Tenant: tenant, TenantInstanceId: h.Tenant.Instance(), Key: []byte(key), ObjectId: st.ID, Version: st.Version}
			}
		}
		return true
	})
	if tok == nil {
		x.t.Fatalf("no object %s/%s", tenant, key)
	}
	x.b.MustApply(x.t, &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Tokens: []*metadv1.ObjectToken{tok}, Tier: tier, UnitSizes: []uint32{1}}}})
}

func (x *fsmFixture) remove(tenant, key string) {
	x.t.Helper()
	x.b.MustApply(x.t, &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Tenant: tenant, Key: []byte(key)}}})
}

// TestPublisherOverTheStateMachine: the changes a real state machine applies reach a ZMQ
// subscriber in order, as the old master's events: a stored event per medium an object gains, a
// removed one when it goes, tenants and groups as given, consecutive sequence numbers and event
// ids, the batch time on every event.
func TestPublisherOverTheStateMachine(t *testing.T) {
	x := newFSMFixture(t)
	x.b.MustApply(t, servicetest.RegisterTenant("acme"))
	clock := time.UnixMilli(1739145600000)
	p := newPublisher(t, x.b.FSM().Window(), func() time.Time { return clock })
	reg := prometheus.NewRegistry()
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	sub := subscribe(t, p)
	first := sub.join(func(i int) { x.put("default", fmt.Sprintf("probe-%d", i), "", 1, 0) })
	if first.ts != 1739145600000 || first.dp != 0 {
		t.Fatalf("first message %+v", first)
	}
	if e := first.events[0]; e.EventType != "stored" || e.Type != "BlockStored" || e.BackendID != "n1" || e.SeqHashes == nil ||
		len(e.SeqHashes) != 0 || e.BaseBlockIdx == nil || *e.BaseBlockIdx != 0 {
		t.Fatalf("probe event %+v", e)
	}

	x.put("default", "0x2a", "", 1, 1)                    // stored cpu (the first end), then stored disk (the second)
	x.put("default", "12345", "", 1, 1)                   // the same
	x.evict("default", "12345", metadv1.Tier_TIER_MEMORY) // nothing: it stays readable on disk
	x.remove("default", "12345")                          // removed disk: it had no memory replica left
	x.put("acme", "k", "grp", 1, 0)                       // stored cpu, another tenant, a group
	x.remove("acme", "k")                                 // removed cpu
	x.evict("default", "0x2a", metadv1.Tier_TIER_NOF)     // nothing
	x.evict("default", "0x2a", metadv1.Tier_TIER_MEMORY)  // removed cpu: evicted
	x.put("default", "end", "", 1, 0)                     // the last one
	_, evs := sub.until(first, "end")
	var got []string
	for _, e := range evs {
		got = append(got, e.short())
	}
	want := []string{
		"stored default/0x2a@cpu", "stored default/0x2a@disk", "stored default/12345@cpu", "stored default/12345@disk",
		"removed default/12345@disk",
		"stored acme/k@cpu[grp]", "removed acme/k@cpu[grp]", "removed default/0x2a@cpu", "stored default/end@cpu",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range evs {
		switch e.ObjectKey {
		case "0x2a":
			if len(e.SeqHashes) != 1 || e.SeqHashes[0] != 42 || len(e.BlockHashes) != 1 || e.BlockHashes[0] != 42 {
				t.Errorf("hashes of 0x2a: %v %v", e.SeqHashes, e.BlockHashes)
			}
		case "12345":
			if len(e.SeqHashes) != 1 || e.SeqHashes[0] != 12345 {
				t.Errorf("hashes of 12345: %v", e.SeqHashes)
			}
		}
		if (e.EventType == "removed") != (e.BaseBlockIdx == nil) || (e.EventType == "removed") != (e.Type == "BlockRemoved") {
			t.Errorf("%s: type %s base_block_idx %v", e.short(), e.Type, e.BaseBlockIdx)
		}
	}
	if n := metricValue(t, reg, "metad_kvfeed_gaps_total"); n != 0 {
		t.Errorf("gaps %v", n)
	}
	if n := metricValue(t, reg, "metad_kvfeed_events_published_total"); n < float64(len(want)+1) {
		t.Errorf("events published %v, want at least %d", n, len(want)+1)
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// storedEvent is a watch event of key becoming readable with one COMPLETE replica on tier.
func storedEvent(rev watch.Rev, key string, tier alloc.Tier) watch.Event {
	return watch.Event{Rev: rev, Kind: watch.Stored, Change: store.Change{Tenant: "default", Key: key,
		After: &store.ObjectState{Replicas: []store.Replica{{ID: 1, Tier: tier, Status: store.Complete}}}}}
}

// TestGapWhenEventsAreLost: when the publisher's cursor falls out of the window, or the state is
// replaced, the next message's sequence number skips one (a gap a consumer sees), the metric
// counts it, and publishing goes on from the next change; event ids stay consecutive.
func TestGapWhenEventsAreLost(t *testing.T) {
	w := watch.NewWindow(watch.Limits{Events: 8, Bytes: 1 << 20}, 0)
	p := newPublisher(t, w, nil)
	reg := prometheus.NewRegistry()
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	sub := subscribe(t, p)
	idx := uint64(0)
	first := sub.join(func(i int) {
		idx++
		w.Append(idx, []watch.Event{storedEvent(watch.Rev{Index: idx}, fmt.Sprintf("probe-%d", i), alloc.TierMemory)})
	})
	// Wait until the publisher has read every probe (it waits on the window again), so that the
	// burst below is what it misses.
	prev := first
	for {
		applied, _ := w.Applied()
		if last := prev.events[len(prev.events)-1].ObjectKey; last == fmt.Sprintf("probe-%d", applied-1) {
			break
		}
		prev = sub.next(10 * time.Second)
	}
	// 20 events in one entry: 12 leave the window of 8 before the cursor can read them.
	idx++
	var burst []watch.Event
	for i := range 20 {
		burst = append(burst, storedEvent(watch.Rev{Index: idx, Pos: uint32(i)}, fmt.Sprintf("lost-%d", i), alloc.TierMemory))
	}
	w.Append(idx, burst)
	waitGaps(t, reg, 1)
	idx++
	w.Append(idx, []watch.Event{storedEvent(watch.Rev{Index: idx}, "after-fell-behind", alloc.TierNOF)})
	m := sub.next(10 * time.Second)
	if m.seq != prev.seq+2 || m.events[0].ObjectKey != "after-fell-behind" || m.events[0].Medium != "disk" {
		t.Fatalf("after falling behind: seq %d (last %d), %+v", m.seq, prev.seq, m.events)
	}
	if id := m.events[0].EventID; id != prev.events[len(prev.events)-1].EventID+1 {
		t.Fatalf("event id %d after %d", id, prev.events[len(prev.events)-1].EventID)
	}
	prev = m

	idx++
	w.Reset(idx) // a snapshot replaced the state
	waitGaps(t, reg, 2)
	idx++
	w.Append(idx, []watch.Event{storedEvent(watch.Rev{Index: idx}, "after-reset", alloc.TierMemory)})
	m = sub.next(10 * time.Second)
	if m.seq != prev.seq+2 || m.events[0].ObjectKey != "after-reset" {
		t.Fatalf("after a reset: seq %d (last %d), %+v", m.seq, prev.seq, m.events)
	}
}

// waitGaps polls the gap counter until it is n, within 10 s.
func waitGaps(t *testing.T, reg *prometheus.Registry, n float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for metricValue(t, reg, "metad_kvfeed_gaps_total") != n {
		if time.Now().After(deadline) {
			t.Fatalf("gaps %v, want %v", metricValue(t, reg, "metad_kvfeed_gaps_total"), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchesOfAtMost64: a burst of events goes out in messages of at most 64 events, in order,
// every event once.
func TestBatchesOfAtMost64(t *testing.T) {
	w := watch.NewWindow(watch.Limits{Events: 1 << 12, Bytes: 1 << 24}, 0)
	p := newPublisher(t, w, nil)
	sub := subscribe(t, p)
	idx := uint64(0)
	first := sub.join(func(i int) {
		idx++
		w.Append(idx, []watch.Event{storedEvent(watch.Rev{Index: idx}, fmt.Sprintf("probe-%d", i), alloc.TierMemory)})
	})
	idx++
	var burst []watch.Event
	for i := range 150 { // each on both tiers: two stored events
		e := storedEvent(watch.Rev{Index: idx, Pos: uint32(i)}, fmt.Sprintf("k%d", i), alloc.TierMemory)
		e.Change.After.Replicas = append(e.Change.After.Replicas, store.Replica{ID: 2, Tier: alloc.TierNOF, Status: store.Complete})
		burst = append(burst, e)
	}
	w.Append(idx, burst)
	msgs, evs := sub.until(first, "k149")
	if len(evs) != 300 {
		t.Fatalf("%d events, want 300", len(evs))
	}
	for i, e := range evs {
		want := fmt.Sprintf("stored default/k%d@cpu", i/2)
		if i%2 == 1 {
			want = fmt.Sprintf("stored default/k%d@disk", i/2)
		}
		if e.short() != want {
			t.Fatalf("event %d: %s, want %s", i, e.short(), want)
		}
	}
	full := 0
	for _, m := range msgs {
		if len(m.events) == MaxBatch {
			full++
		}
	}
	if full < 4 {
		t.Fatalf("%d full messages of %d, want at least 4", full, len(msgs))
	}
}

// TestNewAndClose: a bad endpoint or an endpoint in use is an error at New; Close stops the
// publisher once, and the window's writer never waits for it.
func TestNewAndClose(t *testing.T) {
	w := watch.NewWindow(watch.Limits{Events: 16, Bytes: 1 << 20}, 0)
	for _, cfg := range []Config{{Endpoint: "127.0.0.1:5557", BackendID: "b"}, {Endpoint: "tcp://127.0.0.1", BackendID: "b"},
		{Endpoint: "udp://127.0.0.1:1", BackendID: "b"}, {Endpoint: "tcp://127.0.0.1:0"}} {
		if p, err := New(cfg, w, nil); err == nil {
			_ = p.Close()
			t.Errorf("%+v: accepted", cfg)
		}
	}
	p := newPublisher(t, w, nil)
	if q, err := New(Config{Endpoint: "tcp://" + p.Addr().String(), BackendID: "b"}, w, nil); err == nil {
		_ = q.Close()
		t.Fatal("a second publisher bound the same port")
	} else if !strings.Contains(err.Error(), p.Addr().String()) {
		t.Fatalf("bind error %q does not name the endpoint", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	for i := range 100 { // nobody reads: the writer goes on
		w.Append(uint64(i+1), []watch.Event{storedEvent(watch.Rev{Index: uint64(i + 1)}, "k", alloc.TierMemory)})
	}
	for _, ep := range []string{"tcp://*:5557", "tcp://[::1]:0", "ipc:///tmp/x.sock"} {
		if _, _, err := SplitEndpoint(ep); err != nil {
			t.Errorf("%s: %v", ep, err)
		}
	}
}
