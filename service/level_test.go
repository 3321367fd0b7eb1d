package service_test

import (
	"errors"
	"fmt"
	"testing"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
)

// TestArenasWaitForTheClusterLevel: while a member of the configuration records a feature level
// below the arenas' (a binary that does not know them, mid rolling upgrade), every PutStart goes
// through the log and no arena command is proposed; once every member records the level, the
// leader answers PutStarts from its arenas with no flag set. A command above the cluster's level is
// refused with ha.ErrFeatureLevel, nothing proposed.
func TestArenasWaitForTheClusterLevel(t *testing.T) {
	h := arenaHarness(t)
	h.b.OlderMember.Store(1)
	h.mount(t, clientA, segA)
	ctx := tctx(t)
	for i := range 20 {
		key := []byte(fmt.Sprintf("old-%d", i))
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64})
		if err != nil {
			t.Fatalf("PutStart %q: %v", key, err)
		}
		if reserved(resp.GetReplicas()) {
			t.Fatalf("PutStart %q answered from an arena while a member is at level 1", key)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: key}); err != nil {
			t.Fatalf("PutEnd %q: %v", key, err)
		}
		if c := h.b.LastProposed(); c.GetArenaGrant() != nil || c.GetPutCommit() != nil {
			t.Fatalf("an arena command was proposed at level 1: %v", c)
		}
	}
	if n := len(h.b.FSM().Store().Arenas().List()); n != 0 {
		t.Fatalf("%d arenas granted while a member is at level 1", n)
	}
	_, err := h.b.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_ArenaRetire{ArenaRetire: &metadv1.ArenaRetire{}}})
	var fe *ha.FeatureLevelError
	if !errors.Is(err, ha.ErrFeatureLevel) || !errors.As(err, &fe) || fe.Need != 2 || fe.Have != 1 {
		t.Fatalf("ArenaRetire at cluster level 1: %v, want ErrFeatureLevel", err)
	}
	h.b.OlderMember.Store(0) // the last member upgraded
	h.awaitArenas(t, segA)
}
