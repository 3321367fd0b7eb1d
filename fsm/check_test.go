package fsm

import (
	"bytes"
	"slices"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// checkCommand draws a command for the precheck walk: the generator's, and as often forms the
// generator rarely writes and the state often refuses (another client's segments, a group an
// upsert cannot join, an upsert revoked, a tenant never registered).
func (g *gen) checkCommand() *metadv1.Command {
	k, cl := g.key(), g.client()
	other := genClients[0]
	if bytes.Equal(cl, other) {
		other = genClients[1]
	}
	i := byte(1 + g.r.IntN(4))
	switch g.r.IntN(16) {
	case 0:
		return &metadv1.Command{Op: &metadv1.Command_UpsertRevoke{UpsertRevoke: &metadv1.UpsertRevoke{Tenant: g.tenant(), ClientId: cl, Key: k}}}
	case 1:
		return &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{Tenant: g.tenant(), ClientId: cl, Key: k,
			Group: []byte(genGroups[g.r.IntN(len(genGroups))]), Size: uint64(1 + g.r.IntN(8000)), Config: g.config()}}}
	case 2: // a segment of the generator's, mounted by the wrong client or with another size
		m := g.setup()[2+int(i-1)]
		seg := *m.GetMountSegment().GetSegment()
		if g.r.IntN(2) == 0 {
			seg.OwnerClientId = genClients[i%2]
		} else {
			seg.Size *= 2
		}
		return &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &seg}}}
	case 3: // by the wrong client
		return &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
			ClientId: genClients[i%2], SegmentIds: [][]byte{uuid(0x5e, i)}}}}
	case 4:
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "gamma", ClientId: cl, Key: k, Size: 64,
			Config: g.config()}}}
	case 5:
		return &metadv1.Command{Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: &metadv1.BatchPutEnd{Tenant: g.tenant(), ClientId: other,
			Keys: [][]byte{g.key(), g.key()}, Tier: metadv1.Tier(g.r.IntN(3))}}}
	case 6: // a graceful unmount by the wrong client, or of a segment never mounted
		seg := uuid(0x5e, i)
		if g.r.IntN(2) == 0 {
			seg = uuid(0x5e, 9)
		}
		return &metadv1.Command{Op: &metadv1.Command_CloseSegment{CloseSegment: &metadv1.CloseSegment{
			ClientId: genClients[i%2], SegmentId: seg, UnmountAtUnixNano: g.now + int64(time.Hour)}}}
	case 7, 8, 9:
		return g.taskCommand()
	}
	return g.command()
}

// taskCommand draws a copy's or move's Start, End or Revoke on a random key, from and to random
// segments of the generator's (a segment that does not exist now and then), or a scheduled
// task's Create, Fetch or Complete.
func (g *gen) taskCommand() *metadv1.Command {
	t, k, cl := g.tenant(), g.key(), g.client()
	kind := metadv1.TaskKind(1 + g.r.IntN(2))
	seg := func() []byte { return uuid(0x5e, byte(1+g.r.IntN(5))) }
	switch g.r.IntN(7) {
	case 4:
		m := &metadv1.CreateTask{Kind: kind, Tenant: t, Key: k}
		if g.r.IntN(2) == 0 {
			m.SourceSegmentId = seg()
		}
		return &metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: m}}
	case 5:
		return &metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: cl, Batch: uint32(1 + g.r.IntN(3))}}}
	case 6:
		return &metadv1.Command{Op: &metadv1.Command_CompleteTask{CompleteTask: &metadv1.CompleteTask{ClientId: cl,
			TaskId: uint64(1 + g.r.IntN(20)), Success: g.r.IntN(2) == 0}}}
	case 0:
		return &metadv1.Command{Op: &metadv1.Command_ReplicaTaskEnd{ReplicaTaskEnd: &metadv1.ReplicaTaskEnd{Tenant: t, ClientId: cl, Key: k, Kind: kind}}}
	case 1:
		return &metadv1.Command{Op: &metadv1.Command_ReplicaTaskRevoke{ReplicaTaskRevoke: &metadv1.ReplicaTaskRevoke{Tenant: t, ClientId: cl, Key: k, Kind: kind}}}
	}
	m := &metadv1.ReplicaTaskStart{Tenant: t, ClientId: cl, Key: k, Kind: kind, SourceSegmentId: seg(),
		Placement: metadv1.PlacementStrategy(1 + g.r.IntN(2))}
	if g.r.IntN(2) == 0 {
		m.TargetSegmentIds = [][]byte{seg()}
	}
	return &metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: m}}
}

// For a range of states, Check refuses only what apply refuses: a random walk over a few tenants,
// groups, clients and segments checks each command against the state and then applies it alone in
// an entry. Whenever Check refuses, apply must refuse with the same reason (per item for a batch;
// a batch refused whole must see every item refused with that reason) and leave the state as it
// was (on a sample). Time moves on between check and apply, past the put discard timeout now and then, as it
// does between a leader's check and its entry's commit. The walk must meet every kind of refusal
// Check knows.
func TestCheckRefusesOnlyWhatApplyRefuses(t *testing.T) {
	steps := 1200
	if testing.Short() {
		steps = 400
	}
	refusals := map[string]int{}
	passedThenRefused := 0
	for _, seed := range []uint64{1, 2, 3} {
		g := newGen(seed)
		f := newFSM(t)
		index := uint64(1)
		applyCmds(t, f, index, g.now, g.setup()...)
		for range steps {
			c := g.checkCommand()
			want, refused := Check(f.Store(), f.Auth(), c)
			var before []byte
			if refused && index%4 == 0 { // a snapshot is most of a step's cost: compare states on a sample
				before = stateOnly(t, snapshotBytes(t, f))
			}
			g.now += int64(g.r.IntN(500)) * 1e6
			if g.r.IntN(50) == 0 {
				g.now += 31e9 // past the put discard timeout
			}
			index++
			got := applyCmds(t, f, index, g.now, c)[0]
			if !refused {
				if got.Reason != store.OK || slices.ContainsFunc(got.Items, func(r store.Result) bool { return r.Reason != store.OK }) {
					passedThenRefused++
				}
				continue
			}
			name := string(c.ProtoReflect().WhichOneof(c.ProtoReflect().Descriptor().Oneofs().ByName("op")).Name())
			refusals[name]++
			switch {
			case want.Items == nil && got.Items == nil:
				if got.Reason != want.Reason || want.Reason == store.OK {
					t.Fatalf("seed %d entry %d: %s checked %s (%s), applied %s (%s)", seed, index, name, want.Reason, want.Message, got.Reason, got.Message)
				}
			case want.Items == nil: // a batch refused whole
				for i, r := range got.Items {
					if r.Reason != want.Reason {
						t.Fatalf("seed %d entry %d: %s checked %s whole, item %d applied %s (%s)", seed, index, name, want.Reason, i, r.Reason, r.Message)
					}
				}
			default:
				if len(got.Items) != len(want.Items) {
					t.Fatalf("seed %d entry %d: %s checked %d items, applied %d", seed, index, name, len(want.Items), len(got.Items))
				}
				for i := range want.Items {
					if w, r := want.Items[i], got.Items[i]; w.Reason == store.OK || r.Reason != w.Reason {
						t.Fatalf("seed %d entry %d: %s item %d checked %s (%s), applied %s (%s)", seed, index, name, i, w.Reason, w.Message, r.Reason, r.Message)
					}
				}
			}
			if before == nil {
				continue
			}
			if after := stateOnly(t, snapshotBytes(t, f)); !bytes.Equal(before, after) {
				t.Fatalf("seed %d entry %d: %s was checked as refused, and applying it changed the state", seed, index, name)
			}
		}
		if err := f.Store().CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("refused by Check: %v; passed Check and refused (at least in part) by apply: %d", refusals, passedThenRefused)
	if testing.Short() {
		return // 400 steps a seed do not reach every kind of refusal; make test walks 1200
	}
	for _, name := range []string{"put_start", "put_end", "put_revoke", "upsert_start", "upsert_end", "upsert_revoke",
		"batch_put_start", "batch_put_end", "batch_put_revoke", "register_tenant", "unregister_tenant", "set_quota",
		"mount_segment", "unmount_segment", "replica_task_start", "replica_task_end", "replica_task_revoke",
		"create_task", "complete_task"} {
		if refusals[name] == 0 {
			t.Errorf("the walk never saw Check refuse %s", name)
		}
	}
}

// TestCheckRefusesEndOfATierWithNoReplica: a PutEnd, UpsertEnd, PutRevoke or UpsertRevoke (or a
// batch item of one) naming a tier the write has no replica of, such as the NOF tier of a
// memory-only write, is refused INVALID_WRITE by Check, as apply refuses it, changing nothing; so
// the leader answers it without a log entry. A tier the write does have is not refused, and
// neither is a PutEnd repeated after its replicas of the tier are COMPLETE (SEMANTICS: OK).
func TestCheckRefusesEndOfATierWithNoReplica(t *testing.T) {
	g := newGen(1)
	f := newFSM(t)
	index := uint64(1)
	applyCmds(t, f, index, g.now, g.setup()...)
	cl := genClients[0]
	start := func(key string, nof uint32) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: "beta", ClientId: cl, Key: []byte(key), Size: 64,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1, NofReplicas: nof}}}}
	}
	index++
	for i, r := range applyCmds(t, f, index, g.now, start("mem", 0), start("both", 1)) {
		if r.Reason != store.OK {
			t.Fatalf("PutStart %d: %s %s", i, r.Reason, r.Message)
		}
	}
	nof := metadv1.Tier_TIER_NOF
	mem := [][]byte{[]byte("mem")}
	refusedCmds := map[string]*metadv1.Command{
		"PutEnd":         {Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "beta", ClientId: cl, Key: mem[0], Tier: nof}}},
		"UpsertEnd":      {Op: &metadv1.Command_UpsertEnd{UpsertEnd: &metadv1.UpsertEnd{Tenant: "beta", ClientId: cl, Key: mem[0], Tier: nof}}},
		"PutRevoke":      {Op: &metadv1.Command_PutRevoke{PutRevoke: &metadv1.PutRevoke{Tenant: "beta", ClientId: cl, Key: mem[0], Tier: nof}}},
		"UpsertRevoke":   {Op: &metadv1.Command_UpsertRevoke{UpsertRevoke: &metadv1.UpsertRevoke{Tenant: "beta", ClientId: cl, Key: mem[0], Tier: nof}}},
		"BatchPutEnd":    {Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: &metadv1.BatchPutEnd{Tenant: "beta", ClientId: cl, Keys: mem, Tier: nof}}},
		"BatchPutRevoke": {Op: &metadv1.Command_BatchPutRevoke{BatchPutRevoke: &metadv1.BatchPutRevoke{Tenant: "beta", ClientId: cl, Keys: mem, Tier: nof}}},
	}
	for _, name := range []string{"PutEnd", "UpsertEnd", "PutRevoke", "UpsertRevoke", "BatchPutEnd", "BatchPutRevoke"} {
		c := refusedCmds[name]
		want, refused := Check(f.Store(), f.Auth(), c)
		reason := want.Reason
		if len(want.Items) == 1 {
			reason = want.Items[0].Reason
		}
		if !refused || reason != store.InvalidWrite {
			t.Fatalf("%s of the NOF tier of a memory-only write: checked refused=%v %+v, want INVALID_WRITE", name, refused, want)
		}
		before := stateOnly(t, snapshotBytes(t, f))
		index++
		got := applyCmds(t, f, index, g.now, c)[0]
		if got.Reason != store.InvalidWrite && (len(got.Items) != 1 || got.Items[0].Reason != store.InvalidWrite) {
			t.Fatalf("%s: applied %+v, want INVALID_WRITE", name, got)
		}
		if after := stateOnly(t, snapshotBytes(t, f)); !bytes.Equal(before, after) {
			t.Fatalf("%s: refused, and applying it changed the state", name)
		}
	}
	for _, c := range []*metadv1.Command{
		{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "beta", ClientId: cl, Key: []byte("both"), Tier: nof}}},
		{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "beta", ClientId: cl, Key: []byte("both"), Tier: nof}}}, // a repeat
		{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: "beta", ClientId: cl, Key: []byte("mem"), Tier: metadv1.Tier_TIER_MEMORY}}},
	} {
		if r, refused := Check(f.Store(), f.Auth(), c); refused {
			t.Fatalf("%v: refused %+v", c, r)
		}
		index++
		if r := applyCmds(t, f, index, g.now, c)[0]; r.Reason != store.OK {
			t.Fatalf("%v: applied %s %s", c, r.Reason, r.Message)
		}
	}
}
