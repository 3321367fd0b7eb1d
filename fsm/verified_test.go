package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// sizedState is a state of one segment and one object of the given size, applied at the same
// index and time whatever the size: two of them have equal snapshot headers.
func sizedState(t *testing.T, size uint64) []byte {
	t.Helper()
	c1, seg := uuid(0xc1, 1), uuid(0x5e, 1)
	f := newFSM(t)
	applyCmds(t, f, 1, 1e9, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: seg, Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: c1}}}})
	applyCmds(t, f, 2, 2e9,
		&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte("k"), Size: size,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
		&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: c1, Key: []byte("k")}}})
	return snapshotBytes(t, f)
}

// TestRestoreInstallsTheVerifiedState: a Restore of the file VerifySnapshot read installs the
// state built then (not another built again), and takes it; a Restore of another file builds its
// own; a file with the verified one's header but other records is refused with the state
// unchanged; ForgetVerified drops a kept state.
func TestRestoreInstallsTheVerifiedState(t *testing.T) {
	a, b := sizedState(t, 100), sizedState(t, 200)
	ra, _ := snapshot.NewReader(bytes.NewReader(a))
	rb, _ := snapshot.NewReader(bytes.NewReader(b))
	if ra == nil || rb == nil || !bytes.Equal(mustMarshal(t, ra.Header()), mustMarshal(t, rb.Header())) {
		t.Fatal("the test wants two files with one header")
	}

	f := newFSM(t)
	if _, err := f.VerifySnapshot(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	v := f.verified.Load()
	if v == nil {
		t.Fatal("VerifySnapshot kept no state")
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(a))); err != nil {
		t.Fatal(err)
	}
	if f.state.Load() != v.state || f.verified.Load() != nil {
		t.Fatal("Restore of the verified file did not install the verified state, or kept it")
	}

	// Verified a, given b (same header): refused, nothing changed.
	g := newFSM(t)
	before := g.state.Load()
	if _, err := g.VerifySnapshot(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); !errors.Is(err, snapshot.ErrCorrupt) || g.state.Load() != before {
		t.Fatalf("Restore of another file with the verified one's header: %v (state changed: %v)", err, g.state.Load() != before)
	}

	// Verified a, given another state altogether: built from the file.
	h := newFSM(t)
	if _, err := h.VerifySnapshot(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	other := snapshotBytes(t, goldenV8Source(t))
	if err := h.Restore(io.NopCloser(bytes.NewReader(other))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, h), other) || h.verified.Load() != nil {
		t.Fatal("Restore of another file did not build its state, or kept the verified one")
	}

	if _, err := h.VerifySnapshot(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	h.ForgetVerified()
	if h.verified.Load() != nil {
		t.Fatal("ForgetVerified kept the state")
	}
}

func mustMarshal(t *testing.T, h *metadv1.SnapshotHeader) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
