package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// ownerFixture is a sessionFixture with tenants alpha and beta, whose session beta's principal
// opened; the commands it applies carry the principal they name, as the leader stamps them.
type ownerFixture struct {
	*sessionFixture
}

func newOwnerFixture(t *testing.T, ttl time.Duration) *ownerFixture {
	x := &ownerFixture{&sessionFixture{t: t, f: newFSM(t)}}
	x.apply(0, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: uuid(0x5e, 1), Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: genClients[0]}}}})
	for _, tn := range []string{"alpha", "beta"} {
		if r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: tn}}})[0]; r.Reason != store.OK {
			t.Fatalf("register %s: %+v", tn, r)
		}
	}
	r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{
		TtlMs: uint64(ttl / time.Millisecond), Window: 16}}, Principal: "beta"})[0]
	if r.Reason != store.OK || r.Session == 0 {
		t.Fatalf("open session: %+v", r)
	}
	x.id = r.Session
	return x
}

func hdr(id, seq, unacked uint64) *metadv1.SessionHeader {
	return &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: unacked}
}

// as applies cmd as principal p's, with session header h, at leader time at.
func (x *ownerFixture) as(at time.Duration, p string, h *metadv1.SessionHeader, cmd *metadv1.Command) store.Result {
	x.t.Helper()
	cmd.Principal, cmd.Session = p, h
	return x.apply(at, cmd)[0]
}

func putStartCmd(tenant, key string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{Tenant: tenant, ClientId: genClients[0],
		Key: []byte(key), Size: 100, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
}

func upsertStartCmd(tenant, key string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{Tenant: tenant, ClientId: genClients[0],
		Key: []byte(key), Size: 100, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
}

func putEndCmd(tenant, key string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tenant: tenant, ClientId: genClients[0], Key: []byte(key)}}}
}

func removeCmd(tenant, key string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Tenant: tenant, Key: []byte(key), Force: true}}}
}

// keyedRemoveCmd is a page of RemoveByRegex: a forced, keyed BatchRemove.
func keyedRemoveCmd(tenant string, keys ...string) *metadv1.Command {
	m := &metadv1.BatchRemove{Tenant: tenant, Force: true, Keyed: true}
	for _, k := range keys {
		m.Items = append(m.Items, &metadv1.ObjectRef{Key: []byte(k)})
	}
	return &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: m}}
}

// asOld is as, in an entry written before the owner rule (rules version 1).
func (x *ownerFixture) asOld(at time.Duration, p string, h *metadv1.SessionHeader, cmd *metadv1.Command) store.Result {
	x.t.Helper()
	cmd.Principal, cmd.Session = p, h
	x.index++
	data, err := EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: sessionEpoch + int64(at), Seed: x.index, RulesVersion: rulesLimits,
		Commands: []*metadv1.Command{cmd}})
	if err != nil {
		x.t.Fatal(err)
	}
	res, ok := x.f.Apply(&raft.Log{Index: x.index, Term: 1, Type: raft.LogCommand, Data: data}).(*EntryResult)
	if !ok || len(res.Results) != 1 {
		x.t.Fatalf("Apply returned %#v", res)
	}
	return res.Results[0]
}

// present reports whether tenant holds key.
func (x *ownerFixture) present(tenant, key string) bool {
	return x.f.Store().Holds(tenant, key)
}

// TestSessionOfAnotherPrincipal: alpha's principal, naming the session beta's principal opened,
// gets no kept answer of beta's, plants no answer in it, raises no floor and keeps it alive no
// longer: apply answers SESSION_EXPIRED, as for a session it does not hold, and the session is
// exactly as if alpha had sent nothing.
func TestSessionOfAnotherPrincipal(t *testing.T) {
	for _, tc := range []struct {
		name string
		// attack is what alpha sends at 5 s, between beta's seq 1..2 (at 0 s) and its seq 3 (at 6 s).
		attack func(x *ownerFixture) store.Result
		// check runs after beta's seq 3.
		check func(t *testing.T, x *ownerFixture, beta3 store.Result)
	}{
		{name: "a removal's kept answer", attack: func(x *ownerFixture) store.Result {
			return x.as(5*time.Second, "alpha", hdr(x.id, 2, 1), keyedRemoveCmd("alpha", "zzz"))
		}, check: func(t *testing.T, x *ownerFixture, _ store.Result) {}},
		{name: "an upsert's placement", attack: func(x *ownerFixture) store.Result {
			return x.as(5*time.Second, "alpha", hdr(x.id, 1, 1), upsertStartCmd("alpha", "mine"))
		}, check: func(t *testing.T, x *ownerFixture, _ store.Result) {
			if x.present("alpha", "mine") {
				t.Error("alpha's upsert ran in a session it does not own")
			}
		}},
		{name: "a seq planted ahead", attack: func(x *ownerFixture) store.Result {
			return x.as(5*time.Second, "alpha", hdr(x.id, 3, 1), removeCmd("alpha", "a0"))
		}, check: func(t *testing.T, x *ownerFixture, beta3 store.Result) {
			if beta3.Reason != store.OK || x.present("beta", "b1") {
				t.Errorf("beta's Remove at seq 3: %+v, b1 present %v: answered with alpha's planted answer", beta3, x.present("beta", "b1"))
			}
		}},
		{name: "a floor raised", attack: func(x *ownerFixture) store.Result {
			return x.as(5*time.Second, "alpha", hdr(x.id, 1000, 1000), removeCmd("alpha", "none"))
		}, check: func(t *testing.T, x *ownerFixture, beta3 store.Result) {
			if beta3.Reason != store.OK {
				t.Errorf("beta's seq 3 after alpha's floor 1000: %s %s", beta3.Reason, beta3.Message)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(attacked bool) (*ownerFixture, store.Result, store.Result) {
				x := newOwnerFixture(t, time.Minute)
				for _, c := range []*metadv1.Command{putStartCmd("beta", "b1"), putEndCmd("beta", "b1"),
					putStartCmd("alpha", "a0"), putEndCmd("alpha", "a0")} {
					if r := x.as(0, "", nil, c); r.Reason != store.OK {
						t.Fatalf("setup: %+v", r)
					}
				}
				if r := x.as(0, "beta", hdr(x.id, 1, 1), upsertStartCmd("beta", "b2")); r.Reason != store.OK || len(r.Replicas) != 1 {
					t.Fatalf("beta's upsert: %+v", r)
				}
				if r := x.as(0, "beta", hdr(x.id, 2, 1), keyedRemoveCmd("beta", "b2")); r.Reason != store.OK || len(r.Items) != 1 || r.Items[0].Key != "b2" {
					t.Fatalf("beta's keyed removal: %+v", r)
				}
				var got store.Result
				if attacked {
					got = tc.attack(x)
				}
				beta3 := x.as(6*time.Second, "beta", hdr(x.id, 3, 1), removeCmd("beta", "b1"))
				return x, got, beta3
			}
			x, got, beta3 := run(true)
			if got.Reason != store.SessionExpired || got.Message != "session 1 is unknown or expired" || len(got.Replicas) != 0 || len(got.Items) != 0 {
				t.Errorf("alpha naming beta's session: %+v, want SESSION_EXPIRED as for an unknown session", got)
			}
			tc.check(t, x, beta3)
			clean, _, _ := run(false)
			if !bytes.Equal(stateOnly(t, snapshotBytes(t, x.f)), stateOnly(t, snapshotBytes(t, clean.f))) {
				t.Error("alpha's command changed beta's session (or anything else)")
			}
		})
	}
}

// TestSessionOfAnotherPrincipalKeptAlive: alpha's commands naming beta's session do not keep it
// alive: it expires by beta's own last command.
func TestSessionOfAnotherPrincipalKeptAlive(t *testing.T) {
	x := newOwnerFixture(t, 10*time.Second)
	if r := x.as(0, "beta", hdr(x.id, 1, 1), putStartCmd("beta", "b1")); r.Reason != store.OK {
		t.Fatalf("beta: %+v", r)
	}
	for i, at := range []time.Duration{8 * time.Second, 16 * time.Second} {
		x.as(at, "alpha", hdr(x.id, uint64(10+i), 1), putStartCmd("alpha", "a"))
	}
	if r := x.as(19*time.Second, "beta", hdr(x.id, 2, 1), putStartCmd("beta", "b2")); r.Reason != store.SessionExpired {
		t.Fatalf("beta's session 19 s after its last command (ttl 10 s), alpha's in between: %s, want SESSION_EXPIRED", r.Reason)
	}
}

// TestSessionOwnerRuleReplaysOldEntries: the owner rule holds for entries written under it
// (rules_version 2); an entry written before it replays as it applied then, and a session opened by
// such an entry belongs to no one at apply.
func TestSessionOwnerRuleReplaysOldEntries(t *testing.T) {
	x := newOwnerFixture(t, time.Minute)
	old := x.asOld
	first := x.as(0, "beta", hdr(x.id, 1, 1), putStartCmd("beta", "b1"))
	if r := old(time.Second, "alpha", hdr(x.id, 1, 1), putStartCmd("alpha", "a1")); r.Reason != store.OK || len(r.Replicas) != 1 ||
		r.Replicas[0] != first.Replicas[0] {
		t.Fatalf("an entry written before the rule: %+v, want beta's kept answer, as it applied then", r)
	}
	opened := old(0, "beta", nil, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 60000, Window: 4}}})
	if r := x.as(time.Second, "alpha", hdr(opened.Session, 1, 1), putStartCmd("alpha", "a2")); r.Reason != store.OK || !x.present("alpha", "a2") {
		t.Fatalf("a session opened before the rule, used by another principal: %+v", r)
	}
}

// TestSessionOwnerSurvivesSnapshot: a snapshot carries each session's owner, and a session of no
// known owner stays one: after a restore, beta's session is still closed to alpha at apply and at
// the leader, and the session opened before the owner rule still admits anyone at apply and no
// one at the leader.
func TestSessionOwnerSurvivesSnapshot(t *testing.T) {
	x := newOwnerFixture(t, time.Minute)
	unowned := x.asOld(0, "beta", nil, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 60000, Window: 4}}}).Session
	if r := x.as(0, "beta", hdr(x.id, 1, 1), putStartCmd("beta", "b1")); r.Reason != store.OK {
		t.Fatalf("beta: %+v", r)
	}
	data := snapshotBytes(t, x.f)
	g := &ownerFixture{&sessionFixture{t: t, f: newFSM(t), index: x.index, id: x.id}}
	if err := g.f.Restore(nopCloser{bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, g.f), data) {
		t.Fatal("the restored sessions encode to other bytes")
	}
	for _, c := range []struct {
		id   uint64
		p    string
		open bool
	}{{x.id, "beta", true}, {x.id, "alpha", false}, {x.id, "", false}, {unowned, "beta", false}, {unowned, "", false}} {
		if got := g.f.SessionOpen(c.id, c.p); got != c.open {
			t.Errorf("restored session %d open to %q at the leader: %v, want %v", c.id, c.p, got, c.open)
		}
	}
	if _, ok := g.f.Replay(hdr(x.id, 1, 1), "alpha"); ok {
		t.Error("alpha replays beta's kept answer after the restore")
	}
	if r, ok := g.f.Replay(hdr(x.id, 1, 1), "beta"); !ok || len(r.Replicas) != 1 {
		t.Errorf("beta's kept answer after the restore: %+v %v", r, ok)
	}
	if r := g.as(time.Second, "alpha", hdr(x.id, 2, 2), putStartCmd("alpha", "a1")); r.Reason != store.SessionExpired {
		t.Errorf("alpha in beta's restored session: %s, want SESSION_EXPIRED", r.Reason)
	}
	if r := g.as(time.Second, "beta", hdr(x.id, 2, 2), putStartCmd("beta", "b2")); r.Reason != store.OK {
		t.Errorf("beta in its restored session: %+v", r)
	}
	if r := g.as(time.Second, "alpha", hdr(unowned, 1, 1), putStartCmd("alpha", "a2")); r.Reason != store.OK {
		t.Errorf("a session of no known owner at apply, after the restore: %+v", r)
	}
}
