package fsm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

func createKeyCmd(id, principal string, secret []byte, created, expires int64) *metadv1.Command {
	sum := sha256.Sum256(secret)
	return &metadv1.Command{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
		Id: id, Principal: principal, Sha256: sum[:], CreatedMs: created, ExpiresMs: expires}}}
}

func revokeKeyCmd(id string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RevokeKey{RevokeKey: &metadv1.RevokeKey{Id: id}}}
}

func grantCmd(principal, role string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_GrantRole{GrantRole: &metadv1.GrantRole{Principal: principal, Role: role}}}
}

func revokeRoleCmd(principal, role string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RevokeRole{RevokeRole: &metadv1.RevokeRole{Principal: principal, Role: role}}}
}

func secretOf(b byte) []byte { return []byte(strings.Repeat(string(rune(b)), auth.SecretBytes)) }

const workerID = "c1000000-0000-0000-0000-000000000001"

// applyAuthCmd applies each command in its own entry (index from *idx on) and checks that Check
// refuses exactly what apply refuses, with the same reason, and that a refusal changes nothing.
func applyAuthCmd(t *testing.T, f *FSM, idx *uint64, c *metadv1.Command) store.Result {
	t.Helper()
	before := f.Auth()
	cr, refused := Check(f.Store(), before, c)
	*idx++
	r := applyCmds(t, f, *idx, 1e12, c)[0]
	if refused != (r.Reason != store.OK) || refused && cr.Reason != r.Reason {
		t.Fatalf("check %v (%s), apply %s: %s", refused, cr.Reason, r.Reason, r.Message)
	}
	if r.Reason != store.OK && f.Auth() != before {
		t.Fatalf("a refused %T changed the auth state", c.GetOp())
	}
	return r
}

func TestAuthCommands(t *testing.T) {
	f := newFSM(t)
	var idx uint64
	if f.Auth().Revision() != 0 || f.Auth().Keys() != nil && len(f.Auth().Keys()) != 0 {
		t.Fatal("a fresh FSM has auth state")
	}
	k1 := "0123456789abcdef"
	cases := []struct {
		name    string
		cmd     *metadv1.Command
		want    store.Reason
		bump    bool
		message string // a substring of the refusal's message
	}{
		{"create", createKeyCmd(k1, "alice", secretOf('a'), 1000, 0), store.OK, true, ""},
		{"create same id", createKeyCmd(k1, "bob", secretOf('b'), 1000, 0), store.KeyAlreadyExists, false, k1},
		{"create bad id", createKeyCmd("0123456789ABCDEF", "bob", secretOf('b'), 1000, 0), store.InvalidParams, false, "create_key.id"},
		{"create short id", createKeyCmd("0123", "bob", secretOf('b'), 1000, 0), store.InvalidParams, false, "create_key.id"},
		{"create bad principal", createKeyCmd("1123456789abcdef", "-bob", secretOf('b'), 1000, 0), store.InvalidParams, false, "create_key.principal"},
		{"create bad hash", &metadv1.Command{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
			Id: "1123456789abcdef", Principal: "bob", Sha256: []byte{1}, CreatedMs: 1}}}, store.InvalidParams, false, "create_key.sha256"},
		{"create expiry before creation", createKeyCmd("1123456789abcdef", "bob", secretOf('b'), 1000, 1000), store.InvalidParams, false, "create_key.expires_ms"},
		{"create ttl over ten years", createKeyCmd("1123456789abcdef", "bob", secretOf('b'), 1000, 1000+auth.MaxKeyTTL.Milliseconds()+1), store.InvalidParams, false, "create_key.expires_ms"},
		{"create ttl of ten years", createKeyCmd("1123456789abcdef", "bob", secretOf('b'), 1000, 1000+auth.MaxKeyTTL.Milliseconds()), store.OK, true, ""},
		{"create for root", createKeyCmd("2123456789abcdef", auth.RootPrincipal, secretOf('r'), 1000, 0), store.OK, true, ""},
		{"revoke", revokeKeyCmd("1123456789abcdef"), store.OK, true, ""},
		{"revoke again", revokeKeyCmd("1123456789abcdef"), store.KeyNotFound, false, "1123456789abcdef"},
		{"grant tenant", grantCmd("alice", "tenant:t1"), store.OK, true, ""},
		{"grant again", grantCmd("alice", "tenant:t1"), store.OK, false, ""},
		{"grant worker", grantCmd("alice", "worker:"+strings.ToUpper(workerID)), store.OK, true, ""},
		{"grant worker, other spelling", grantCmd("alice", "worker:"+strings.ReplaceAll(workerID, "-", "")), store.OK, false, ""},
		{"grant reader", grantCmd("bob", "reader"), store.OK, true, ""},
		{"grant bad role", grantCmd("bob", "owner"), store.InvalidParams, false, "grant_role.role"},
		{"grant zero worker", grantCmd("bob", "worker:00000000-0000-0000-0000-000000000000"), store.InvalidParams, false, "grant_role.role"},
		{"grant bad tenant", grantCmd("bob", "tenant:_x"), store.InvalidParams, false, "grant_role.role"},
		{"grant admin with arg", grantCmd("bob", "admin:x"), store.InvalidParams, false, "grant_role.role"},
		{"grant bad principal", grantCmd("", "reader"), store.InvalidParams, false, "grant_role.principal"},
		{"grant root admin", grantCmd(auth.RootPrincipal, "admin"), store.OK, false, ""},
		{"revoke root admin", revokeRoleCmd(auth.RootPrincipal, "admin"), store.InvalidParams, false, "cannot be revoked"},
		{"revoke missing role", revokeRoleCmd("bob", "admin"), store.RoleNotFound, false, "bob"},
		{"revoke role of nobody", revokeRoleCmd("carol", "admin"), store.RoleNotFound, false, "carol"},
		{"revoke reader", revokeRoleCmd("bob", "reader"), store.OK, true, ""},
	}
	for _, tc := range cases {
		rev := f.Auth().Revision()
		r := applyAuthCmd(t, f, &idx, tc.cmd)
		if r.Reason != tc.want || !strings.Contains(r.Message, tc.message) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.name, r.Reason, r.Message, tc.want, tc.message)
		}
		if got := f.Auth().Revision(); got != rev+map[bool]uint64{true: 1}[tc.bump] {
			t.Errorf("%s: revision %d -> %d, bump %v", tc.name, rev, got, tc.bump)
		}
	}
	a := f.Auth()
	if got := a.Roles("alice"); !slices.Equal(got, []auth.Role{{Kind: auth.RoleTenant, Arg: "t1"}, {Kind: auth.RoleWorker, Arg: workerID}}) {
		t.Errorf("alice's roles %v", got)
	}
	if got := a.Roles("bob"); got != nil {
		t.Errorf("bob's roles %v, want none (the principal goes with its last role)", got)
	}
	if got := a.Roles(auth.RootPrincipal); !slices.Equal(got, []auth.Role{{Kind: auth.RoleAdmin}}) {
		t.Errorf("root's roles %v", got)
	}
	if got := a.Principals(); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("principals %v", got)
	}
	var ids []string
	for _, k := range a.Keys() {
		ids = append(ids, k.ID)
	}
	if !slices.Equal(ids, []string{k1, "2123456789abcdef"}) {
		t.Errorf("keys %v", ids)
	}
	if k, ok := a.Key(k1); !ok || k.Principal != "alice" || k.CreatedMs != 1000 || k.Hash != sha256.Sum256(secretOf('a')) {
		t.Errorf("key %s: %+v %v", k1, k, ok)
	}
	// Roles returns a copy.
	a.Roles("alice")[0] = auth.Role{Kind: auth.RoleAdmin}
	if a.Roles("alice")[0].Kind != auth.RoleTenant {
		t.Error("Roles shares the state's slice")
	}
}

func putCmd(sessionID, seq uint64, key string) *metadv1.Command {
	c := &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: genClients[0], Key: []byte(key), Size: 100,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
	if sessionID != 0 {
		c.Session = &metadv1.SessionHeader{SessionId: sessionID, Seq: seq, FirstUnackedSeq: seq}
	}
	return c
}

// TestStaleAuthRevisionRefusedBeforeSession: a command authorized against an older revision is
// refused, changing nothing, and its session keeps no answer, so its retry with the same seq
// (authorized again, at the current revision) applies.
func TestStaleAuthRevisionRefusedBeforeSession(t *testing.T) {
	x := newSessionFixture(t, time.Hour, 8)
	f := x.f
	x.apply(0, grantCmd("alice", "tenant:default"), grantCmd("bob", "tenant:default"))
	x.id = x.openAs(0, "alice", time.Hour, 8)
	if f.Auth().Revision() != 2 {
		t.Fatalf("revision %d", f.Auth().Revision())
	}
	put := putCmd(x.id, 1, "k")
	put.Principal, put.AuthRevision = "alice", 1
	r := x.apply(time.Second, put)[0]
	if r.Reason != store.AuthRevisionStale {
		t.Fatalf("stale command: %s %s", r.Reason, r.Message)
	}
	if _, ok := f.Replay(put.GetSession(), "alice"); ok {
		t.Fatal("the session kept the stale refusal")
	}
	if f.Objects() != 0 {
		t.Fatal("the stale command changed the store")
	}
	put.AuthRevision = 2
	if r := x.apply(2*time.Second, put)[0]; r.Reason != store.OK {
		t.Fatalf("retry with the same seq: %s %s", r.Reason, r.Message)
	}
	if _, ok := f.Replay(put.GetSession(), "alice"); !ok {
		t.Fatal("the session keeps no answer for the retry that applied")
	}
	// Revision 0 (not authorized: the leader's own commands) and a revision ahead of the state
	// (authorized on a leader that applied more) both run.
	for _, rev := range []uint64{0, 3} {
		c := putCmd(0, 0, fmt.Sprintf("k%d", rev))
		c.AuthRevision = rev
		if r := x.apply(3*time.Second, c)[0]; r.Reason != store.OK {
			t.Fatalf("revision %d: %s %s", rev, r.Reason, r.Message)
		}
	}
	// An auth command earlier in the same entry makes a later one authorized before it stale.
	c := putCmd(0, 0, "late")
	c.AuthRevision = 2
	rs := x.apply(4*time.Second, revokeRoleCmd("bob", "tenant:default"), c)
	if rs[0].Reason != store.OK || rs[1].Reason != store.AuthRevisionStale {
		t.Fatalf("revoke then a command checked before it, in one entry: %s, %s", rs[0].Reason, rs[1].Reason)
	}
	// Auth commands are fenced too: a grant checked before the revoke is refused.
	g := grantCmd("carol", "reader")
	g.AuthRevision = 2
	if r := x.apply(5*time.Second, g)[0]; r.Reason != store.AuthRevisionStale || f.Auth().Revision() != 3 {
		t.Fatalf("stale grant: %s, revision %d", r.Reason, f.Auth().Revision())
	}
}

// TestBadAuthRecordsAreRefused: a snapshot whose auth records break the state's soundness is
// refused as corrupt, and the FSM keeps its state.
func TestBadAuthRecordsAreRefused(t *testing.T) {
	hash := bytes.Repeat([]byte{7}, 32)
	key := func(id, p string) *metadv1.Record {
		return &metadv1.Record{Record: &metadv1.Record_Key{Key: &metadv1.KeyRecord{Id: id, Principal: p, Sha256: hash, CreatedMs: 1}}}
	}
	roles := func(p string, rs ...string) *metadv1.Record {
		return &metadv1.Record{Record: &metadv1.Record_Role{Role: &metadv1.RoleRecord{Principal: p, Roles: rs}}}
	}
	file := func(recs ...*metadv1.Record) []byte {
		h := &metadv1.SnapshotHeader{FormatVersion: metadv1.SnapshotFormatVersion, Index: 5, Term: 1, NextTenantInstanceId: 2}
		for _, r := range recs {
			switch r.Record.(type) {
			case *metadv1.Record_Key:
				h.Keys++
			case *metadv1.Record_Role:
				h.RoleBindings++
			}
		}
		var buf bytes.Buffer
		w, err := snapshot.NewWriter(&buf, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.WriteRecord(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	good := file(key("00000000000000aa", "a"), key("00000000000000bb", "b"), roles("a", "reader", "tenant:t"), roles("b", "admin"))
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(good))); err != nil {
		t.Fatalf("a sound file: %v", err)
	}
	before := snapshotBytes(t, f)
	for name, data := range map[string][]byte{
		"bad key id":            file(key("00000000000000AA", "a")),
		"keys out of order":     file(key("00000000000000bb", "a"), key("00000000000000aa", "a")),
		"key twice":             file(key("00000000000000aa", "a"), key("00000000000000aa", "a")),
		"bad principal":         file(key("00000000000000aa", "-a")),
		"short hash":            file(&metadv1.Record{Record: &metadv1.Record_Key{Key: &metadv1.KeyRecord{Id: "00000000000000aa", Principal: "a", Sha256: hash[:31]}}}),
		"expiry before created": file(&metadv1.Record{Record: &metadv1.Record_Key{Key: &metadv1.KeyRecord{Id: "00000000000000aa", Principal: "a", Sha256: hash, CreatedMs: 5, ExpiresMs: 5}}}),
		"key after roles":       file(roles("a", "admin"), key("00000000000000aa", "a")),
		"unknown role":          file(roles("a", "owner")),
		"role not canonical":    file(roles("a", "worker:C1000000000000000000000000000001")),
		"roles out of order":    file(roles("a", "tenant:t", "reader")),
		"role twice":            file(roles("a", "reader", "reader")),
		"no role":               file(roles("a")),
		"principals unordered":  file(roles("b", "admin"), roles("a", "admin")),
	} {
		err := f.Restore(io.NopCloser(bytes.NewReader(data)))
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%s: %v, want corrupt", name, err)
		}
		if !bytes.Equal(snapshotBytes(t, f), before) {
			t.Fatalf("%s: a refused restore changed the FSM", name)
		}
	}
}
