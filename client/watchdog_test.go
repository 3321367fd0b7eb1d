package client

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The watchdog tests run with AttemptTimeout 100 ms: a probe after 50 ms of quiet, and a node
// that health answers 150 ms late, as on a busy machine, is slower than half an attempt timeout.

// wantSnapshot is what the fake streams for n chunks.
func wantSnapshot(n int) []byte {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, "s%03d", i)
	}
	return b
}

// TestStreamOutlivesSlowHealth: a snapshot save that streams for several attempt timeouts from a
// node whose health answers later than half an attempt timeout completes: each chunk received is
// a sign of life, and a slow probe alone does not abandon a call that makes progress.
func TestStreamOutlivesSlowHealth(t *testing.T) {
	busy, other := startFake(t), startFake(t)
	busy.healthDelay.Store(int64(150 * time.Millisecond))
	busy.snapChunks.Store(16)
	busy.snapGap.Store(int64(25 * time.Millisecond)) // 375 ms in all
	c := newTestClient(t, Config{Endpoints: []string{busy.addr, other.addr}, AttemptTimeout: 100 * time.Millisecond})
	var buf bytes.Buffer
	n, err := c.SnapshotSave(testCtx(t), &buf, false)
	if err != nil {
		t.Fatalf("SnapshotSave: %v after %d bytes", err, n)
	}
	if want := wantSnapshot(16); !bytes.Equal(buf.Bytes(), want) || n != int64(len(want)) {
		t.Fatalf("SnapshotSave wrote %d bytes %q, want %q", n, buf.Bytes(), want)
	}
	if busy.calls.Load() != 1 || other.calls.Load() != 0 {
		t.Fatalf("calls busy=%d other=%d, want 1 and 0", busy.calls.Load(), other.calls.Load())
	}
}

// TestLongCallOutlivesSlowHealth: long calls that run for several attempt timeouts without
// progress (a snapshot's capture before its first chunk, a RemoveAll) on a node whose health
// answers late are waited for, not abandoned and retried elsewhere. A later ordinary call to
// that node waits as long as its measured answer time says.
func TestLongCallOutlivesSlowHealth(t *testing.T) {
	busy, other := startFake(t), startFake(t)
	busy.healthDelay.Store(int64(150 * time.Millisecond))
	busy.snapPrep.Store(int64(400 * time.Millisecond))
	busy.snapChunks.Store(2)
	busy.slow.Store(true) // Get and RemoveAll take 300 ms
	c := newTestClient(t, Config{Endpoints: []string{busy.addr, other.addr}, AttemptTimeout: 100 * time.Millisecond})
	ctx := testCtx(t)
	var buf bytes.Buffer
	if n, err := c.SnapshotSave(ctx, &buf, false); err != nil || !bytes.Equal(buf.Bytes(), wantSnapshot(2)) {
		t.Fatalf("SnapshotSave: %d bytes %q, %v", n, buf.Bytes(), err)
	}
	if resp, err := c.RemoveAll(ctx, "", false); err != nil || resp.GetRemoved() != 7 {
		t.Fatalf("RemoveAll: %v %v", resp, err)
	}
	if _, err := c.Get(ctx, "", "k"); err != nil {
		t.Fatalf("Get after the node's answer time was measured: %v", err)
	}
	if busy.calls.Load() != 3 || other.calls.Load() != 0 || c.Leader() != busy.addr {
		t.Fatalf("calls busy=%d other=%d leader %s, want 3, 0 and the busy node", busy.calls.Load(), other.calls.Load(), c.Leader())
	}
}

// TestLongCallLeavesSilentNode: a long call to a node that shows no sign of life at all (paused,
// cut off) is abandoned after suspectAttempts silence bounds of an ordinary call, and goes to the
// next node, where it completes.
func TestLongCallLeavesSilentNode(t *testing.T) {
	silent, live := startFake(t), startFake(t)
	silent.hang.Store(true)
	live.snapChunks.Store(3)
	const attempt = 50 * time.Millisecond
	c := newTestClient(t, Config{Endpoints: []string{silent.addr, live.addr}, AttemptTimeout: attempt})
	start := time.Now()
	var buf bytes.Buffer
	if _, err := c.SnapshotSave(testCtx(t), &buf, false); err != nil || !bytes.Equal(buf.Bytes(), wantSnapshot(3)) {
		t.Fatalf("SnapshotSave: %q %v", buf.Bytes(), err)
	}
	if took := time.Since(start); took < suspectAttempts*attempt || took > 5*time.Second {
		t.Fatalf("SnapshotSave took %s; want at least %s (the long bound) and well under the 10 s deadline", took, suspectAttempts*attempt)
	}
	if silent.calls.Load() != 1 || live.calls.Load() != 1 || c.Leader() != live.addr {
		t.Fatalf("calls silent=%d live=%d leader %s", silent.calls.Load(), live.calls.Load(), c.Leader())
	}
}

// TestStreamFrozenMidwayFails: a snapshot save whose node falls silent after some chunks is
// abandoned after the long bound and fails UNAVAILABLE: it is not retried elsewhere, where a
// fresh stream would start over under the bytes already written. Later calls go elsewhere.
func TestStreamFrozenMidwayFails(t *testing.T) {
	frozen, other := startFake(t), startFake(t)
	frozen.snapChunks.Store(8)
	frozen.snapFreezeAfter.Store(3)
	frozen.healthDelay.Store(int64(time.Hour)) // health never answers either: a paused node
	other.snapChunks.Store(8)
	const attempt = 50 * time.Millisecond
	c := newTestClient(t, Config{Endpoints: []string{frozen.addr, other.addr}, AttemptTimeout: attempt})
	start := time.Now()
	var buf bytes.Buffer
	n, err := c.SnapshotSave(testCtx(t), &buf, false)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("SnapshotSave: %d bytes, %v; want Unavailable: stopped answering", n, err)
	}
	if took := time.Since(start); took < suspectAttempts*attempt || took > 5*time.Second {
		t.Fatalf("SnapshotSave failed after %s; want at least %s (the long bound)", took, suspectAttempts*attempt)
	}
	if want := wantSnapshot(3); n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) || other.calls.Load() != 0 {
		t.Fatalf("wrote %d bytes %q and called the other node %d times; want %q and 0", n, buf.Bytes(), other.calls.Load(), want)
	}
	if c.Leader() != other.addr {
		t.Fatalf("calls go to %s after the node fell silent, want %s", c.Leader(), other.addr)
	}
}

// TestOrdinaryCallLeavesSilentNodeInOneAttemptTimeout: with nothing measured yet, an ordinary
// call to a silent node is abandoned after one attempt timeout and the error says what was
// waited for.
func TestOrdinaryCallLeavesSilentNodeInOneAttemptTimeout(t *testing.T) {
	silent := startFake(t)
	silent.hang.Store(true)
	const attempt = 100 * time.Millisecond
	c := newTestClient(t, Config{Endpoints: []string{silent.addr}, AttemptTimeout: attempt, MaxRetries: -1})
	start := time.Now()
	_, err := c.Get(testCtx(t), "", "k")
	took := time.Since(start)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no sign of life for 100ms") {
		t.Fatalf("Get: %v, want Unavailable: no sign of life for 100ms", err)
	}
	if took < attempt || took > 3*time.Second {
		t.Fatalf("Get abandoned after %s, want about %s", took, attempt)
	}
}

// TestAnswerTime: the estimate follows RFC 6298 (first sample R: R + 4 x R/2; then the smoothed
// mean and deviation), and a run of quick answers brings it back down.
func TestAnswerTime(t *testing.T) {
	var a answerTime
	if a.timeout() != 0 {
		t.Fatalf("timeout before any sample: %s", a.timeout())
	}
	a.sample(100 * time.Millisecond)
	if got := a.timeout(); got != 300*time.Millisecond {
		t.Fatalf("after one sample of 100ms: %s, want 300ms", got)
	}
	a.sample(200 * time.Millisecond) // rttvar = (3*50 + 100)/4 = 62.5, srtt = (7*100 + 200)/8 = 112.5
	if got := a.timeout(); got != 362500*time.Microsecond {
		t.Fatalf("after 100ms and 200ms: %s, want 362.5ms", got)
	}
	for range 100 {
		a.sample(time.Millisecond)
	}
	if got := a.timeout(); got > 2*time.Millisecond {
		t.Fatalf("after 100 samples of 1ms: %s", got)
	}
}
