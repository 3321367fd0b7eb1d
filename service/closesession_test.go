package service_test

import (
	"errors"
	"testing"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestCloseSession: a client's CloseSession ends its session through the log; a session that is
// not open to the caller (closed already, or never opened) answers SESSION_EXPIRED with no log
// entry; a session id of 0 is invalid; while a member of an older binary is in the configuration
// the command is refused (ha.ErrFeatureLevel) and the session stays.
func TestCloseSession(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	r, err := h.svc.OpenSession(ctx, &metadv1.OpenSessionRequest{ClientId: idb(clientA)})
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetSessionId()
	h.b.OlderMember.Store(2)
	if _, err := h.svc.CloseSession(ctx, &metadv1.CloseSessionRequest{SessionId: id}); !errors.Is(err, ha.ErrFeatureLevel) {
		t.Fatalf("CloseSession with a member at level 2: %v, want ErrFeatureLevel", err)
	}
	if !h.b.FSM().SessionOpen(id, "") {
		t.Fatal("a refused CloseSession closed the session")
	}
	h.b.OlderMember.Store(0)
	before := h.b.Proposals.Load()
	if _, err := h.svc.CloseSession(ctx, &metadv1.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	if h.b.Proposals.Load() != before+1 || h.b.FSM().SessionOpen(id, "") {
		t.Fatal("CloseSession did not close the session through one log entry")
	}
	for _, sid := range []uint64{id, 12345} {
		before = h.b.Proposals.Load()
		_, err := h.svc.CloseSession(ctx, &metadv1.CloseSessionRequest{SessionId: sid})
		wantReason(t, err, store.SessionExpired)
		if h.b.Proposals.Load() != before {
			t.Fatalf("closing session %d, not open, took a log entry", sid)
		}
	}
	_, err = h.svc.CloseSession(ctx, &metadv1.CloseSessionRequest{})
	wantInvalid(t, err, "session_id")
}
