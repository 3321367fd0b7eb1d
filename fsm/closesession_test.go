package fsm

import (
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// putAs is a PutStart of key in session id (seq 1) as principal p's.
func (x *sessionFixture) putAs(at time.Duration, p string, id uint64, key string) store.Result {
	x.t.Helper()
	return x.apply(at, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: genClients[0], Key: []byte(key), Size: 100,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}, Session: &metadv1.SessionHeader{SessionId: id, Seq: 1, FirstUnackedSeq: 1}, Principal: p})[0]
}

func closeCmd(id uint64, p string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_CloseSession{CloseSession: &metadv1.CloseSession{SessionId: id}}, Principal: p}
}

// TestCloseSession: CloseSession ends a session of its principal, its kept answers gone (a
// command in it then answers SESSION_EXPIRED); a session of another principal, an unknown one and
// an expired one answer SESSION_EXPIRED, the other's session untouched.
func TestCloseSession(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	alice := x.openAs(0, "alice", time.Minute, 8)
	if r := x.putAs(time.Second, "alice", alice, "a"); r.Reason != store.OK {
		t.Fatalf("put in alice's session: %+v", r)
	}
	before, kept := x.f.Sessions()
	if r := x.apply(2*time.Second, closeCmd(alice, "bob"))[0]; r.Reason != store.SessionExpired {
		t.Fatalf("bob closing alice's session: %+v", r)
	}
	if _, ok := x.f.Replay(&metadv1.SessionHeader{SessionId: alice, Seq: 1}, "alice"); !ok {
		t.Fatal("a refused close dropped the session's kept answer")
	}
	if r := x.apply(2*time.Second, closeCmd(alice, "alice"))[0]; r.Reason != store.OK {
		t.Fatalf("alice closing her session: %+v", r)
	}
	if n, k := x.f.Sessions(); n != before-1 || k != kept-1 {
		t.Fatalf("after the close: %d sessions keeping %d answers, want %d and %d", n, k, before-1, kept-1)
	}
	if x.f.SessionOpen(alice, "alice") {
		t.Fatal("the closed session is still open")
	}
	if r := x.putAs(3*time.Second, "alice", alice, "a"); r.Reason != store.SessionExpired {
		t.Fatalf("a retry in the closed session: %+v, want SESSION_EXPIRED", r)
	}
	if r := x.apply(3*time.Second, closeCmd(alice, "alice"))[0]; r.Reason != store.SessionExpired {
		t.Fatalf("closing it again: %+v", r)
	}
	if r := x.apply(3*time.Second, closeCmd(999, ""))[0]; r.Reason != store.SessionExpired {
		t.Fatalf("closing an unknown session: %+v", r)
	}
	if r := x.apply(5*time.Minute, closeCmd(x.id, ""))[0]; r.Reason != store.SessionExpired {
		t.Fatalf("closing a session past its ttl: %+v", r)
	}
}
