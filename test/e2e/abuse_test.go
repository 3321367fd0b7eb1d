package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// TestAbuseVictim: one tenant's principal abuses the leader in each of the ways an outside test
// found harmful (10,000 watch streams, with an unauthenticated client opening streams too; 8 MiB
// of metadata per call; regex scans over a large tenant without pause), while another tenant's
// principal reads its own objects from the leader at a steady pace. The abuser's role is limited
// (metactl limit set: 200 calls/s, 20,000 keys/s, 64 streams) and the member's connection bounds
// and refusal hold are at their defaults. Under each abuse:
//   - the cluster holds one leader in one term, and every victim read is answered;
//   - the defences hold: the abuser holds no more streams than its limit, its refusals come at
//     most once per refusal hold per call it keeps open (not as fast as it asks), and no 8 MiB
//     header block is read whole;
//   - the victim's figures are logged: its p99 and the share of its reads within twice the p99
//     it had with no abuse, measured just before. With METAD_ABUSE_STRICT=1 (make bench-abuse)
//     that share must be >= 99 % in one of abuseAttempts tries of each abuse.
//
// METAD_ABUSE_FLAGS adds metad flags to the members.
//
// The abuser is a process of its own (this test binary, TestAbuserProcess) at the lowest CPU
// priority: an abuser runs on machines of its own, so what it costs the members is measured, not
// what its own goroutines take from the victim on a shared box. The first phase is a control:
// the abuser process only spins, which shows the box's own noise in the victim's figures.
func TestAbuseVictim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	strict := os.Getenv("METAD_ABUSE_STRICT") == "1"
	// METAD_ABUSE_FLAGS: more metad flags (such as "--refusal-hold 0", to see the checks fail
	// without the hold).
	// metad's default Raft timeouts: an election is what the abuse must not cause.
	c := newCluster(t, 3, false, true, strings.Fields(os.Getenv("METAD_ABUSE_FLAGS"))...)
	root := c.Client()
	leader := c.Leader(root, 20*time.Second)
	c.StartWorker(2, "256MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	waitUntil(t, 20*time.Second, "the worker's segments", func() bool {
		segs, err := root.ListSegments(ctx, client.SegmentFilter{})
		return err == nil && len(segs) == 2
	})
	keys := map[string]string{}
	var err error
	for _, tenant := range []string{"victim", "abuser"} {
		if _, err := root.RegisterTenant(ctx, tenant, 0); err != nil {
			t.Fatalf("register %s: %v", tenant, err)
		}
		if out, err := c.Metactl("role", "grant", tenant+"-app", "tenant:"+tenant); err != nil {
			t.Fatalf("metactl role grant: %v\n%s", err, out)
		}
		k, err := root.CreateKey(ctx, tenant+"-app", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keys[tenant] = k.GetToken()
	}
	// SetLimit is refused until every member has recorded its feature level (just after start).
	var out string
	waitUntil(t, 20*time.Second, "metactl limit set", func() bool {
		out, err = c.Metactl("limit", "set", "--role", "tenant:abuser", "--calls-per-sec", "200", "--keys-per-sec", "20000", "--streams", fmt.Sprint(abuseStreamLimit))
		return err == nil || !strings.Contains(out, "feature level")
	})
	if err != nil {
		t.Fatalf("metactl limit set: %v\n%s", err, out)
	}

	victim, err := client.New(client.Config{Endpoints: []string{leader.Client}, TLS: c.PKI.ClientTLS(t, ""), APIKey: keys["victim"]})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	var victimKeys []string
	for i := range 64 {
		k := fmt.Sprintf("victim-%03d", i)
		if _, err := victim.Put(ctx, "victim", k, 4096, nil); err != nil {
			t.Fatalf("victim put: %v", err)
		}
		victimKeys = append(victimKeys, k)
	}
	// The abuser's tenant is large, so that every page of its scans walks many objects. It is
	// loaded by root: the abuser's own keys per second would make the load slow.
	loadTenant(t, ctx, root, "abuser", abuseObjects)

	term0 := leaderTerm(t, ctx, root, leader)
	attempts := 1
	if strict {
		attempts = abuseAttempts
	}
	for _, mode := range []string{"spin", "streams", "headers", "scans"} {
		var passed bool
		for attempt := 1; attempt <= attempts && !passed; attempt++ {
			base := victimReads(ctx, victim, victimKeys, abusePhase)
			stop := startAbuser(t, mode, leader.Client, c.PKI.CAFile(), keys["abuser"])
			under := victimReads(ctx, victim, victimKeys, abusePhase)
			did := stop()
			bound := 2 * base.p99()
			within := under.within(bound)
			passed = within >= 0.99
			t.Logf("%s (attempt %d): victim baseline p99 %s (%d reads); under abuse p99 %s, %.2f %% of %d reads within %s, %d failed; abuser: %s",
				did.name(), attempt, base.p99(), len(base.lat), under.p99(), 100*within, len(under.lat), bound, under.failed, did)
			if base.failed+under.failed > 0 {
				t.Errorf("%s: %d of the victim's reads failed", did.name(), base.failed+under.failed)
			}
			did.check(t)
		}
		if strict && !passed {
			t.Errorf("%s: the victim's reads did not stay within twice their baseline p99 in %d attempts", mode, attempts)
		}
		if term := leaderTerm(t, ctx, root, leader); term != term0 {
			t.Fatalf("%s: the leader's term moved from %d to %d (an election)", mode, term0, term)
		}
	}
}

const (
	abuseAttempts    = 3
	abusePhase       = 2 * time.Second
	abuseObjects     = 50_000
	abuseStreams     = 10_000
	abuseStreamLimit = 64
	abuseScanners    = 4
	// victimPace is the victim's pace: one read every victimPace.
	victimPace = 2 * time.Millisecond
	// abuseHold is the members' refusal hold (server.DefaultRefusalHold).
	abuseHold = 250 * time.Millisecond
)

// abuseReport is what an abuser process did, as it prints it (JSON after abuseDid).
type abuseReport struct {
	Mode    string `json:"mode"`
	Elapsed int64  `json:"elapsed_ms"`
	// streams
	Held          int64 `json:"streams_served,omitempty"`
	Peak          int64 `json:"streams_served_at_once,omitempty"`
	Refused       int64 `json:"streams_refused,omitempty"`
	Unauth        int64 `json:"unauthenticated_refused,omitempty"`
	UnauthCallers int   `json:"unauthenticated_callers,omitempty"`
	// headers
	Calls int64 `json:"header_blocks_sent,omitempty"`
	Conns int64 `json:"connections,omitempty"`
	// scans
	Pages        int64 `json:"pages,omitempty"`
	PagesRefused int64 `json:"pages_refused,omitempty"`
	Scanners     int   `json:"scanners,omitempty"`
}

func (r abuseReport) name() string {
	switch r.Mode {
	case "spin":
		return "spin (control)"
	case "streams":
		return "10,000 watch streams"
	case "headers":
		return "8 MiB of metadata per call"
	case "scans":
		return "regex scans without pause"
	}
	return r.Mode
}

func (r abuseReport) String() string {
	switch r.Mode {
	case "streams":
		return fmt.Sprintf("%d streams served (%d at once at most), %d refused, the rest unanswered; %d unauthenticated streams refused", r.Held, r.Peak, r.Refused, r.Unauth)
	case "headers":
		return fmt.Sprintf("%d blocks of 8 MiB of metadata sent whole, on %d connections", r.Calls, r.Conns)
	case "scans":
		return fmt.Sprintf("%d scan pages answered, %d refused", r.Pages, r.PagesRefused)
	}
	return "spun"
}

// check fails t unless the defences held against the abuse r reports: a caller that asks again
// at once is refused at most once per refusal hold (plus one) for each call it keeps open.
func (r abuseReport) check(t *testing.T) {
	t.Helper()
	perCaller := int64(time.Duration(r.Elapsed)*time.Millisecond/abuseHold) + 2
	switch r.Mode {
	case "streams":
		if r.Peak > abuseStreamLimit {
			t.Errorf("%s: %s; want at most %d served at once", r.name(), r, abuseStreamLimit)
		}
		if r.Unauth > int64(r.UnauthCallers)*perCaller {
			t.Errorf("%s: %d unauthenticated streams refused in %d ms by %d callers: the refusals are not held", r.name(), r.Unauth, r.Elapsed, r.UnauthCallers)
		}
	case "headers":
		if r.Calls != 0 || r.Conns < 1 {
			t.Errorf("%s: %s; want none sent whole", r.name(), r)
		}
	case "scans":
		if r.PagesRefused > int64(r.Scanners)*perCaller {
			t.Errorf("%s: %d pages refused in %d ms to %d scanners: the refusals are not held", r.name(), r.PagesRefused, r.Elapsed, r.Scanners)
		}
		// A page costs the tenant's objects (50,000, walked by every page) at 20,000 keys/s: a
		// page on a full bucket, then one per 2.5 s.
		if max := (r.Elapsed/1000+1)*20_000/abuseObjects + 1; r.Pages > max {
			t.Errorf("%s: %d pages answered in %d ms; the keys-per-second limit allows %d", r.name(), r.Pages, r.Elapsed, max)
		}
	}
}

// reads is what a victim saw in a phase: each answered read's latency, and the reads that failed.
type reads struct {
	lat    []time.Duration
	failed int
}

// p99 is the 99th percentile of the answered reads' latency.
func (r reads) p99() time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}

// within is the fraction of all reads (failed ones included) answered within bound.
func (r reads) within(bound time.Duration) float64 {
	n := 0
	for _, l := range r.lat {
		if l <= bound {
			n++
		}
	}
	if len(r.lat)+r.failed == 0 {
		return 0
	}
	return float64(n) / float64(len(r.lat)+r.failed)
}

// victimReads reads the victim's keys in turn (linearizable Gets), one every victimPace, for d.
func victimReads(ctx context.Context, cl *client.Client, keys []string, d time.Duration) reads {
	var r reads
	tick := time.NewTicker(victimPace)
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		t0 := time.Now()
		_, err := cl.Get(rctx, "victim", keys[i%len(keys)])
		lat := time.Since(t0)
		cancel()
		if err != nil {
			r.failed++
			continue
		}
		r.lat = append(r.lat, lat)
	}
	return r
}

// loadTenant puts n objects of 64 bytes, 40-byte keys, into tenant in batches.
func loadTenant(t *testing.T, ctx context.Context, cl *client.Client, tenant string, n int) {
	t.Helper()
	const batch = 256
	for i := 0; i < n; i += batch {
		var items []client.BatchPutItem
		for j := i; j < min(n, i+batch); j++ {
			items = append(items, client.BatchPutItem{Key: fmt.Sprintf("abuse/%034d", j), Size: 64})
		}
		st, err := cl.BatchPut(ctx, tenant, items, nil)
		if err != nil {
			t.Fatalf("load %s: %v", tenant, err)
		}
		for _, s := range st {
			if s.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				t.Fatalf("load %s: an item failed: %v", tenant, s)
			}
		}
	}
}

// leaderTerm is the term every member reports, failing the test unless they agree and leader
// still leads.
func leaderTerm(t *testing.T, ctx context.Context, cl *client.Client, leader *Proc) uint64 {
	t.Helper()
	var term uint64
	for _, st := range cl.StatusAll(ctx) {
		if st.Err != nil {
			t.Fatalf("status of %s: %v", st.Endpoint, st.Err)
		}
		if term != 0 && st.Status.GetTerm() != term {
			t.Fatalf("the members report terms %d and %d", term, st.Status.GetTerm())
		}
		term = st.Status.GetTerm()
		if st.Endpoint == leader.Client && st.Status.GetRole() != metadv1.NodeRole_NODE_ROLE_LEADER {
			t.Fatalf("%s no longer leads", leader.Name)
		}
	}
	return term
}

// startAbuser starts the abuse of mode (TestAbuserProcess) against the member at addr, at the
// lowest CPU priority, and waits until it has begun. stop ends it and returns what it did.
func startAbuser(t *testing.T, mode, addr, caFile, key string) (stop func() abuseReport) {
	t.Helper()
	cmd := exec.Command("nice", "-n", "19", os.Args[0], "-test.run", "^TestAbuserProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "METAD_ABUSE_MODE="+mode, "METAD_ABUSE_ADDR="+addr, "METAD_ABUSE_CA="+caFile, "METAD_ABUSE_KEY="+key)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer // read once the process has ended (ended), when its output is all in
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(&out, pw)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	began := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if sc.Text() == abuseBegun {
				close(began)
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait(); _ = pw.Close() }()
	select {
	case <-began:
	case err := <-ended:
		t.Fatalf("the abuser (%s) ended before it began: %v\n%s", mode, err, out.String())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-ended
		t.Fatalf("the abuser (%s) did not begin within 30s:\n%s", mode, out.String())
	}
	return func() abuseReport {
		_ = stdin.Close()
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("the abuser (%s): %v\n%s", mode, err, out.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-ended
			t.Fatalf("the abuser (%s) did not stop within 30s:\n%s", mode, out.String())
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if js, ok := strings.CutPrefix(l, abuseDid); ok {
				var r abuseReport
				if err := json.Unmarshal([]byte(js), &r); err != nil {
					t.Fatalf("the abuser's report %q: %v", js, err)
				}
				return r
			}
		}
		t.Fatalf("the abuser (%s) made no report:\n%s", mode, out.String())
		return abuseReport{}
	}
}

// abuseBegun and abuseDid are the lines the abuser process prints: when it has begun, and what it
// did (after the prefix).
const (
	abuseBegun = "ABUSE BEGUN"
	abuseDid   = "ABUSE DID: "
)

// TestAbuserProcess is the abuser of TestAbuseVictim when that test runs this binary with
// METAD_ABUSE_MODE set (and is skipped otherwise): it abuses until its standard input ends.
func TestAbuserProcess(t *testing.T) {
	mode := os.Getenv("METAD_ABUSE_MODE")
	if mode == "" {
		t.Skip("the abuser process of TestAbuseVictim")
	}
	tc, err := client.TLSFromFiles(os.Getenv("METAD_ABUSE_CA"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	addr, key := os.Getenv("METAD_ABUSE_ADDR"), os.Getenv("METAD_ABUSE_KEY")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	did := abuseReport{Mode: mode}
	began := time.Now()
	fmt.Println(abuseBegun)
	switch mode {
	case "spin":
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					for i := 0; i < 1e6; i++ {
					}
				}
			})
		}
		wg.Wait()

	case "streams":
		holdStreams(ctx, addr, tc, key, abuseStreams, &did)
	case "headers":
		floodHeaders(ctx, addr, tc, key, 8<<20, &did)
	case "scans":
		cl, err := client.New(client.Config{Endpoints: []string{addr}, TLS: tc, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		scanWithoutPause(ctx, cl, "abuser", abuseScanners, &did)
	default:
		t.Fatalf("unknown abuse %q", mode)
	}
	did.Elapsed = time.Since(began).Milliseconds()
	js, err := json.Marshal(did)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(abuseDid + string(js))
}

// holdStreams opens n watch streams on the leader as the abuser (over n/1000 connections, each
// under its 1024-stream bound) and holds those that open until ctx ends, while an
// unauthenticated client opens streams without pause. r gets the streams held and refused.
func holdStreams(ctx context.Context, addr string, tc *tls.Config, key string, n int, r *abuseReport) {
	const perConn = 1000
	var held, refused, unauth, open, peak atomic.Int64
	var wg sync.WaitGroup
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	for range (n + perConn - 1) / perConn {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			panic(err) // only a malformed target fails
		}
		defer cc.Close()
		mc := metadv1.NewMetadataClient(cc)
		for range perConn {
			wg.Go(func() {
				// A stream that is served answers progress every 100 ms; a refused one ends.
				s, err := mc.Watch(actx, &metadv1.WatchRequest{Tenant: "abuser", ProgressIntervalMs: 100})
				served := false
				for err == nil {
					if _, err = s.Recv(); err == nil && !served {
						served = true
						held.Add(1)
						n := open.Add(1)
						for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
						}
					}
				}
				if served {
					open.Add(-1) // ended: cut off (a starved abuser falls behind), or the abuse ended
				} else if ctx.Err() == nil {
					refused.Add(1)
				}
			})
		}
	}
	wg.Go(func() {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			return
		}
		defer cc.Close()
		mc := metadv1.NewMetadataClient(cc)
		for first := true; first || ctx.Err() == nil; first = false {
			s, err := mc.Watch(ctx, &metadv1.WatchRequest{Tenant: "abuser"})
			if err == nil {
				_, err = s.Recv()
			}
			if err != nil {
				unauth.Add(1)
			}
		}
	})
	<-ctx.Done()
	wg.Wait()
	r.Held, r.Peak, r.Refused, r.Unauth, r.UnauthCallers = held.Load(), peak.Load(), refused.Load(), unauth.Load(), 1
}

// floodHeaders sends, over raw HTTP/2 connections to addr and without pause, calls whose
// metadata is size bytes (a gRPC client refuses to send them itself), redialling whenever the
// member closes the connection. r gets the header blocks sent whole and the connections.
func floodHeaders(ctx context.Context, addr string, tc *tls.Config, key string, size int, r *abuseReport) {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", metadv1.Metadata_Get_FullMethodName},
		{":authority", "metad"}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"authorization", "Bearer " + key}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	pad := strings.Repeat("p", 16<<10)
	for i := 0; block.Len() < size; i++ {
		_ = enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-pad-%d", i), Value: pad})
	}
	headers := block.Bytes()
	tc = tc.Clone()
	tc.NextProtos = []string{"h2"}
	var calls, conns int64
	for first := true; first || ctx.Err() == nil; first = false {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: tc}
		conn, err := d.DialContext(context.WithoutCancel(ctx), "tcp", addr) // the first even once ctx ended
		if err != nil {
			continue
		}
		conns++
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		go func() { _, _ = io.Copy(io.Discard, conn) }() // the member's frames, unread
		fr := http2.NewFramer(conn, conn)
		if _, err := conn.Write([]byte(http2.ClientPreface)); err == nil && fr.WriteSettings() == nil {
			for id := uint32(1); ctx.Err() == nil; id += 2 {
				if writeHeaders(fr, id, headers) != nil {
					break
				}
				calls++
			}
		}
		stop()
		_ = conn.Close()
	}
	r.Calls, r.Conns = calls, conns
}

// writeHeaders writes one HEADERS frame and its CONTINUATIONs (16 KiB each) for stream id.
func writeHeaders(fr *http2.Framer, id uint32, b []byte) error {
	const chunk = 16 << 10
	first := b[:min(chunk, len(b))]
	b = b[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(b) == 0}); err != nil {
		return err
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		if err := fr.WriteContinuation(id, n == len(b), b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// scanWithoutPause runs n goroutines that page through a regex scan of tenant over and over,
// never waiting out a refusal. r gets the pages answered and refused.
func scanWithoutPause(ctx context.Context, cl *client.Client, tenant string, n int, r *abuseReport) {
	var pages, refused atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var token []byte
			for ctx.Err() == nil {
				resp, err := cl.GetByRegexPage(ctx, tenant, `^abuse/.*(1.*2.*3.*4|9.*8.*7.*6)$`, token, 0, client.Stale())
				if err != nil {
					refused.Add(1)
					continue
				}
				pages.Add(1)
				token = resp.GetNextPageToken()
			}
		})
	}
	wg.Wait()
	r.Pages, r.PagesRefused, r.Scanners = pages.Load(), refused.Load(), n
}
