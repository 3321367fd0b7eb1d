package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/client"
	"metad/proto/metadv1"
	"metad/snapshot"
)

// BenchmarkScale: the figures of a cluster holding many objects (make bench-scale N=...; SCALE_N,
// default 1,000,000). Three metad processes on loopback with default flags and timeouts; one
// client mounts a memory segment and loads N objects of 64 bytes with 40-byte keys, 8 goroutines
// putting batches of 256 (BatchPut: BatchPutStart and BatchPutEnd). Then, each against its
// baseline from the same run:
//
//   - the load rate over the first and the last tenth of the objects (flat: their ratio near 1);
//   - leader changes during the load (the term's growth);
//   - each member's RSS and the leader's live heap (after its last collection) per object, over
//     the same member's figure before the load, and the leader's heap objects per object;
//   - a snapshot save through the leader, an inspect of the file, an online restore of it (until
//     every member holds the N objects again), in seconds per million objects;
//   - a follower's restart (SIGTERM, start, until it answers with the N objects and has applied
//     the leader's commit index, asked through new connections), in seconds per million, and
//     whether the leader changed meanwhile.
//
// The figures print as a table with the targets. Nothing here is a pass/fail test: a MISS
// is a measured figure.
func BenchmarkScale(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("SCALE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10_000 {
			b.Fatalf("SCALE_N=%q: want an object count of at least 10000", v)
		}
	}
	const batch, loaders, size = 256, 8, 64
	for b.Loop() {
	}
	c := NewClusterDefaults(b, 3)
	admin := c.Client()
	leader := c.Leader(admin, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	worker, err := client.New(client.Config{Endpoints: c.Endpoints(), ClientID: client.NewUUID()})
	if err != nil {
		b.Fatal(err)
	}
	defer worker.Close()
	pingLoop(b, worker)
	if err := worker.MountSegment(ctx, &metadv1.SegmentDesc{Id: client.NewUUID().Bytes(), Name: "scale", Base: 1 << 40,
		Size: uint64(n) * size * 2, Endpoint: "127.0.0.1:1", Tier: metadv1.Tier_TIER_MEMORY}); err != nil {
		b.Fatal(err)
	}
	empty := make([]memberMem, len(c.Nodes))
	for i, p := range c.Nodes {
		empty[i] = readMem(b, c, p)
	}
	term0 := statusOf(b, admin, leader).GetTerm()

	// The load: batches handed out in order; each tenth's rate from the time its last batch ends.
	var next atomic.Int64
	tenths := make([]time.Duration, 10)
	var doneObjects atomic.Int64
	var mu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, loaders)
	for range loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]client.BatchPutItem, 0, batch)
			for {
				first := int(next.Add(batch)) - batch
				if first >= n {
					return
				}
				items = items[:0]
				for i := first; i < min(first+batch, n); i++ {
					items = append(items, client.BatchPutItem{Key: fmt.Sprintf("scale-%034d", i), Size: size})
				}
				sts, err := worker.BatchPut(ctx, "", items, nil)
				if err == nil {
					for _, st := range sts {
						if st.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
							err = fmt.Errorf("put: %v", st)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
				done := doneObjects.Add(int64(len(items)))
				mu.Lock()
				for t := range tenths {
					if tenths[t] == 0 && done >= int64(n)*int64(t+1)/10 {
						tenths[t] = time.Since(start)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	leader = c.Leader(admin, 30*time.Second)
	for _, p := range c.Nodes {
		waitCaughtUp(b, c, admin, p, leader)
	}
	loadTerms := statusOf(b, admin, leader).GetTerm() - term0
	tenth := float64(n) / 10
	firstRate, lastRate := tenth/tenths[0].Seconds(), tenth/(tenths[9]-tenths[8]).Seconds()

	loaded := make([]memberMem, len(c.Nodes))
	for i, p := range c.Nodes {
		loaded[i] = readMem(b, c, p)
	}
	li := leader.index(c)

	// Snapshot save, inspect, online restore.
	path := filepath.Join(b.TempDir(), "scale.snap")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	t := time.Now()
	if _, err := admin.SnapshotSave(ctx, f, false); err != nil {
		b.Fatalf("snapshot save: %v", err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	save := time.Since(t)
	f, err = os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	t = time.Now()
	info, err := snapshot.Inspect(f)
	inspect := time.Since(t)
	if err != nil || info.Objects != uint64(n) {
		b.Fatalf("inspect: %v, %+v objects; want %d", err, info, n)
	}
	if _, err := f.Seek(0, 0); err != nil {
		b.Fatal(err)
	}
	// A few objects more than the file holds, so that a member holds n objects again only once
	// it has the restored state.
	extra := make([]client.BatchPutItem, batch)
	for i := range extra {
		extra[i] = client.BatchPutItem{Key: fmt.Sprintf("extra-%034d", i), Size: size}
	}
	if _, err := worker.BatchPut(ctx, "", extra, nil); err != nil {
		b.Fatal(err)
	}
	for _, p := range c.Nodes {
		waitObjects(b, admin, p, uint64(n+batch), time.Minute)
	}
	t = time.Now()
	if _, err := admin.SnapshotRestore(ctx, f); err != nil {
		b.Fatalf("snapshot restore: %v", err)
	}
	_ = f.Close()
	leader = c.Leader(admin, 60*time.Second)
	for _, p := range c.Nodes {
		waitObjects(b, admin, p, uint64(n), 30*time.Minute)
	}
	restore := time.Since(t)

	// A follower's restart.
	var follower *Proc
	for _, p := range c.Nodes {
		if p != leader {
			follower = p
			break
		}
	}
	termBefore := statusOf(b, admin, leader).GetTerm()
	if err := c.Stop(follower); err != nil {
		b.Fatal(err)
	}
	t = time.Now()
	c.Start(follower)
	// Through new connections: admin's to the follower backs off (up to 2 s) while the follower
	// is down, and its reconnect would count in the restart's time.
	waitObjectsFresh(b, follower, uint64(n), 30*time.Minute)
	waitCaughtUp(b, c, c.Client(), follower, leader)
	restart := time.Since(t)
	restartTerms := statusOf(b, admin, leader).GetTerm() - termBefore

	perM := func(d time.Duration) float64 { return d.Seconds() / (float64(n) / 1e6) }
	perObj := func(after, before float64) float64 { return (after - before) / float64(n) }
	rows := [][4]string{
		{"objects loaded", fmt.Sprint(n), "", ""},
		{"load rate, objects/s (first tenth / last tenth / all)", fmt.Sprintf("%.0f / %.0f / %.0f", firstRate, lastRate, float64(n)/load.Seconds()),
			">= 100000, flat", verdict(lastRate >= 100_000 && firstRate >= 100_000)},
		{"load rate, last tenth over first tenth", fmt.Sprintf("%.2fx", lastRate/firstRate), "about 1x", ""},
		{"leader changes during the load (term growth)", fmt.Sprint(loadTerms), "0", verdict(loadTerms == 0)},
		{"live heap per object, leader, after a collection (empty: " + fmtBytes(loaded[li].live-empty[li].live) + " added)",
			fmt.Sprintf("%.0f B", perObj(loaded[li].live, empty[li].live)), "<= 100 B", verdict(perObj(loaded[li].live, empty[li].live) <= 100)},
		{"heap objects per object, leader", fmt.Sprintf("%.2f", perObj(loaded[li].objects, empty[li].objects)), "<= 0.1",
			verdict(perObj(loaded[li].objects, empty[li].objects) <= 0.1)},
	}
	for i, p := range c.Nodes {
		role := "follower"
		if i == li {
			role = "leader"
		}
		r := perObj(loaded[i].rss, empty[i].rss)
		rows = append(rows, [4]string{fmt.Sprintf("RSS per object, %s (%s), over its empty %s", p.Name, role, fmtBytes(empty[i].rss)),
			fmt.Sprintf("%.0f B", r), "<= 160 B", verdict(r <= 160)})
	}
	rows = append(rows,
		[4]string{"snapshot save, s per million objects", fmt.Sprintf("%.2f (%s file, %d chunks)", perM(save), fmtBytes(float64(info.Bytes)), info.Chunks), "<= 1", verdict(perM(save) <= 1)},
		[4]string{"snapshot inspect, s per million", fmt.Sprintf("%.2f", perM(inspect)), "<= 0.5", verdict(perM(inspect) <= 0.5)},
		[4]string{"online restore until every member holds them, s per million", fmt.Sprintf("%.2f", perM(restore)), "<= 2", verdict(perM(restore) <= 2)},
		[4]string{"follower restart until caught up, s per million", fmt.Sprintf("%.2f", perM(restart)), "<= 2", verdict(perM(restart) <= 2)},
		[4]string{"leader changes during the restart", fmt.Sprint(restartTerms), "0", verdict(restartTerms == 0)},
	)
	fmt.Printf("\nscale: %d objects, 3 members on loopback, default flags\n\n| figure | value | target | |\n| --- | --: | --- | --- |\n", n)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
	b.ReportMetric(float64(n)/load.Seconds(), "objects/s")
	b.ReportMetric(perObj(loaded[li].live, empty[li].live), "live-B/object")
	b.ReportMetric(perM(save), "s/M-save")
	b.ReportMetric(perM(restore), "s/M-restore")
	b.ReportMetric(perM(restart), "s/M-restart")
}

// memberMem is what a member's metrics say of its memory.
type memberMem struct {
	rss, live, objects float64 // process RSS, live heap after the last collection, heap objects
}

func readMem(tb testing.TB, c *Cluster, p *Proc) memberMem {
	tb.Helper()
	var m memberMem
	for _, x := range []struct {
		name string
		v    *float64
	}{{"process_resident_memory_bytes", &m.rss}, {"go_gc_heap_live_bytes", &m.live}, {"go_memstats_heap_objects", &m.objects}} {
		v, err := c.MetricValue(p, x.name)
		if err != nil {
			tb.Fatal(err)
		}
		*x.v = v
	}
	return m
}

func statusOf(tb testing.TB, cl *client.Client, p *Proc) *metadv1.StatusResponse {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cl.Status(ctx, p.Client)
	if err != nil {
		tb.Fatalf("status of %s: %v", p.Name, err)
	}
	return st
}

// waitObjects polls until p reports n objects, for at most within.
func waitObjects(tb testing.TB, cl *client.Client, p *Proc, n uint64, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cl.Status(ctx, p.Client)
		cancel()
		if err == nil && st.GetObjects() == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s holds %d objects after %s, want %d (%v)", p.Name, st.GetObjects(), within, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitObjectsFresh is waitObjects through a new client each attempt, so that the time it
// measures is p's, not a connection's reconnect backoff.
func waitObjectsFresh(tb testing.TB, p *Proc, n uint64, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		cl, err := client.New(client.Config{Endpoints: []string{p.Client}})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			var st *metadv1.StatusResponse
			st, err = cl.Status(ctx, p.Client)
			cancel()
			_ = cl.Close()
			if err == nil && st.GetObjects() == n {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s does not hold %d objects after %s (%v)", p.Name, n, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// index is p's position in c.Nodes.
func (p *Proc) index(c *Cluster) int {
	for i, q := range c.Nodes {
		if q == p {
			return i
		}
	}
	return -1
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func fmtBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", v/(1<<10))
}
