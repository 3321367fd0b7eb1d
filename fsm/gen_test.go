package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// A seeded generator of realistic command logs over several tenants, groups and segments, shared by
// the determinism, round-trip, golden and fuzz tests.

var (
	genClients = [][]byte{uuid(0xc1, 1), uuid(0xc1, 2)}
	genTenants = []string{"default", "alpha", "beta"}
	genGroups  = []string{"", "", "g0", "g1", "g2"}
)

func uuid(a, b byte) []byte {
	id := make([]byte, 16)
	id[0], id[15] = a, b
	return id
}

type gen struct {
	r   *rand.Rand
	now int64
	seq uint64 // the last session sequence number used (session 1, opened by setup)
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), now: 1_700_000_000 * 1e9}
}

func (g *gen) key() []byte { return []byte(fmt.Sprintf("key-%02d", g.r.IntN(40))) }

func (g *gen) tenant() string { return genTenants[g.r.IntN(len(genTenants))] }

func (g *gen) client() []byte { return genClients[g.r.IntN(len(genClients))] }

func (g *gen) config() *metadv1.ReplicaConfig {
	c := &metadv1.ReplicaConfig{MemoryReplicas: uint32(1 + g.r.IntN(2)), NofReplicas: uint32(g.r.IntN(2)),
		HardPin: g.r.IntN(8) == 0}
	if g.r.IntN(4) == 0 {
		c.SoftPin, c.SoftPinTtlMs = metadv1.SoftPinAction_SOFT_PIN_ACTION_ENABLE, uint64(1000*(1+g.r.IntN(60)))
	}
	return c
}

// setup registers the tenants and mounts the segments.
func (g *gen) setup() []*metadv1.Command {
	cmds := []*metadv1.Command{
		{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "alpha", QuotaBytes: 1 << 20}}},
		{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "beta"}}},
	}
	for i := range 4 {
		tier := metadv1.Tier_TIER_MEMORY
		if i == 3 {
			tier = metadv1.Tier_TIER_NOF
		}
		cmds = append(cmds, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Id: uuid(0x5e, byte(i+1)), Name: fmt.Sprintf("seg%d", i), Base: uint64(i+1) << 32,
				Size: 256 << 10, Endpoint: "127.0.0.1:7000", Tier: tier, OwnerClientId: genClients[i%2]}}}})
	}
	for i := 1; i <= 3; i++ {
		cmds = append(cmds, &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{Name: fmt.Sprintf("n%d", i),
			PeerAddress: fmt.Sprintf("127.0.0.1:610%d", i), ClientAddress: fmt.Sprintf("127.0.0.1:600%d", i)}}})
	}
	return append(cmds, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 3_600_000, Window: 16}}})
}

// withSession gives a command of a client write session 1's header, one time in five: a new
// sequence number, or a repeat of a recent one (a retry), acknowledging all but the last few.
func (g *gen) withSession(c *metadv1.Command) *metadv1.Command {
	if g.r.IntN(5) != 0 {
		return c
	}
	seq := g.seq + 1
	if g.seq > 0 && g.r.IntN(3) == 0 {
		seq = max(1, g.seq-uint64(g.r.IntN(3)))
	} else {
		g.seq = seq
	}
	c.Session = &metadv1.SessionHeader{SessionId: 1, Seq: seq, FirstUnackedSeq: max(1, g.seq-uint64(g.r.IntN(6)))}
	return c
}

// command draws one random command.
func (g *gen) command() *metadv1.Command {
	t, k, cl := g.tenant(), g.key(), g.client()
	switch n := g.r.IntN(100); {
	case n < 30:
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: t, ClientId: cl, Key: k,
			Group: []byte(genGroups[g.r.IntN(len(genGroups))]), Size: uint64(1 + g.r.IntN(8000)), Config: g.config(),
			Placement: metadv1.PlacementStrategy(g.r.IntN(3))}}}
	case n < 55:
		return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: t, ClientId: cl, Key: k,
			Tier: metadv1.Tier(g.r.IntN(3))}}}
	case n < 60:
		return &metadv1.Command{Op: &metadv1.Command_PutRevoke{PutRevoke: &metadv1.PutRevoke{Tenant: t, ClientId: cl, Key: k}}}
	case n < 64:
		return &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{Tenant: t, ClientId: cl, Key: k,
			Size: uint64(1 + g.r.IntN(8000)), Config: g.config()}}}
	case n < 67:
		return &metadv1.Command{Op: &metadv1.Command_UpsertEnd{UpsertEnd: &metadv1.UpsertEnd{Tenant: t, ClientId: cl, Key: k}}}
	case n < 75:
		return &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Tenant: t, Key: k}}}
	case n < 77:
		return &metadv1.Command{Op: &metadv1.Command_RemoveGroup{RemoveGroup: &metadv1.RemoveGroup{Tenant: t,
			Group: []byte(genGroups[2+g.r.IntN(3)])}}}
	case n < 79:
		refs := []*metadv1.ObjectRef{{Key: g.key()}, {Key: g.key()}, {Key: g.key()}}
		return &metadv1.Command{Op: &metadv1.Command_RemoveAll{RemoveAll: &metadv1.RemoveAll{Tenant: t, Targets: refs}}}
	case n < 84:
		b := &metadv1.BatchPutStart{Tenant: t, ClientId: cl, Config: g.config()}
		for range 1 + g.r.IntN(6) {
			b.Items = append(b.Items, &metadv1.BatchPutStart_Item{Key: g.key(), Size: uint64(1 + g.r.IntN(4000))})
		}
		return &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: b}}
	case n < 89:
		return &metadv1.Command{Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: &metadv1.BatchPutEnd{Tenant: t, ClientId: cl,
			Keys: [][]byte{g.key(), g.key(), g.key(), g.key()}}}}
	case n < 90:
		return &metadv1.Command{Op: &metadv1.Command_BatchPutRevoke{BatchPutRevoke: &metadv1.BatchPutRevoke{Tenant: t, ClientId: cl,
			Keys: [][]byte{g.key(), g.key()}}}}
	case n < 92:
		return &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{Tenant: t,
			Items: []*metadv1.ObjectRef{{Key: g.key()}, {Key: g.key()}}}}}
	case n < 94:
		// Versions 1..3 hit objects often enough for real evictions and real skips; instance 3 is
		// beta's first registration, so later ones exercise the instance fence.
		inst := map[string]uint64{"default": 1, "alpha": 2, "beta": 3}[t]
		toks := []*metadv1.ObjectToken{{Tenant: t, TenantInstanceId: inst, Key: k, ObjectId: uint64(1 + g.r.IntN(60)),
			Version: uint64(1 + g.r.IntN(3))}}
		ev := &metadv1.Evict{Tokens: toks, Tier: metadv1.Tier(g.r.IntN(3))}
		if g.r.IntN(2) == 0 { // the same tokens in columns, the form the eviction kernel writes
			ev.Tokens, ev.Columns = nil, wire.ColumnsTo(tokens(toks))
		}
		return &metadv1.Command{Op: &metadv1.Command_Evict{Evict: ev}}
	case n < 95:
		return &metadv1.Command{Op: &metadv1.Command_RevokeExpired{RevokeExpired: &metadv1.RevokeExpired{Tokens: []*metadv1.ObjectToken{
			{Tenant: t, TenantInstanceId: 1 + uint64(g.r.IntN(3)), Key: k, ObjectId: uint64(1 + g.r.IntN(60)), Version: 1}}}}}
	case n < 97:
		return &metadv1.Command{Op: &metadv1.Command_SetQuota{SetQuota: &metadv1.SetQuota{Tenant: t, QuotaBytes: uint64(g.r.IntN(3)) << 19}}}
	case n < 98:
		return &metadv1.Command{Op: &metadv1.Command_UnregisterTenant{UnregisterTenant: &metadv1.UnregisterTenant{Name: "beta", Force: g.r.IntN(2) == 0}}}
	case n < 99:
		return &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "beta"}}}
	default:
		i := byte(1 + g.r.IntN(4))
		if g.r.IntN(3) == 0 { // mount twice as often as unmount, so the state keeps segments
			return &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
				ClientId: genClients[(i-1)%2], SegmentIds: [][]byte{uuid(0x5e, i)}}}}
		}
		return g.setup()[2+int(i-1)]
	}
}

// entry draws one log entry of 1..4 commands (the proposer's coalescing).
func (g *gen) entry() *metadv1.Envelope {
	g.now += int64(g.r.IntN(500)) * 1e6
	if g.r.IntN(50) == 0 {
		g.now += 31e9 // past the put discard timeout
	}
	e := &metadv1.Envelope{LeaderTimeUnixNano: g.now, Seed: g.r.Uint64()}
	for range 1 + g.r.IntN(4) {
		e.Commands = append(e.Commands, g.withSession(g.command()))
	}
	return e
}

// genLogs returns n log entries: the setup entry, then random ones.
func genLogs(tb testing.TB, seed uint64, n int) []*raft.Log {
	tb.Helper()
	return genLogsRules(tb, seed, n, 0)
}

// genLogsRules is genLogs with the entries stamped rules version rules (0: this release's), as
// a leader of that release wrote them: the golden files of older formats were written from such
// entries.
func genLogsRules(tb testing.TB, seed uint64, n int, rules uint32) []*raft.Log {
	tb.Helper()
	g := newGen(seed)
	logs := make([]*raft.Log, 0, n)
	for i := range n {
		var e *metadv1.Envelope
		if i == 0 {
			e = &metadv1.Envelope{LeaderTimeUnixNano: g.now, Seed: 1, Commands: g.setup()}
		} else {
			e = g.entry()
		}
		e.RulesVersion = rules
		data, err := EncodeEnvelope(e)
		if err != nil {
			tb.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data})
	}
	return logs
}

func newFSM(tb testing.TB) *FSM {
	tb.Helper()
	f, err := New(store.DefaultConfig(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	canceled, closed bool
}

func (s *memSink) ID() string            { return "mem" }
func (s *memSink) Cancel() error         { s.canceled = true; return nil }
func (s *memSink) Close() error          { s.closed = true; return nil }
func (s *memSink) Reader() *bytes.Reader { return bytes.NewReader(s.Bytes()) }

// snapshotBytes takes a snapshot of f and persists it to memory.
func snapshotBytes(tb testing.TB, f *FSM) []byte {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		tb.Fatal(err)
	}
	snap.Release()
	if !sink.closed {
		tb.Fatal("Persist did not close the sink")
	}
	return sink.Bytes()
}
