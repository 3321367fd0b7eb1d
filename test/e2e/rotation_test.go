package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	"metad/server"
	"metad/tlsconf"
)

// TestRotationDrill: the CA and every certificate of a running secure cluster are replaced while
// clients run puts and gets, as an operator rotates them: (1) every node's CA file becomes an
// overlap bundle of the old and the new CA; (2) every node's certificate is replaced by one the
// new CA issued; (3) root's client certificate is replaced likewise; (4) the old CA leaves the
// bundle. Each file is replaced by rename, and each step waits until every node has reloaded.
// Long-lived clients (root by certificate, a tenant by API key, on every node) and short-lived
// ones (a fresh connection, so a fresh handshake, per request) trust the overlap bundle
// throughout, as the operator hands it to clients before the nodes switch.
//
// Checked: no client request fails over the whole drill and none of them is refused by a node;
// no peer connection is refused; a fresh handshake with each node's client, peer and metrics
// listener shows a certificate the new CA signed; the leader and the term have not changed; and
// after step 4 a client that presents root's old certificate is refused.
func TestRotationDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	start := time.Now()
	c := NewSecureCluster(t, 3, "--tls-reload-interval", "100ms")
	root := c.Client()
	c.Leader(root, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The new CA, and the overlap bundle the clients trust from the start.
	newCA, err := tlsconf.CreateCA(t.TempDir(), tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldCAPEM := readFile(t, c.PKI.CAFile())
	newCAPEM := pemOf(newCA.Cert)
	overlap := append(append([]byte{}, oldCAPEM...), newCAPEM...)
	clientCA := filepath.Join(t.TempDir(), "clients-ca.crt")
	writeFile(t, clientCA, overlap)
	rootCert, rootKey := tlsconf.ClientFiles(c.PKI.Dir, client.RootPrincipal)
	oldRoot := filepath.Join(t.TempDir(), "old-root")
	writeFile(t, oldRoot+".crt", readFile(t, rootCert))
	writeFile(t, oldRoot+".key", readFile(t, rootKey))

	startBundleWorker(t, c, clientCA)
	waitUntil(t, 20*time.Second, "the worker's segments", func() bool {
		segs, err := root.ListSegments(ctx, client.SegmentFilter{})
		return err == nil && len(segs) == 2
	})
	if _, err := root.RegisterTenant(ctx, "acme", 0); err != nil {
		t.Fatal(err)
	}
	if err := root.GrantRole(ctx, "acme-app", "tenant:acme"); err != nil {
		t.Fatal(err)
	}
	key, err := root.CreateKey(ctx, "acme-app", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leader, term := agreedLeader(t, ctx, root)
	t.Logf("leader %s, term %d, set up after %s", leader, term, time.Since(start).Round(time.Millisecond))
	authFailures := sumMetric(t, c, "metad_server_auth_failures_total", true)

	// Root's certificate and key are replaced one file after the other (step 3), so a client
	// loading them in between reads a pair that does not match: it loads again, as a client
	// that watches its files would, until they match.
	rootTLS := func() *tls.Config {
		deadline := time.Now().Add(5 * time.Second)
		for {
			cfg, err := client.TLSFromFiles(clientCA, rootCert, rootKey)
			if err == nil {
				return cfg
			}
			if time.Now().After(deadline) {
				t.Errorf("root's TLS files: %v", err)
				return clientTLS(t, clientCA, "", "")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	keyTLS := func() *tls.Config { return clientTLS(t, clientCA, "", "") }
	load := startLoad(t, c, rootTLS, keyTLS, key.GetToken())
	defer load.stop()
	load.progress(t, "before the drill")

	// Step 1: every node trusts the old and the new CA.
	before := reloads(t, c)
	replaceFile(t, c.PKI.CAFile(), overlap)
	waitReloaded(t, c, before, "the overlap bundle")
	load.progress(t, "step 1")

	// Step 2: every node's certificate is replaced, one node after the other.
	for _, p := range c.Nodes {
		dir := t.TempDir()
		cert, key, err := newCA.IssueMember(dir, p.Name, []string{"127.0.0.1", "localhost"}, tlsconf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		liveCert, liveKey := tlsconf.MemberFiles(c.PKI.Dir, p.Name)
		before := reloads(t, c)
		replaceFile(t, liveCert, readFile(t, cert))
		replaceFile(t, liveKey, readFile(t, key))
		waitUntil(t, 10*time.Second, p.Name+" reloading its new certificate", func() bool {
			return reloadsOf(t, c, p) > before[p.Name]
		})
		load.progress(t, "step 2, "+p.Name)
	}

	// Step 3: root's client certificate is replaced; the clients present it from their next
	// handshake on (the short-lived ones at once).
	cert, ckey, err := newCA.IssueClient(t.TempDir(), client.RootPrincipal, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, rootCert, readFile(t, cert))
	replaceFile(t, rootKey, readFile(t, ckey))
	load.progress(t, "step 3")

	// Step 4: the old CA leaves every node's bundle.
	before = reloads(t, c)
	replaceFile(t, c.PKI.CAFile(), newCAPEM)
	waitReloaded(t, c, before, "the new CA alone")
	load.progress(t, "step 4")
	load.stop()

	ops, failed := load.result()
	t.Logf("%d requests (a put and a get each), %d failed, drill done after %s", ops, len(failed), time.Since(start).Round(time.Millisecond))
	if len(failed) > 0 {
		t.Fatalf("%d of %d requests failed during the rotation; first: %v", len(failed), ops, failed[0])
	}
	if got := sumMetric(t, c, "metad_server_auth_failures_total", true); got != authFailures {
		t.Errorf("metad_server_auth_failures_total went from %v to %v during the drill", authFailures, got)
	}
	if got := sumMetric(t, c, "metad_peer_rpcs_refused_total", false); got != 0 {
		t.Errorf("metad_peer_rpcs_refused_total: %v peer connections or RPCs refused during the drill", got)
	}

	// Fresh handshakes show the new CA's certificates on every listener.
	newPool := x509.NewCertPool()
	newPool.AddCert(newCA.Cert)
	for _, p := range c.Nodes {
		memberCert, memberKey := tlsconf.MemberFiles(c.PKI.Dir, p.Name)
		pair, err := tls.LoadX509KeyPair(memberCert, memberKey)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []struct{ name, addr string }{{"client", p.Client}, {"peer", p.Peer}, {"metrics", p.Metrics}} {
			cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: newPool, Certificates: []tls.Certificate{pair}}
			conn, err := tls.DialWithDialer(&netDialer, "tcp", l.addr, cfg)
			if err != nil {
				t.Errorf("%s's %s listener: a handshake trusting only the new CA: %v", p.Name, l.name, err)
				continue
			}
			leaf := conn.ConnectionState().PeerCertificates[0]
			_ = conn.Close()
			if err := leaf.CheckSignatureFrom(newCA.Cert); err != nil {
				t.Errorf("%s's %s listener serves a certificate the new CA did not sign: %v", p.Name, l.name, err)
			}
			if id, err := tlsconf.IdentityOf(leaf); err != nil || id != (tlsconf.Identity{Kind: tlsconf.Member, Name: p.Name}) {
				t.Errorf("%s's %s listener serves %v (%v)", p.Name, l.name, id, err)
			}
		}
	}

	if l, tm := agreedLeader(t, ctx, root); l != leader || tm != term {
		t.Errorf("leader %s in term %d after the drill, was %s in term %d", l, tm, leader, term)
	}

	// root's old certificate, from the old CA, is refused now.
	old, err := client.New(client.Config{Endpoints: c.Endpoints()[:1], TLS: clientTLS(t, clientCA, oldRoot+".crt", oldRoot+".key"), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
	defer ocancel()
	_, err = old.Status(octx, c.Nodes[0].Client)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "tls: unknown certificate authority") {
		t.Fatalf("a client presenting a certificate of the removed CA: %v, want UNAVAILABLE naming the refused handshake", err)
	}
}

// TestClientCertRequired: with --client-cert-auth=require, a plaintext client and a client with
// a valid API key but no certificate are both refused, every time with an error that says why
// (server.TLSCredentials); root's certificate is served.
func TestClientCertRequired(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewSecureCluster(t, 1, "--client-cert-auth", "require")
	root := c.Client()
	c.Leader(root, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, err := root.CreateKey(ctx, "acme-app", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ep := c.Nodes[0].Client

	plain, err := client.New(client.Config{Endpoints: []string{ep}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	keyOnly, err := client.New(client.Config{Endpoints: []string{ep}, TLS: c.PKI.ClientTLS(t, ""), APIKey: key.GetToken(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer keyOnly.Close()
	for _, tc := range []struct {
		name string
		cl   *client.Client
		code codes.Code
		want string // in the error
	}{
		{"plaintext", plain, codes.Unauthenticated, server.PlaintextRefusal},
		{"API key without a certificate", keyOnly, codes.Unavailable, "tls: certificate required"},
	} {
		for range 3 { // a new connection each time: the client closes a failed one
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := tc.cl.Exist(cctx, "", "k")
			ccancel()
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s client: %v, want %v saying %q", tc.name, err, tc.code, tc.want)
			}
		}
	}
}

// load is the drill's traffic: loops that put and get until stopped, each request under its own
// deadline (stop lets the requests under way finish, so each one counts), counting what succeeded
// and keeping what failed. Safe for concurrent use.
type load struct {
	stopping atomic.Bool
	wg       sync.WaitGroup
	done     []atomic.Int64 // requests completed, per loop

	mu     sync.Mutex // guards failed
	failed []error
}

// startLoad runs, on every node: a long-lived root client (certificate) and a long-lived tenant
// client (API key); and one loop that opens a fresh client (a fresh handshake) per request, root
// and tenant in turn, over the nodes in turn.
func startLoad(t *testing.T, c *Cluster, rootTLS, keyTLS func() *tls.Config, token string) *load {
	t.Helper()
	l := &load{done: make([]atomic.Int64, 2*len(c.Nodes)+1)}
	config := func(ep string, byKey bool) client.Config {
		if byKey {
			return client.Config{Endpoints: []string{ep}, TLS: keyTLS(), APIKey: token}
		}
		return client.Config{Endpoints: []string{ep}, TLS: rootTLS()}
	}
	loop := 0
	for _, p := range c.Nodes {
		for _, byKey := range []bool{false, true} {
			cl, err := client.New(config(p.Client, byKey))
			if err != nil {
				t.Fatal(err)
			}
			name, n := fmt.Sprintf("%s-key%v", p.Name, byKey), &l.done[loop]
			loop++
			l.wg.Go(func() {
				defer cl.Close()
				for i := 0; !l.stopping.Load(); i++ {
					l.request(cl, fmt.Sprintf("%s-%d", name, i), byKey, n)
				}
			})
		}
	}
	n := &l.done[loop]
	l.wg.Go(func() {
		for i := 0; !l.stopping.Load(); i++ {
			byKey := i%2 == 1
			cl, err := client.New(config(c.Nodes[(i/2)%len(c.Nodes)].Client, byKey))
			if err != nil {
				l.fail(err)
				return
			}
			l.request(cl, fmt.Sprintf("fresh-%d", i), byKey, n)
			_ = cl.Close()
		}
	})
	return l
}

// request puts key and gets it back; byKey clients name no tenant on the get (their own).
func (l *load) request(cl *client.Client, key string, byKey bool, done *atomic.Int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Put(ctx, "acme", key, 4096, nil); err != nil {
		l.fail(fmt.Errorf("put %s: %w", key, err))
		return
	}
	tenant := "acme"
	if byKey {
		tenant = ""
	}
	if _, err := cl.Get(ctx, tenant, key); err != nil {
		l.fail(fmt.Errorf("get %s: %w", key, err))
		return
	}
	done.Add(1)
}

func (l *load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed = append(l.failed, err)
}

// progress waits until every loop has completed 3 more requests, failing the test if they do not
// within 20 s or if a request has failed.
func (l *load) progress(t *testing.T, when string) {
	t.Helper()
	from := make([]int64, len(l.done))
	for i := range l.done {
		from[i] = l.done[i].Load()
	}
	waitUntil(t, 20*time.Second, "3 requests of every client loop "+when, func() bool {
		if _, failed := l.result(); len(failed) > 0 {
			t.Fatalf("%s: %d requests failed; first: %v", when, len(failed), failed[0])
		}
		for i := range l.done {
			if l.done[i].Load() < from[i]+3 {
				return false
			}
		}
		return true
	})
}

// stop ends the load once the requests under way have finished. Idempotent.
func (l *load) stop() {
	l.stopping.Store(true)
	l.wg.Wait()
}

// result returns how many requests (a put and a get each) succeeded and the errors of those that
// failed.
func (l *load) result() (int64, []error) {
	var n int64
	for i := range l.done {
		n += l.done[i].Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return n, append([]error(nil), l.failed...)
}

// startBundleWorker runs `metactl worker` as root (the certificates directory's client
// certificate files, re-read at each handshake) trusting caFile, until the test ends.
func startBundleWorker(t *testing.T, c *Cluster, caFile string) {
	t.Helper()
	cert, key := tlsconf.ClientFiles(c.PKI.Dir, client.RootPrincipal)
	cmd := exec.Command(filepath.Join(c.Bin, "metactl"), append(c.metactlFlags("--cacert", caFile, "--cert", cert, "--key", key),
		"worker", "--segments", "2", "--segment-size", "64MiB")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("worker:\n%s", out.String())
		}
	})
}

// agreedLeader asks every node for its status and returns the leader and term they all name.
func agreedLeader(t *testing.T, ctx context.Context, cl *client.Client) (string, uint64) {
	t.Helper()
	var leader string
	var term uint64
	for i, st := range cl.StatusAll(ctx) {
		if st.Err != nil {
			t.Fatalf("status of %s: %v", st.Endpoint, st.Err)
		}
		l, tm := st.Status.GetLeaderName(), st.Status.GetTerm()
		if i == 0 {
			leader, term = l, tm
		} else if l != leader || tm != term {
			t.Fatalf("%s names leader %s in term %d, another node %s in term %d", st.Endpoint, l, tm, leader, term)
		}
	}
	return leader, term
}

// reloads returns every node's metad_tls_reloads_total{result="ok"}.
func reloads(t *testing.T, c *Cluster) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, p := range c.Nodes {
		m[p.Name] = reloadsOf(t, c, p)
	}
	return m
}

func reloadsOf(t *testing.T, c *Cluster, p *Proc) float64 {
	t.Helper()
	v, err := c.MetricValue(p, `metad_tls_reloads_total{result="ok"}`)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitReloaded waits until every node has loaded its files once more than in before.
func waitReloaded(t *testing.T, c *Cluster, before map[string]float64, what string) {
	t.Helper()
	for _, p := range c.Nodes {
		waitUntil(t, 10*time.Second, p.Name+" reloading "+what, func() bool { return reloadsOf(t, c, p) > before[p.Name] })
	}
}

// sumMetric is metric name summed over every node. A counter vector whose labels appear only
// once counted (unset) may have no sample on a page: that page counts 0.
func sumMetric(t *testing.T, c *Cluster, name string, unset bool) float64 {
	t.Helper()
	var sum float64
	for _, p := range c.Nodes {
		v, err := c.MetricValue(p, name)
		if err != nil && !(unset && strings.Contains(err.Error(), "no sample")) {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// clientTLS is client.TLSFromFiles, failing the test on error.
func clientTLS(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	cfg, err := client.TLSFromFiles(ca, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// netDialer bounds the drill's own handshakes.
var netDialer = net.Dialer{Timeout: 5 * time.Second}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// replaceFile replaces path's content as an operator's tooling does: a temp file in the same
// directory, renamed over it.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
