package servicetest

import (
	"bytes"
	"io"
	"testing"

	"metad/fsm"
)

// SavedState is the backend's current state as a snapshot file of the given state epoch (what an
// online restore installs: the cluster's epoch + 1).
func (b *Backend) SavedState(t testing.TB, epoch uint64) []byte {
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

// Restore installs the snapshot file data, as an online restore does.
func (b *Backend) Restore(t testing.TB, data []byte) {
	t.Helper()
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

// RestoreBeforeNextApply makes a snapshot restore of data commit between the leader's check of the
// next proposal and that proposal's apply.
func (b *Backend) RestoreBeforeNextApply(t testing.TB, data []byte) {
	b.BeforeNextApply(func() {
		if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			t.Errorf("restore: %v", err)
		}
	})
}

// RestoreBeforeEachApply makes a snapshot restore of the current state (at the next state epoch)
// commit before each of the next n proposals applies: every one of them was checked against a
// state that is gone by its commit.
func (b *Backend) RestoreBeforeEachApply(t testing.TB, n int) {
	var fn func()
	fn = func() {
		if n--; n > 0 {
			defer b.BeforeNextApply(fn)
		}
		data := b.SavedState(t, b.f.Store().Epoch()+1)
		if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			t.Errorf("restore: %v", err)
		}
	}
	b.BeforeNextApply(fn)
}
