package server

import (
	"bytes"
	"context"
	"io"
	"testing"

	"google.golang.org/grpc/codes"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// savedState is the backend's current state as a snapshot file of the given state epoch (what an
// online restore installs: the cluster's epoch + 1).
func savedState(t *testing.T, b *fakeBackend, epoch uint64) []byte {
	t.Helper()
	c := b.f.Store().CaptureInto(nil)
	c.Epoch = epoch
	var buf bytes.Buffer
	idx, term := b.f.Applied()
	if _, err := fsm.WriteCapture(&buf, c, nil, idx, term, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restoreBeforeNextApply makes a snapshot restore of data commit between the leader's check of the
// next proposal and that proposal's apply.
func (b *fakeBackend) restoreBeforeNextApply(t *testing.T, data []byte) {
	fn := func() {
		if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			t.Errorf("restore: %v", err)
		}
	}
	b.beforeApply.Store(&fn)
}

// restoreBeforeEachApply makes a snapshot restore of the current state (at the next state epoch)
// commit before each of the next n proposals applies: every one of them was checked against a
// state that is gone by its commit.
func (b *fakeBackend) restoreBeforeEachApply(t *testing.T, n int) {
	var fn func()
	fn = func() {
		if n--; n > 0 {
			defer b.beforeApply.Store(&fn)
		}
		data := savedState(t, b, b.f.Store().Epoch()+1)
		if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			t.Errorf("restore: %v", err)
		}
	}
	b.beforeApply.Store(&fn)
}

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
			_, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k")})
			return err
		}},
		{"BatchRemove", func(ctx context.Context, h *harness) error {
			r, err := h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("k")}})
			if err == nil && r.GetResults()[0].GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				t.Errorf("BatchRemove item: %v", r.GetResults()[0])
			}
			return err
		}},
		{"RemoveAll", func(ctx context.Context, h *harness) error {
			r, err := h.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
			if err == nil && (r.GetRemoved() != 1 || r.GetSkipped() != 0) {
				t.Errorf("RemoveAll: %v", r)
			}
			return err
		}},
		{"RemoveGroup", func(ctx context.Context, h *harness) error {
			r, err := h.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g")})
			if err == nil && r.GetRemoved() != 1 {
				t.Errorf("RemoveGroup: %v", r)
			}
			return err
		}},
	}
	for _, rm := range removals {
		t.Run(rm.name, func(t *testing.T) {
			h := start(t, newFakeBackend(t, nil), testConfig())
			ctx := tctx(t)
			h.mount(t, clientA, segA)
			put := func() {
				t.Helper()
				if _, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Group: []byte("g"), Size: 8}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
					t.Fatal(err)
				}
			}
			put()
			saved := savedState(t, h.b, h.b.f.Store().Epoch()+1) // k as object 1
			if _, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true}); err != nil {
				t.Fatal(err)
			}
			put() // k as object 2: the removal below is checked against this one

			h.b.restoreBeforeNextApply(t, saved)
			n := h.b.proposals.Load()
			if err := rm.remove(ctx, h); err != nil {
				t.Fatalf("%s across a restore: %v", rm.name, err)
			}
			if got := h.b.proposals.Load() - n; got != 2 {
				t.Fatalf("%d proposals, want 2 (refused as STATE_REPLACED, then prepared again)", got)
			}
			if e := h.b.f.Store().Epoch(); e != 1 {
				t.Fatalf("state epoch %d after the restore, want 1", e)
			}
			_, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
			wantErr(t, err, codes.NotFound, rNotFound)
			if err := h.b.f.Store().CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
