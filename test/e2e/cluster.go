package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// Cluster is three (or more) metad processes on loopback, started from binaries built once per
// test binary. Safe for use from one test goroutine.
type Cluster struct {
	T       testing.TB
	Bin     string // directory with metad and metactl
	Dir     string
	Nodes   []*Proc
	Initial string // --initial-cluster
	// PKI, when set, runs the cluster secure: every node with its member certificate, clients and
	// metactl as root (the bootstrap admin) over TLS. nil: plaintext (--insecure).
	PKI  *PKI
	fast bool // short Raft timeouts
}

// Proc is one metad process and its addresses.
type Proc struct {
	Name, Client, Peer, Metrics, DataDir string
	Extra                                []string
	cmd                                  *exec.Cmd
	log                                  *bytes.Buffer
	done                                 chan error
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// BuildBinaries builds metad and metactl once into a temp directory and returns it.
func BuildBinaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "metad-e2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", buildDir+string(filepath.Separator), "metad/cmd/metad", "metad/cmd/metactl")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildDir
}

// FreePorts returns n loopback addresses that were free a moment ago, drawn below the kernel's
// ephemeral range: a port the kernel could give to an outgoing connection may be taken by one (the
// tests open thousands) between this check and the process that binds it. Port 0 where that range
// is too narrow to draw from.
func FreePorts(tb testing.TB, n int) []string {
	tb.Helper()
	low, high := 20000, ephemeralLow()
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		var l net.Listener
		var err error
		for range 64 {
			port := 0
			if high-low >= 1024 {
				port = low + rand.IntN(high-low)
			}
			if l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				break
			}
		}
		if err != nil {
			tb.Fatalf("no free loopback port in [%d, %d) after 64 tries: %v", low, high, err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out
}

// ephemeralLow is the lowest port the kernel hands out for outgoing connections and port 0
// (Linux's ip_local_port_range; 32768 where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	v, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return v
}

// NewCluster starts n metad processes bootstrapping one new cluster, with short Raft timeouts
// (300 ms) so tests finish quickly. extra flags go to every node.
func NewCluster(tb testing.TB, n int, extra ...string) *Cluster {
	return newCluster(tb, n, true, false, extra...)
}

// NewClusterDefaults is NewCluster with metad's default timeouts (for the failover figures).
func NewClusterDefaults(tb testing.TB, n int, extra ...string) *Cluster {
	return newCluster(tb, n, false, false, extra...)
}

// NewSecureCluster is NewCluster with TLS everywhere and authentication on (Cluster.PKI).
func NewSecureCluster(tb testing.TB, n int, extra ...string) *Cluster {
	return newCluster(tb, n, true, true, extra...)
}

func newCluster(tb testing.TB, n int, fast, secure bool, extra ...string) *Cluster {
	tb.Helper()
	c := &Cluster{T: tb, Bin: BuildBinaries(tb), Dir: tb.TempDir(), fast: fast}
	if secure {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("n%d", i+1))
		}
		c.PKI = NewPKI(tb, names...)
	}
	ports := FreePorts(tb, 3*n)
	var initial []string
	for i := range n {
		p := &Proc{Name: fmt.Sprintf("n%d", i+1), Client: ports[3*i], Peer: ports[3*i+1], Metrics: ports[3*i+2],
			DataDir: filepath.Join(c.Dir, fmt.Sprintf("n%d", i+1)), Extra: extra}
		c.Nodes = append(c.Nodes, p)
		initial = append(initial, p.Name+"="+p.Peer)
	}
	c.Initial = strings.Join(initial, ",")
	tb.Cleanup(c.StopAll)
	for _, p := range c.Nodes {
		c.Start(p)
	}
	return c
}

// Start (re)starts a node from its data dir.
func (c *Cluster) Start(p *Proc) {
	c.T.Helper()
	args := []string{"--name", p.Name, "--data-dir", p.DataDir, "--listen-client", p.Client, "--listen-peer", p.Peer,
		"--listen-metrics", p.Metrics, "--initial-cluster", c.Initial}
	if c.PKI != nil {
		args = append(args, c.PKI.MemberFlags(p.Name)...)
	} else {
		args = append(args, "--insecure")
	}
	if c.fast {
		args = append(args, "--heartbeat-timeout", "300ms", "--election-timeout", "300ms", "--leader-lease-timeout", "150ms")
	}
	args = append(args, p.Extra...)
	p.cmd = exec.Command(filepath.Join(c.Bin, "metad"), args...)
	p.log = &bytes.Buffer{}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	p.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(p.cmd, p.done)
}

// Kill sends SIGKILL and waits for the process to exit.
func (c *Cluster) Kill(p *Proc) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	p.cmd = nil
}

// Stop sends SIGTERM (and SIGCONT, in case it is paused) and returns the exit error (nil for a
// clean exit) after at most 20 s.
func (c *Cluster) Stop(p *Proc) error {
	if p.cmd == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case err := <-p.done:
		p.cmd = nil
		return err
	case <-time.After(20 * time.Second):
		c.Kill(p)
		return fmt.Errorf("%s did not stop within 20s after SIGTERM", p.Name)
	}
}

// Pause sends SIGSTOP: the process keeps its sockets (peers' connections stay open, its kernel
// still accepts connections) but answers nothing, as a node stalled by the machine would.
func (c *Cluster) Pause(p *Proc) {
	c.T.Helper()
	if p.cmd == nil {
		c.T.Fatalf("pause %s: not running", p.Name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.T.Fatalf("pause %s: %v", p.Name, err)
	}
}

// Resume sends SIGCONT to a paused process (harmless on one that runs or has exited).
func (c *Cluster) Resume(p *Proc) {
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// MetricValue reads p's /metrics (in a secure cluster as root, by certificate) and returns the
// sum of the samples of metric name (every label set); a page with no sample of it is an error (a
// renamed metric must not read as 0).
func (c *Cluster) MetricValue(p *Proc, name string) (float64, error) {
	if c.PKI != nil {
		return metricValue(c.PKI.ClientTLS(c.T, client.RootPrincipal), p.Metrics, name)
	}
	return MetricValue(p.Metrics, name)
}

// MetricValue reads the /metrics page served at addr and returns the sum of the samples of metric
// name (every label set); a page with no sample of it is an error (a renamed metric must not read
// as 0).
func MetricValue(addr, name string) (float64, error) { return metricValue(nil, addr, name) }

// metricValue is MetricValue over HTTPS with tlsCfg (nil: plain HTTP).
func metricValue(tlsCfg *tls.Config, addr, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	scheme, hc := "http://", http.DefaultClient
	if tlsCfg != nil {
		scheme, hc = "https://", &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		defer hc.CloseIdleConnections()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	found := false
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %v", name, line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("%s: no sample on %s/metrics", name, addr)
	}
	return sum, nil
}

// StopAll stops every running node (SIGTERM, then SIGKILL).
func (c *Cluster) StopAll() {
	for _, p := range c.Nodes {
		if err := c.Stop(p); err != nil {
			c.T.Logf("%s: %v\n%s", p.Name, err, p.log)
		}
	}
}

// Endpoints returns the client addresses of all nodes.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, p := range c.Nodes {
		eps = append(eps, p.Client)
	}
	return eps
}

// Client returns a Go client over all endpoints (in a secure cluster: root, by certificate).
func (c *Cluster) Client() *client.Client {
	c.T.Helper()
	cfg := client.Config{Endpoints: c.Endpoints()}
	if c.PKI != nil {
		cfg.TLS = c.PKI.ClientTLS(c.T, client.RootPrincipal)
	}
	cl, err := client.New(cfg)
	if err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Leader polls until the running nodes agree on a leader, and returns it.
func (c *Cluster) Leader(cl *client.Client, within time.Duration) *Proc {
	c.T.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sts := cl.StatusAll(ctx)
		cancel()
		for _, st := range sts {
			if st.Err == nil && st.Status.GetRole() == metadv1.NodeRole_NODE_ROLE_LEADER {
				for _, p := range c.Nodes {
					if p.Client == st.Endpoint && p.cmd != nil {
						return p
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.T.Fatalf("no leader within %s", within)
	return nil
}

// Metactl runs the metactl binary against the cluster and returns its output.
func (c *Cluster) Metactl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Bin, "metactl"), append(c.metactlFlags("--timeout", "10s"), args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// StartWorker runs `metactl worker` (mounted segments kept alive by pings; extra: more of its
// flags) until the test ends.
func (c *Cluster) StartWorker(segments int, size string, extra ...string) {
	c.T.Helper()
	cmd := exec.Command(filepath.Join(c.Bin, "metactl"), append(append(c.metactlFlags(),
		"worker", "--segments", fmt.Sprint(segments), "--segment-size", size), extra...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.T.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// metactlFlags are metactl's global flags for this cluster: its endpoints, and in a secure
// cluster its certificates directory (root's client certificate), then more.
func (c *Cluster) metactlFlags(more ...string) []string {
	f := []string{"--endpoints", strings.Join(c.Endpoints(), ",")}
	if c.PKI != nil {
		f = append(f, "--certs-dir", c.PKI.Dir)
	} else {
		f = append(f, "--certs-dir", filepath.Join(c.Dir, "no-certs")) // plaintext even if ./data/certs exists
	}
	return append(f, more...)
}
