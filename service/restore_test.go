package service_test

import (
	"context"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// A removal checked against a state that a snapshot restore replaces before its command commits
// must act on the restored state: the key is there again (as another object id), so the removal
// removes it and succeeds. Checked against the replaced state alone, it would answer
// OBJECT_NOT_FOUND for a key the cluster holds.
func TestRemovalAcrossASnapshotRestore(t *testing.T) {
	removals := []struct {
		name   string
		remove func(ctx context.Context, h *harness) error
	}{
		{"Remove", func(ctx context.Context, h *harness) error {
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k")})
			return err
		}},
		{"BatchRemove", func(ctx context.Context, h *harness) error {
			r, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("k")}})
			if err == nil && r.GetResults()[0].GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				t.Errorf("BatchRemove item: %v", r.GetResults()[0])
			}
			return err
		}},
		{"RemoveAll", func(ctx context.Context, h *harness) error {
			r, err := h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
			if err == nil && (r.GetRemoved() != 1 || r.GetSkipped() != 0) {
				t.Errorf("RemoveAll: %v", r)
			}
			return err
		}},
		{"RemoveGroup", func(ctx context.Context, h *harness) error {
			r, err := h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g")})
			if err == nil && r.GetRemoved() != 1 {
				t.Errorf("RemoveGroup: %v", r)
			}
			return err
		}},
	}
	for _, rm := range removals {
		t.Run(rm.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := tctx(t)
			h.mount(t, clientA, segA)
			put := func() {
				t.Helper()
				if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Group: []byte("g"), Size: 8}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
					t.Fatal(err)
				}
			}
			put()
			saved := h.b.SavedState(t, h.b.FSM().Store().Epoch()+1) // k as object 1
			if _, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true}); err != nil {
				t.Fatal(err)
			}
			put() // k as object 2: the removal below is checked against this one

			h.b.RestoreBeforeNextApply(t, saved)
			n := h.b.Proposals.Load()
			if err := rm.remove(ctx, h); err != nil {
				t.Fatalf("%s across a restore: %v", rm.name, err)
			}
			if got := h.b.Proposals.Load() - n; got != 2 {
				t.Fatalf("%d proposals, want 2 (refused as STATE_REPLACED, then prepared again)", got)
			}
			if e := h.b.FSM().Store().Epoch(); e != 1 {
				t.Fatalf("state epoch %d after the restore, want 1", e)
			}
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
			wantReason(t, err, store.ObjectNotFound)
			if err := h.b.FSM().Store().CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
