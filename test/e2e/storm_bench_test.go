package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// The reconnect storm of docs/performance.md (make bench-security): real processes, default
// timeouts, TLS and API keys.
//
//	go test -run '^$' -bench ReconnectStorm -benchtime 1x -timeout 20m ./test/e2e/ [-args -storm.clients=1000 -storm.rounds=3]

var (
	stormClients = flag.Int("storm.clients", 1000, "BenchmarkReconnectStorm: clients, each with its own connection")
	stormRounds  = flag.Int("storm.rounds", 3, "BenchmarkReconnectStorm: leader kills with the storm (and as many with the probe alone)")
	stormProfile = flag.String("storm.profile", "", "BenchmarkReconnectStorm: a directory to write CPU profiles of each storm into: "+
		"the clients' (this process) and each surviving member's (metad --pprof), over the storm's first -storm.profilefor")
	stormProfileFor = flag.Duration("storm.profilefor", 2*time.Second, "BenchmarkReconnectStorm: how long each storm's profiles run")
)

// stormBudget is the failover figure's target (docs/performance.md, Failover): the median time
// from kill -9 of the leader to the first successful write.
const stormBudget = 1500 * time.Millisecond

// stormRecoverWithin bounds how long one client may take to write again after a kill.
const stormRecoverWithin = 60 * time.Second

// BenchmarkReconnectStorm: two 3-node clusters at once with default timeouts, one secure (TLS on
// every listener; its clients authenticate by API key, principal "storm" with role
// tenant:default, over TLS with no session resumption, so every connection costs a full TLS 1.3
// handshake and, on its first call, one key verification) and one plaintext (--insecure), the
// control: what the storm costs without security. Each has -storm.clients clients, each a
// client.Client of its own; a client.Client connects to every endpoint when it is made, so each
// holds three connections, one per node. Rounds alternate the clusters (which goes first flips
// every round); a round on one cluster:
//
//  1. the failover figure: one client (the probe, made like the others) writes, the leader is
//     killed (SIGKILL), and the time to the probe's first successful write is taken, as
//     BenchmarkFailoverLeaderKill does;
//  2. connect: every client is made at once, with the leader first among its endpoints (on the
//     secure cluster: and the time until all their handshakes are done), then one write by each
//     (64 at a time) through the leader;
//  3. the storm: the leader is killed; every client (and the probe) writes until a write succeeds,
//     and the time from the kill to that write is its recovery. The killed node is started again
//     and caught up.
//
// Reported per round: the probe's recovery alone and during the storm, when a survivor first
// reported itself leader, the clients' minimum, median, p99 and maximum recovery (the maximum is
// the time until all of them had written), and for the connect and storm spans the TLS handshakes,
// the key verifications and the CPU that this process (the clients) and the members used, as a
// share of the machine. With -storm.profile, CPU profiles of the storm's first seconds.
func BenchmarkReconnectStorm(b *testing.B) {
	n, rounds := *stormClients, *stormRounds
	if n < 1 || rounds < 1 {
		b.Fatalf("-storm.clients %d, -storm.rounds %d: want both at least 1", n, rounds)
	}
	plain, secure := newStorm(b, false, n), newStorm(b, true, n)
	defer plain.probe.Close()
	defer secure.probe.Close()
	for range b.N {
		for round := range rounds {
			order := []*storm{plain, secure}
			if round%2 == 1 {
				order = []*storm{secure, plain}
			}
			for _, s := range order {
				r := s.round(round)
				b.Logf("%s, round %d: %s", s.mode, round+1, r)
				s.rs = append(s.rs, r)
			}
		}
	}
	for _, s := range []*storm{plain, secure} {
		col := func(f func(stormRound) time.Duration) []time.Duration {
			var ds []time.Duration
			for _, r := range s.rs {
				ds = append(ds, f(r))
			}
			return ds
		}
		all := col(func(r stormRound) time.Duration { return r.all })
		alone := col(func(r stormRound) time.Duration { return r.alone })
		b.ReportMetric(ms(median(alone)), s.mode+"-probe-alone-median-ms")
		b.ReportMetric(ms(median(col(func(r stormRound) time.Duration { return r.p50 }))), s.mode+"-client-p50-median-ms")
		b.ReportMetric(ms(median(all)), s.mode+"-all-clients-median-ms")
		verdict := "PASS"
		if median(all) > stormBudget {
			verdict = "MISS"
		}
		b.Logf("%s: %d clients, %d rounds, %d CPUs: every client wrote again after median %v (max %v) against a budget of %v: %s; "+
			"the probe alone: median %v (max %v)",
			s.mode, n, len(s.rs), runtime.NumCPU(), median(all).Round(time.Millisecond), slices.Max(all).Round(time.Millisecond),
			stormBudget, verdict, median(alone).Round(time.Millisecond), slices.Max(alone).Round(time.Millisecond))
	}
}

// newStorm starts a 3-node cluster with default timeouts and a worker, secure (TLS and API keys)
// or plaintext, and returns its storm with n clients and the probe.
func newStorm(b *testing.B, secure bool, n int) *storm {
	var extra []string
	if *stormProfile != "" {
		extra = append(extra, "--pprof")
	}
	c := newCluster(b, 3, false, secure, extra...)
	root := c.Client()
	c.Leader(root, 30*time.Second)
	c.StartWorker(1, "256MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitUntil(b, 20*time.Second, "the worker's segment", func() bool {
		segs, err := root.ListSegments(ctx, client.SegmentFilter{})
		return err == nil && len(segs) == 1
	})
	s := &storm{b: b, c: c, root: root, n: n, secure: secure, mode: "plaintext"}
	var token string
	var counted, probeTLS *tls.Config
	if secure {
		s.mode = "tls"
		if err := root.GrantRole(ctx, "storm", "tenant:default"); err != nil {
			b.Fatal(err)
		}
		key, err := root.CreateKey(ctx, "storm", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		token = key.GetToken()
		counted, probeTLS = c.PKI.ClientTLS(b, ""), c.PKI.ClientTLS(b, "")
		counted.VerifyConnection = func(tls.ConnectionState) error { s.handshakes.Add(1); return nil }
	}
	newClient := func(tlsCfg *tls.Config, first string) *client.Client {
		eps := []string{first}
		for _, ep := range c.Endpoints() {
			if ep != first {
				eps = append(eps, ep)
			}
		}
		cl, err := client.New(client.Config{Endpoints: eps, TLS: tlsCfg, APIKey: token})
		if err != nil {
			b.Fatal(err)
		}
		return cl
	}
	s.newClient = func(first string) *client.Client { return newClient(counted, first) }
	s.probe = newClient(probeTLS, c.Endpoints()[0])
	return s
}

// storm is used by the benchmark's goroutine; its load goroutines only read it and add to
// handshakes. It is the benchmark's cluster and clients.
type storm struct {
	b          *testing.B
	mode       string // "tls" (TLS, API keys) or "plaintext"
	secure     bool
	rs         []stormRound // the rounds run
	c          *Cluster
	root       *client.Client // administers (and finds the leader): root, by certificate
	n          int            // storm clients
	probe      *client.Client // the failover figure's client
	newClient  func(first string) *client.Client
	handshakes atomic.Int64 // TLS handshakes completed by the storm clients (not the probe)
}

// stormRound is a plain value: one round's figures.
type stormRound struct {
	alone                time.Duration // the probe's recovery with no storm
	elected              time.Duration // from the kill until a survivor reports itself leader
	first, p50, p99, all time.Duration // the clients' recovery: minimum, median, p99, maximum
	probe                time.Duration // the probe's recovery during the storm
	connect              span          // every client made at once, until all their handshakes are done
	warm                 time.Duration // one write by each client, 64 at a time
	recovery             span          // from the kill until every client has written again
}

// span is a plain value: what one phase of a round took and cost.
type span struct {
	wall          time.Duration
	handshakes    int64
	verifications float64       // API key verifications by the running members
	selfCPU       time.Duration // this process: the clients
	nodeCPU       time.Duration // the running members
	cpus          int
}

// util is the CPU used over the span as a share of the machine.
func (s span) util() float64 {
	return float64(s.selfCPU+s.nodeCPU) / (float64(s.wall) * float64(s.cpus))
}

func (s span) String() string {
	return fmt.Sprintf("%v, %d handshakes, %.0f key verifications, CPU clients %v + members %v (%.0f%% of %d CPUs)",
		s.wall.Round(time.Millisecond), s.handshakes, s.verifications, s.selfCPU.Round(time.Millisecond),
		s.nodeCPU.Round(time.Millisecond), 100*s.util(), s.cpus)
}

func (r stormRound) String() string {
	return fmt.Sprintf("probe alone %v; connect %s; warm-up writes %v; storm: leader elected after %v, client recovery min %v p50 %v p99 %v all %v, probe %v; "+
		"recovery span %s",
		r.alone.Round(time.Millisecond), r.connect, r.warm.Round(time.Millisecond), r.elected.Round(time.Millisecond),
		r.first.Round(time.Millisecond), r.p50.Round(time.Millisecond),
		r.p99.Round(time.Millisecond), r.all.Round(time.Millisecond), r.probe.Round(time.Millisecond), r.recovery)
}

// meter is a plain value: the counters a span is measured by, read at its start.
type meter struct {
	at            time.Time
	handshakes    int64
	verifications float64
	selfCPU       time.Duration
	nodeCPU       time.Duration
	nodes         []*Proc
}

// start reads the counters (the members' of the running nodes ps).
func (s *storm) start(ps []*Proc) meter {
	return meter{at: time.Now(), handshakes: s.handshakes.Load(), verifications: verifications(s.b, s.c, ps),
		selfCPU: selfCPU(s.b), nodeCPU: nodesCPU(s.b, ps), nodes: ps}
}

// stop is the span from m's start until now, over the nodes m was started with.
func (s *storm) stop(m meter) span {
	wall := time.Since(m.at)
	return span{wall: wall, handshakes: s.handshakes.Load() - m.handshakes,
		verifications: verifications(s.b, s.c, m.nodes) - m.verifications, selfCPU: selfCPU(s.b) - m.selfCPU,
		nodeCPU: nodesCPU(s.b, m.nodes) - m.nodeCPU, cpus: runtime.NumCPU()}
}

// running returns the nodes that run, except skip.
func (s *storm) running(skip *Proc) []*Proc {
	var ps []*Proc
	for _, p := range s.c.Nodes {
		if p != skip && p.cmd != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// profile writes CPU profiles of the next -storm.profilefor into -storm.profile: this process's
// (the clients) and each node's of ps (metad's /debug/pprof over the metrics listener's TLS).
func (s *storm) profile(round int, ps []*Proc) {
	dir := *stormProfile
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.b.Error(err)
		return
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			secs := int(stormProfileFor.Seconds() + 0.5)
			url := fmt.Sprintf("https://%s/debug/pprof/profile?seconds=%d", p.Metrics, secs)
			scheme, tr := "http", &http.Transport{}
			if s.secure {
				scheme, tr.TLSClientConfig = "https", s.c.PKI.ClientTLS(s.b, client.RootPrincipal)
			}
			url = scheme + strings.TrimPrefix(url, "https")
			hc := &http.Client{Transport: tr, Timeout: time.Duration(secs+30) * time.Second}
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(url)
			if err != nil {
				s.b.Errorf("profile %s: %v", p.Name, err)
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %s", resp.Status, body)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-round%d-%s.pprof", s.mode, round+1, p.Name)), body, 0o644)
			}
			if err != nil {
				s.b.Errorf("profile %s: %v", p.Name, err)
			}
		})
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-round%d-clients.pprof", s.mode, round+1)))
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err == nil {
			time.Sleep(*stormProfileFor)
			pprof.StopCPUProfile()
		}
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		s.b.Errorf("profile the clients: %v", err)
	}
	wg.Wait()
}

// awaitLeader polls the nodes ps (through the root client) until one says it is the leader, and
// returns the time from since; it gives up after stormRecoverWithin (and returns that).
func (s *storm) awaitLeader(ps []*Proc, since time.Time) time.Duration {
	for time.Since(since) < stormRecoverWithin {
		for _, p := range ps {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			st, err := s.root.Status(ctx, p.Client)
			cancel()
			if err == nil && st.GetRole() == metadv1.NodeRole_NODE_ROLE_LEADER {
				return time.Since(since)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return stormRecoverWithin
}

// awaitHandshakes polls until the handshake count reaches want, failing after within.
func (s *storm) awaitHandshakes(want int64, within time.Duration, what string) {
	waitUntil(s.b, within, fmt.Sprintf("%s (%d of %d handshakes)", what, s.handshakes.Load(), want), func() bool {
		return s.handshakes.Load() >= want
	})
}

// round runs one round (see BenchmarkReconnectStorm).
func (s *storm) round(round int) stormRound {
	b, c, n := s.b, s.c, s.n
	var r stormRound

	// 1. The failover figure, the probe alone.
	leader := c.Leader(s.root, 30*time.Second)
	firstWrite(b, s.probe, time.Now(), fmt.Sprintf("probe-warm-%d", round))
	killed := time.Now()
	c.Kill(leader)
	r.alone = firstWrite(b, s.probe, killed, fmt.Sprintf("probe-alone-%d", round))
	c.Start(leader)
	waitCaughtUp(b, c, s.root, leader, c.Leader(s.root, 30*time.Second))

	// 2. Connect: n clients at once, three connections each; then a write by each.
	leader = c.Leader(s.root, 30*time.Second)
	m := s.start(s.running(nil))
	clients := make([]*client.Client, n)
	for i := range clients {
		clients[i] = s.newClient(leader.Client)
	}
	defer func() {
		for _, cl := range clients {
			_ = cl.Close()
		}
	}()
	if s.secure {
		s.awaitHandshakes(m.handshakes+int64(3*n), 60*time.Second, "connect")
	}
	r.connect = s.stop(m)
	warmStart := time.Now()
	if err := forEach(n, 64, func(i int) error {
		return writeUntil(clients[i], time.Now().Add(30*time.Second), fmt.Sprintf("storm-%d-warm-%d", round, i))
	}); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	// Every client must write through the leader when it is killed. On a loaded machine leadership
	// may move meanwhile: then the clients write again, and follow the new leader's hint.
	for attempt := 0; ; attempt++ {
		leader = c.Leader(s.root, 30*time.Second)
		var off []int
		for i, cl := range clients {
			if cl.Leader() != leader.Client {
				off = append(off, i)
			}
		}
		if len(off) == 0 {
			break
		}
		if attempt == 3 {
			b.Fatalf("%d clients write through another node than the leader %s", len(off), leader.Client)
		}
		b.Logf("round %d: the leader moved to %s during the warm-up; %d clients write again", round+1, leader.Name, len(off))
		if err := forEach(len(off), 64, func(j int) error {
			i := off[j]
			return writeUntil(clients[i], time.Now().Add(30*time.Second), fmt.Sprintf("storm-%d-warm-%d-again-%d", round, i, attempt))
		}); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	r.warm = time.Since(warmStart)
	firstWrite(b, s.probe, time.Now(), fmt.Sprintf("storm-%d-probe-warm", round))

	// 3. The storm.
	m = s.start(s.running(leader))
	var profiled sync.WaitGroup
	if *stormProfile != "" {
		profiled.Go(func() { s.profile(round, m.nodes) })
	}
	killed = time.Now()
	c.Kill(leader)
	ds := make([]time.Duration, n)
	var probeErr error
	var wg sync.WaitGroup
	survivors := s.running(nil)
	wg.Go(func() { r.elected = s.awaitLeader(survivors, killed) })
	wg.Go(func() {
		probeErr = writeUntil(s.probe, killed.Add(stormRecoverWithin), fmt.Sprintf("storm-%d-probe", round))
		r.probe = time.Since(killed)
	})
	err := forEach(n, n, func(i int) error {
		err := writeUntil(clients[i], killed.Add(stormRecoverWithin), fmt.Sprintf("storm-%d-%d", round, i))
		ds[i] = time.Since(killed)
		return err
	})
	wg.Wait()
	r.recovery = s.stop(m)
	profiled.Wait()
	if err != nil || probeErr != nil {
		b.Fatalf("storm round %d: a client did not write again within %v: %v", round, stormRecoverWithin, errors.Join(err, probeErr))
	}
	slices.Sort(ds)
	r.first, r.p50, r.p99, r.all = ds[0], ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)], ds[len(ds)-1]

	c.Start(leader)
	waitCaughtUp(b, c, s.root, leader, c.Leader(s.root, 30*time.Second))
	return r
}

// writeUntil writes fresh keys through cl until one succeeds or deadline passes; then it returns
// the last error.
func writeUntil(cl *client.Client, deadline time.Time, tag string) error {
	for i := 0; ; i++ {
		d := time.Now().Add(5 * time.Second)
		if deadline.Before(d) {
			d = deadline
		}
		ctx, cancel := context.WithDeadline(context.Background(), d)
		_, err := cl.Put(ctx, "", fmt.Sprintf("%s-%d", tag, i), 64, nil)
		cancel()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s: %w", tag, err)
		}
	}
}

// forEach runs f(0..n-1) on at most par goroutines and returns the errors joined.
func forEach(n, par int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// verifications is the sum of the API key verifications the nodes ps have made.
func verifications(tb testing.TB, c *Cluster, ps []*Proc) float64 {
	var sum float64
	for _, p := range ps {
		v, err := c.MetricValue(p, "metad_server_auth_key_verifications_total")
		if err != nil {
			tb.Fatal(err)
		}
		sum += v
	}
	return sum
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nodesCPU is the CPU time (user and system) the running nodes ps have used, from
// /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ).
func nodesCPU(tb testing.TB, ps []*Proc) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "stat"))
		if err != nil {
			tb.Fatal(err)
		}
		// The fields after the command name (in parentheses, which may hold spaces): state is the
		// first; utime and stime are the 12th and 13th.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		for _, i := range []int{11, 12} {
			t, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				tb.Fatalf("%s: /proc stat: %v", p.Name, err)
			}
			sum += time.Duration(t) * 10 * time.Millisecond
		}
	}
	return sum
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
