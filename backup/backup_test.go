package backup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/ha"
	"metad/snapshot"
)

// golden is a checked-in snapshot of the newest record format.
const golden = "../fsm/testdata/golden-v6.snap"

func goldenBytes(t *testing.T) ([]byte, *snapshot.Info) {
	t.Helper()
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return b, info
}

// fakeSource is safe for concurrent use. It is a member whose leadership the test sets, and whose
// snapshots are data (or what open returns).
type fakeSource struct {
	leader      atomic.Bool
	leaderCalls atomic.Int64
	opens       atomic.Int64
	data        []byte
	index, term uint64
	size        int64                                             // the size the snapshot reports (0: len(data))
	open        func(context.Context) (*ha.SnapshotStream, error) // when set, in place of data
	wrap        func(io.Reader) io.Reader                         // when set, wraps each stream
}

func (s *fakeSource) IsLeader() bool {
	s.leaderCalls.Add(1)
	return s.leader.Load()
}

func (s *fakeSource) OpenSnapshot(ctx context.Context, allowStale bool) (*ha.SnapshotStream, error) {
	s.opens.Add(1)
	if allowStale {
		return nil, errors.New("the loop must not ask for a stale snapshot")
	}
	if s.open != nil {
		return s.open(ctx)
	}
	if !s.leader.Load() {
		return nil, &ha.NotLeaderError{}
	}
	var r io.Reader = bytes.NewReader(s.data)
	if s.wrap != nil {
		r = s.wrap(r)
	}
	size := s.size
	if size == 0 {
		size = int64(len(s.data))
	}
	return &ha.SnapshotStream{ReadCloser: io.NopCloser(r), Index: s.index, Term: s.term, Size: size}, nil
}

// clock is safe for concurrent use: a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	src *fakeSource
	clk *clock
	reg *prometheus.Registry
	l   *Loop
	dir string
}

func newFixture(t *testing.T, retain int) *fixture {
	t.Helper()
	data, info := goldenBytes(t)
	// Raft's snapshot index runs past the file's own (barriers never reach the state machine).
	fx := &fixture{src: &fakeSource{data: data, index: info.Index + 5, term: info.Term},
		clk: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, reg: prometheus.NewRegistry(), dir: filepath.Join(t.TempDir(), "backups")}
	fx.src.leader.Store(true)
	l, err := New(Config{Dir: fx.dir, Interval: time.Second, Retain: retain, Now: fx.clk.now}, fx.src, fx.reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	fx.l = l
	return fx
}

// metric returns the value of the sample of name whose labels include labels (name=value pairs).
func (fx *fixture) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := fx.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no sample of %s %v", name, labels)
	return 0
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Interval: time.Hour, Retain: 1}, "backup-dir: must be set"},
		{Config{Dir: "d", Interval: 0, Retain: 1}, "backup-interval: at least 1s, got 0s"},
		{Config{Dir: "d", Interval: time.Hour, Retain: 0}, "backup-retain: want 1 to 10000, got 0"},
		{Config{Dir: "d", Interval: time.Hour, Retain: 10001}, "backup-retain: want 1 to 10000"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	c := DefaultConfig()
	c.Dir = "d"
	if err := c.Validate(); err != nil || c.Interval != time.Hour || c.Retain != 24 {
		t.Fatalf("defaults %+v: %v", c, err)
	}
}

// TestBackupWritesAVerifiedFile: a backup is the snapshot's bytes under its name, verified, with
// no temp file left, and the metrics describe it.
func TestBackupWritesAVerifiedFile(t *testing.T) {
	fx := newFixture(t, 3)
	res, err := fx.l.Backup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, info := goldenBytes(t)
	want := Name(info.Index, info.Term, fx.clk.now()) // the file's own index, as inspect shows it
	if res.File.Name != want || res.File.Size != int64(len(fx.src.data)) || res.Objects == 0 {
		t.Fatalf("result %+v, want %s of %d bytes", res, want, len(fx.src.data))
	}
	got, err := os.ReadFile(filepath.Join(fx.dir, want))
	if err != nil || !bytes.Equal(got, fx.src.data) {
		t.Fatalf("the backup's bytes differ from the snapshot's (%v)", err)
	}
	if n := names(t, fx.dir); len(n) != 1 {
		t.Fatalf("the directory holds %v", n)
	}
	if v := fx.metric(t, "metad_backup_last_success_timestamp_seconds"); v != float64(fx.clk.now().Unix()) {
		t.Errorf("last success %v, want %d", v, fx.clk.now().Unix())
	}
	if v := fx.metric(t, "metad_backup_last_size_bytes"); v != float64(len(fx.src.data)) {
		t.Errorf("last size %v", v)
	}
	if v := fx.metric(t, "metad_backup_last_index"); v != float64(info.Index) {
		t.Errorf("last index %v", v)
	}
	if v := fx.metric(t, "metad_backup_files"); v != 1 {
		t.Errorf("files %v", v)
	}
	if v := fx.metric(t, "metad_backup_duration_seconds"); v != 1 {
		t.Errorf("duration samples %v", v)
	}
}

// TestBackupRetention: each backup deletes the oldest beyond the count; other files stay.
func TestBackupRetention(t *testing.T) {
	fx := newFixture(t, 2)
	writeFiles(t, filepath.Dir(fx.dir), "backups/")
	writeFiles(t, fx.dir, "metad-20260101T000000Z.snap", "README")
	var written []string
	for i := range 4 {
		res, err := fx.l.Backup(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, res.File.Name)
		if i >= 2 && (len(res.Deleted) != 1 || res.Deleted[0].Name != written[i-2]) {
			t.Fatalf("backup %d deleted %v, want %s", i, res.Deleted, written[i-2])
		}
		fx.clk.advance(time.Minute)
	}
	files, err := List(fx.dir)
	if err != nil || len(files) != 2 || files[0].Name != written[3] || files[1].Name != written[2] {
		t.Fatalf("kept %v (%v), want the newest two of %v", files, err, written)
	}
	if n := names(t, fx.dir); len(n) != 4 {
		t.Fatalf("the directory holds %v, want two backups and the two other files", n)
	}
	if v := fx.metric(t, "metad_backup_files"); v != 2 {
		t.Errorf("files %v", v)
	}
}

// failingReader returns err once n bytes have been read.
type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	m, err := f.r.Read(p)
	f.n -= m
	return m, err
}

// TestBackupFailuresLeaveNoFile: whatever step fails, no file is left (a backup that existed stays),
// the failure is counted by its reason, and a file that does not verify is refused as such.
func TestBackupFailuresLeaveNoFile(t *testing.T) {
	data, _ := goldenBytes(t)
	corrupt := bytes.Clone(data)
	corrupt[len(corrupt)/2] ^= 0x5a
	for _, tc := range []struct {
		name   string
		setup  func(fx *fixture)
		reason string
		is     error
	}{
		{"the stream breaks", func(fx *fixture) {
			fx.src.wrap = func(r io.Reader) io.Reader { return &failingReader{r: r, n: len(data) / 2, err: io.ErrClosedPipe} }
		}, reasonSnapshot, io.ErrClosedPipe},
		{"corrupt bytes", func(fx *fixture) { fx.src.data = corrupt }, reasonVerify, ha.ErrInvalidSnapshot},
		{"a short stream", func(fx *fixture) { fx.src.data, fx.src.size = data[:len(data)-100], int64(len(data)) }, reasonVerify, ha.ErrInvalidSnapshot},
		{"a truncated snapshot", func(fx *fixture) { fx.src.data = data[:len(data)-100] }, reasonVerify, snapshot.ErrTruncated},
		{"not a snapshot", func(fx *fixture) { fx.src.data = []byte("#!/bin/sh\necho this is not a snapshot\n") }, reasonVerify, snapshot.ErrBadMagic},
		{"leadership lost mid-stream", func(fx *fixture) {
			fx.src.wrap = func(r io.Reader) io.Reader { return &demoteAfter{r: r, n: len(data) / 3, src: fx.src} }
		}, reasonLeadership, ErrLostLeadership},
		{"not the leader at the barrier", func(fx *fixture) {
			fx.src.open = func(context.Context) (*ha.SnapshotStream, error) { return nil, &ha.NotLeaderError{LeaderName: "n2"} }
		}, reasonLeadership, ha.ErrNotLeader},
		{"the snapshot fails", func(fx *fixture) {
			fx.src.open = func(context.Context) (*ha.SnapshotStream, error) { return nil, ha.ErrTimeout }
		}, reasonSnapshot, ha.ErrTimeout},
		{"the directory cannot be made", func(fx *fixture) {
			writeFiles(t, filepath.Dir(fx.dir), "backups") // a file where the directory should be
		}, reasonWrite, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, 3)
			tc.setup(fx)
			_, err := fx.l.Backup(context.Background())
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Backup: %v, want an error wrapping %v", err, tc.is)
			}
			if tc.reason == reasonVerify && !errors.Is(err, ha.ErrInvalidSnapshot) {
				t.Errorf("a file that does not verify: %v, want ha.ErrInvalidSnapshot", err)
			}
			if st, err := os.Stat(fx.dir); err == nil && st.IsDir() {
				if n := names(t, fx.dir); len(n) != 0 {
					t.Fatalf("left %v", n)
				}
			}
			for _, r := range failureReasons {
				want := 0.0
				if r == tc.reason {
					want = 1
				}
				if v := fx.metric(t, "metad_backup_failures_total", "reason", r); v != want {
					t.Errorf("failures{reason=%s} = %v, want %v", r, v, want)
				}
			}
			if v := fx.metric(t, "metad_backup_last_success_timestamp_seconds"); v != 0 {
				t.Errorf("last success %v after a failure", v)
			}
		})
	}
}

// demoteAfter makes its source a follower once n bytes have been read.
type demoteAfter struct {
	r   io.Reader
	n   int
	src *fakeSource
}

func (d *demoteAfter) Read(p []byte) (int, error) {
	m, err := d.r.Read(p[:min(len(p), 4096)])
	if d.n -= m; d.n <= 0 {
		d.src.leader.Store(false)
	}
	return m, err
}

// TestBackupAbandonedWhenStopping: a backup whose context ends stops, leaves nothing and is not
// counted as a failure (the process is stopping).
func TestBackupAbandonedWhenStopping(t *testing.T) {
	fx := newFixture(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	fx.src.wrap = func(r io.Reader) io.Reader { return &cancelAfter{r: r, cancel: cancel} }
	if _, err := fx.l.Backup(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup: %v", err)
	}
	if n := names(t, fx.dir); len(n) != 0 {
		t.Fatalf("left %v", n)
	}
	for _, r := range failureReasons {
		if v := fx.metric(t, "metad_backup_failures_total", "reason", r); v != 0 {
			t.Errorf("failures{reason=%s} = %v", r, v)
		}
	}
}

type cancelAfter struct {
	r      io.Reader
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	m, err := c.r.Read(p[:min(len(p), 4096)])
	c.cancel()
	return m, err
}

// TestNeverTwoBackupsAtOnce: a backup started while one runs is refused and touches nothing.
func TestNeverTwoBackupsAtOnce(t *testing.T) {
	fx := newFixture(t, 3)
	opened, release := make(chan struct{}), make(chan struct{})
	data := fx.src.data
	fx.src.open = func(context.Context) (*ha.SnapshotStream, error) {
		close(opened)
		<-release
		return &ha.SnapshotStream{ReadCloser: io.NopCloser(bytes.NewReader(data)), Index: 9, Term: 2, Size: int64(len(data))}, nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := fx.l.Backup(context.Background())
		done <- err
	}()
	<-opened
	if _, err := fx.l.Backup(context.Background()); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second backup: %v, want ErrBusy", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := fx.src.opens.Load(); n != 1 {
		t.Fatalf("%d snapshots taken, want 1", n)
	}
}

// waitFor polls cond every few milliseconds until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ticks waits until the loop has looked at its leadership n more times.
func ticks(t *testing.T, src *fakeSource, n int64) {
	t.Helper()
	from := src.leaderCalls.Load()
	waitFor(t, "the loop's ticks", func() bool { return src.leaderCalls.Load() >= from+n })
}

// TestRunOnlyWhileLeading: the loop writes nothing on a follower however much time passes; a
// member that gains leadership writes at once when the newest backup in the directory is an
// interval old (removing a temp file a former leader left), and not before.
func TestRunOnlyWhileLeading(t *testing.T) {
	fx := newFixture(t, 5)
	fx.src.leader.Store(false)
	writeFiles(t, filepath.Dir(fx.dir), "backups/")
	stale := "metad-3-1-20260301T110000.000Z.snap.tmp"
	writeFiles(t, fx.dir, stale)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fx.l.Run(ctx) }()
	defer func() { cancel(); <-done }()

	ticks(t, fx.src, 3)
	fx.clk.advance(24 * time.Hour)
	ticks(t, fx.src, 3)
	if n := fx.src.opens.Load(); n != 0 {
		t.Fatalf("a follower took %d snapshots", n)
	}
	if n := names(t, fx.dir); len(n) != 1 {
		t.Fatalf("a follower changed the directory: %v", n)
	}

	fx.src.leader.Store(true)
	waitFor(t, "the first backup", func() bool { files, _ := List(fx.dir); return len(files) == 1 })
	first := fx.clk.now()
	if _, err := os.Stat(filepath.Join(fx.dir, stale)); !os.IsNotExist(err) {
		t.Fatalf("the stale temp file is still there: %v", err)
	}

	// Not due yet: half an interval later, nothing more.
	fx.clk.advance(500 * time.Millisecond)
	ticks(t, fx.src, 3)
	if files, _ := List(fx.dir); len(files) != 1 {
		t.Fatalf("a backup before its interval: %v", files)
	}
	// Due: the next one.
	fx.clk.advance(500 * time.Millisecond)
	waitFor(t, "the second backup", func() bool { files, _ := List(fx.dir); return len(files) == 2 })

	// Leadership lost, then gained again within an interval of the newest: nothing until due.
	fx.src.leader.Store(false)
	ticks(t, fx.src, 3)
	fx.src.leader.Store(true)
	fx.clk.advance(200 * time.Millisecond)
	ticks(t, fx.src, 3)
	if files, _ := List(fx.dir); len(files) != 2 || !files[1].Time.Equal(first) {
		t.Fatalf("after regaining leadership within an interval: %v", files)
	}
}

// TestRunSeedsTheMetricsFromTheDirectory: at start the gauges describe the newest backup found.
func TestRunSeedsTheMetricsFromTheDirectory(t *testing.T) {
	fx := newFixture(t, 5)
	fx.src.leader.Store(false)
	writeFiles(t, filepath.Dir(fx.dir), "backups/")
	writeFiles(t, fx.dir, "metad-7-2-20260301T100000.000Z.snap", "metad-9-2-20260301T110000.000Z.snap")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fx.l.Run(ctx) }()
	ticks(t, fx.src, 1)
	cancel()
	<-done
	want := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	if v := fx.metric(t, "metad_backup_last_success_timestamp_seconds"); v != float64(want.Unix()) {
		t.Errorf("last success %v, want %d", v, want.Unix())
	}
	if v := fx.metric(t, "metad_backup_last_index"); v != 9 {
		t.Errorf("last index %v", v)
	}
	if v := fx.metric(t, "metad_backup_files"); v != 2 {
		t.Errorf("files %v", v)
	}
}

// TestVerifyReadsTheWholeFile: verify refuses a file whose bytes were changed anywhere.
func TestVerifyReadsTheWholeFile(t *testing.T) {
	data, info := goldenBytes(t)
	path := filepath.Join(t.TempDir(), "b.snap")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, reason, err := verify(path)
	if err != nil || reason != "" || got.Objects != info.Objects {
		t.Fatalf("verify a good file: %+v %q %v", got, reason, err)
	}
	for _, at := range []int{20, len(data) / 2, len(data) - 2} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x01
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, reason, err := verify(path); reason != reasonVerify || !errors.Is(err, ha.ErrInvalidSnapshot) {
			t.Errorf("byte %d changed: %q %v", at, reason, err)
		}
	}
	if _, reason, err := verify(filepath.Join(t.TempDir(), "missing")); reason != reasonWrite || err == nil {
		t.Errorf("a missing file: %q %v", reason, err)
	}
}
