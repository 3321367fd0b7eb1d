package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
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
	a := sizedState(t, 100)
	ra, _ := snapshot.NewReader(bytes.NewReader(a))
	b := reheader(t, sizedState(t, 200), ra.Header())
	ra, _ = snapshot.NewReader(bytes.NewReader(a))
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

// reheader copies the records of file under header h (a valid file: framing, chunks and checksums
// hold; only the header's claims about the records may be false).
func reheader(t *testing.T, file []byte, h *metadv1.SnapshotHeader) []byte {
	t.Helper()
	r, err := snapshot.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := snapshot.NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, rec, err := r.NextRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRaw(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRestoreChecksTheStoreDigest: a whole, well-formed file whose records hold another state than
// its header's store digest names (here one object's size) is refused, by the digest alone, with
// the state unchanged; the same file without a digest (as a binary before feature level 5 wrote
// it) restores.
func TestRestoreChecksTheStoreDigest(t *testing.T) {
	a := sizedState(t, 100)
	ra, err := snapshot.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	h := ra.Header()
	if len(h.GetStoreDigest()) != 16 {
		t.Fatalf("the header's store digest: %x", h.GetStoreDigest())
	}
	other := reheader(t, sizedState(t, 200), h)

	f := newFSM(t)
	before := f.state.Load()
	err = f.Restore(io.NopCloser(bytes.NewReader(other)))
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "store digest") || f.state.Load() != before {
		t.Fatalf("Restore of records another state than the digest's: %v (state changed: %v)", err, f.state.Load() != before)
	}
	if _, err := f.VerifySnapshot(bytes.NewReader(other)); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("VerifySnapshot of the same file: %v", err)
	}

	h = proto.Clone(h).(*metadv1.SnapshotHeader)
	h.StoreDigest = nil
	if err := f.Restore(io.NopCloser(bytes.NewReader(reheader(t, sizedState(t, 200), h)))); err != nil {
		t.Fatalf("Restore of the same records with no digest: %v", err)
	}
	if e, err := f.Store().Peek("", "k"); err != nil || e.Size != 200 {
		t.Fatalf("the restored object: %+v, %v", e, err)
	}
}
