package ha

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	"metad/store"
)

func TestPipelineLimits(t *testing.T) {
	base := DefaultConfig()
	fixed := base
	fixed.MaxEntriesOut, fixed.MaxBatch = 4, 256
	entriesOnly := base
	entriesOnly.MaxEntriesOut = 4
	for _, c := range []struct {
		name           string
		cfg            Config
		procs          int
		entries, batch int
		adaptive       bool
	}{
		{"one processor: nothing overlaps", base, 1, 1, 4096, true},
		{"two processors: both stages", base, 2, pipelineStages, 4096 / pipelineStages, true},
		{"many processors: still two stages", base, 64, pipelineStages, 4096 / pipelineStages, true},
		{"configured", fixed, 64, 4, 256, false},
		{"configured entries, derived batch", entriesOnly, 1, 4, 1024, false},
	} {
		e, b, a := pipelineLimits(c.cfg, c.procs)
		if e != c.entries || b != c.batch || a != c.adaptive {
			t.Errorf("%s: entries %d batch %d adaptive %v, want %d %d %v", c.name, e, b, a, c.entries, c.batch, c.adaptive)
		}
	}
	if pipelineStages != 2 {
		t.Errorf("pipelineStages %d: AppendEntries pipelining is off, so two stages overlap", pipelineStages)
	}
}

func TestPipelineRule(t *testing.T) {
	r := pipelineRule{limit: 2, adaptive: true, idleCPUs: 1}
	if !r.mayOpen(0, 1) || r.mayOpen(0, 0) {
		t.Fatal("with nothing in flight, any queued command goes out at once, and nothing without one")
	}
	if r.mayOpen(1, 4000) {
		t.Fatal("a second entry opened before the commit latency and arrival rate were measured")
	}
	// 100 commands every 10 ms (10k/s), committing in 20 ms: a round brings 200 commands.
	t0 := time.Unix(1000, 0)
	for i := range 50 {
		r.sent(100, t0.Add(time.Duration(i)*10*time.Millisecond))
		r.committed(20 * time.Millisecond)
	}
	n, ok := r.threshold()
	if !ok || n < 199 || n > 201 {
		t.Fatalf("threshold %.1f %v, want 200 (10k commands/s x 20 ms)", n, ok)
	}
	if r.mayOpen(1, 199) || !r.mayOpen(1, 200) || r.mayOpen(2, 4000) {
		t.Fatal("a second entry opens with a round's worth queued and not before; never a third")
	}
	r.idleCPUs = 0.9
	if r.mayOpen(1, 4000) {
		t.Fatal("a second entry opened with no whole CPU idle")
	}
	r.idleCPUs = 1
	// The averages follow a change by one eighth of the difference per sample.
	r.committed(28 * time.Millisecond)
	if got := r.latency; got < 0.020999 || got > 0.021001 {
		t.Fatalf("latency %.6f s after a 28 ms sample, want 0.021", got)
	}
	// A failed entry (0) measures nothing.
	r.committed(0)
	if got := r.latency; got < 0.020999 || got > 0.021001 {
		t.Fatalf("latency %.6f s after a failed entry", got)
	}
	// A slow load: one command every 50 ms, committing in 2 ms; the threshold stays at one command.
	slow := pipelineRule{limit: 2, adaptive: true}
	for i := range 20 {
		slow.sent(1, t0.Add(time.Duration(i)*50*time.Millisecond))
		slow.committed(2 * time.Millisecond)
	}
	if n, ok := slow.threshold(); !ok || n != 1 {
		t.Fatalf("slow load threshold %.3f %v, want 1", n, ok)
	}

	f := pipelineRule{limit: 3} // no CPU is idle: a fixed limit does not ask
	if !f.mayOpen(1, 1) || !f.mayOpen(2, 1) || f.mayOpen(3, 1) {
		t.Fatal("a fixed limit opens an entry whenever fewer than the limit are in flight")
	}
}

func TestPipelineRuleSamplesIdleCPUs(t *testing.T) {
	var idle, total uint64
	readable := true
	r := pipelineRule{limit: 2, adaptive: true, cpus: 4, latency: 0.010,
		cpuTimes: func() (uint64, uint64, bool) { return idle, total, readable }}
	t0 := time.Unix(1000, 0)
	r.sampleCPU(t0)
	if r.idleCPUs != 0 {
		t.Fatalf("%.2f CPUs idle from the first read", r.idleCPUs)
	}
	// A quarter of 4 CPUs' time idle: one CPU. The next read waits for the window (8 x 10 ms).
	idle, total = 100, 400
	r.sampleCPU(t0.Add(79 * time.Millisecond))
	if r.idleCPUs != 0 {
		t.Fatal("counters read again before the window passed")
	}
	r.sampleCPU(t0.Add(80 * time.Millisecond))
	if r.idleCPUs != 1 {
		t.Fatalf("%.2f CPUs idle, want 1", r.idleCPUs)
	}
	idle, total = 150, 800 // an eighth idle: half a CPU
	r.sampleCPU(t0.Add(160 * time.Millisecond))
	if r.idleCPUs != 0.5 {
		t.Fatalf("%.2f CPUs idle, want 0.5", r.idleCPUs)
	}
	readable = false
	r.idleCPUs = 3
	r.sampleCPU(t0.Add(240 * time.Millisecond))
	if r.idleCPUs != 0 {
		t.Fatalf("%.2f CPUs idle from unreadable counters, want none", r.idleCPUs)
	}
	if _, _, ok := cpuTimes(); !ok && runtime.GOOS == "linux" {
		t.Error("/proc/stat unreadable on Linux")
	}
}

// With its first entry held in flight (apply gated), the leader opens a second entry for the
// commands queued behind it once they number a commit round's worth, and never a third.
func TestProposerOpensSecondEntry(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one processor: one entry in flight")
	}
	var mu sync.Mutex
	var held chan struct{} // nil: apply runs; else apply waits until it is closed
	gate := func() {
		mu.Lock()
		h := held
		mu.Unlock()
		if h != nil {
			<-h
		}
	}
	release := func() {
		mu.Lock()
		if held != nil {
			close(held)
			held = nil
		}
		mu.Unlock()
	}
	// Every CPU idle, whatever else runs on the machine.
	var ticks uint64
	defer func(old func() (uint64, uint64, bool)) { machineCPUTimes = old }(machineCPUTimes)
	machineCPUTimes = func() (uint64, uint64, bool) { ticks += 100; return ticks, ticks, true }
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// One node: no peer to reach and nothing the test asks of the disk.
	cfg := testConfig("n1", t.TempDir())
	_, tr := raft.NewInmemTransport("n1.raft:7000")
	cfg.Transport, cfg.LogStores = tr, InmemLogStores()
	n, err := newNode(cfg, f, nil, gate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); _ = n.Kill() })
	if err := n.BootstrapCluster([]Peer{{Name: "n1", PeerAddr: n.PeerAddr()}}); err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, nodes: map[string]*Node{"n1": n}}
	c.waitLeader()
	c.propose(mountCmd())
	for i := range 20 { // measures the commit latency and the arrival rate
		c.put(fmt.Sprintf("warm%d", i))
	}

	var entries, most, open int
	n.proposer.onEntry = func(int) {
		mu.Lock()
		entries++
		open++
		most = max(most, open)
		mu.Unlock()
	}
	n.proposer.onDone = func(time.Duration) { mu.Lock(); open--; mu.Unlock() }
	mu.Lock()
	held = make(chan struct{})
	mu.Unlock()
	var wg sync.WaitGroup
	propose := func(key string) {
		defer wg.Done()
		s, _ := putCmds(key)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := n.Propose(ctx, s); err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go propose("first")
	c.waitFor("the first entry", 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return entries == 1 })
	for i := range 256 {
		wg.Add(1)
		go propose(fmt.Sprintf("queued%d", i))
	}
	c.waitFor("a second entry while the first is held", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return entries >= 2
	})
	release()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if most > pipelineStages {
		t.Fatalf("%d entries in flight at once, more than the %d stages", most, pipelineStages)
	}
	t.Logf("%d entries, at most %d in flight", entries, most)
}
