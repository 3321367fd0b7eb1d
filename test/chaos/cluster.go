package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/test/e2e"
)

// Cluster is three metad processes on loopback behind the fault-injecting network, plus the
// simulated workers. Its methods are safe for concurrent use (the fault loop and the end checks
// call them; the monitor reads PIDs through the network).
type Cluster struct {
	tb      testing.TB
	bin     string
	release string // the older release's binaries the nodes started on (NewClusterOf); "" for none
	dir     string // data dirs
	logDir  string // node and worker logs
	net     *Net
	flags   []string // extra metad flags for every node
	Nodes   []*Node
	// pki is the cluster's CA and certificates (member, root, the workers'); nil runs the cluster
	// in plaintext (--insecure). rootTLS presents root's client certificate (also to the metrics
	// reads); keyTLS presents none (the transport of a client that authenticates by API key).
	pki             *e2e.PKI
	rootTLS, keyTLS *tls.Config

	mu      sync.Mutex // guards workers and exits
	workers []*exec.Cmd
	exits   []string // processes that exited without being asked to
}

// Node is one metad member. Its addresses never change; its process does. Fields below mu are
// guarded by Cluster calls that hold it.
type Node struct {
	Index                  int
	Name                   string
	ClientListen           string // private: the monitor and the end checks dial it directly
	PeerListen             string // private
	Metrics                string
	DataDir                string
	ClientProxy, PeerProxy *Proxy

	mu       sync.Mutex // guards bin, cmd, done, paused, starts, stopping
	bin      string     // the directory of the metad it runs; "" for this tree's (Cluster.bin)
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd exits
	paused   bool
	starts   int
	stopping bool // the harness asked cmd to exit
}

// Client is the advertised client address (the proxy).
func (n *Node) Client() string { return n.ClientProxy.Addr() }

// Running reports whether the process is up (paused counts as up).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Current reports whether the node runs this tree's metad (not an older release's).
func (n *Node) Current() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bin == ""
}

// Exits lists the metad processes that exited without the harness asking them to.
func (c *Cluster) Exits() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.exits...)
}

// NewCluster builds the binaries once, starts the proxies and n metad processes, and registers
// their teardown with tb.Cleanup. flags go to every node. Unless insecure, every node runs with
// its member certificate of a PKI made in a temp dir (TLS on every listener, authentication on);
// the certificates name 127.0.0.1, so they verify through the proxies, which pass bytes through.
func NewCluster(tb testing.TB, n int, logDir string, insecure bool, flags ...string) (*Cluster, error) {
	tb.Helper()
	return NewClusterOf(tb, "", n, logDir, insecure, flags...)
}

// NewClusterOf is NewCluster whose nodes start on the metad in directory release (an older
// release's, e2e.BuildRelease; "" for this tree's), until Upgrade moves each to this tree's.
func NewClusterOf(tb testing.TB, release string, n int, logDir string, insecure bool, flags ...string) (*Cluster, error) {
	tb.Helper()
	c := &Cluster{tb: tb, bin: e2e.BuildBinaries(tb), release: release, dir: tb.TempDir(), logDir: logDir, net: NewNet(), flags: flags}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("n%d", i+1))
	}
	if !insecure {
		c.pki = e2e.NewPKI(tb, names...)
		cert, key := c.pki.Principal(tb, client.RootPrincipal)
		var err error
		if c.rootTLS, err = client.TLSFromFiles(c.pki.CAFile(), cert, key); err != nil {
			return nil, err
		}
		if c.keyTLS, err = client.TLSFromFiles(c.pki.CAFile(), "", ""); err != nil {
			return nil, err
		}
	}
	tb.Cleanup(c.Close)
	var initial []string
	for i := range n {
		nd := &Node{Index: i, Name: names[i], DataDir: filepath.Join(c.dir, names[i]), bin: release}
		var err error
		if nd.ClientProxy, err = c.net.Listen(i, "client"); err != nil {
			return nil, err
		}
		if nd.PeerProxy, err = c.net.Listen(i, "peer"); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, nd)
		initial = append(initial, nd.Name+"="+nd.PeerProxy.Addr())
	}
	// The proxies hold their ports, so the private ports chosen now cannot be theirs.
	ports := e2e.FreePorts(tb, 3*n)
	for i, nd := range c.Nodes {
		nd.ClientListen, nd.PeerListen, nd.Metrics = ports[3*i], ports[3*i+1], ports[3*i+2]
		nd.ClientProxy.Serve(nd.ClientListen)
		nd.PeerProxy.Serve(nd.PeerListen)
	}
	for _, nd := range c.Nodes {
		if err := c.start(nd, strings.Join(initial, ",")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Net is the cluster's fault-injecting network.
func (c *Cluster) Net() *Net { return c.net }

// Secure reports whether the cluster runs TLS and authentication (not CHAOS_INSECURE).
func (c *Cluster) Secure() bool { return c.pki != nil }

// Root returns cfg acting as root, the bootstrap admin, by its client certificate (in a secure
// cluster; cfg unchanged otherwise). The harness's own clients use it: the admin, the checks, the
// monitor, the probe, snapshots.
func (c *Cluster) Root(cfg client.Config) client.Config {
	if c.pki != nil {
		cfg.TLS = c.rootTLS
	}
	return cfg
}

// Auth is how one client authenticates: a TLS configuration and an API key, or nothing (a
// plaintext cluster). A plain value.
type Auth struct {
	TLS    *tls.Config
	APIKey string
}

// Apply returns cfg with a's credentials.
func (a Auth) Apply(cfg client.Config) client.Config {
	cfg.TLS, cfg.APIKey = a.TLS, a.APIKey
	return cfg
}

// TenantAuth binds tenant:<t> of every tenant to principal through admin (root) and creates an API
// key for it that never expires; the Auth returned presents that key over TLS with no client
// certificate. In a plaintext cluster it does nothing and returns the zero Auth.
func (c *Cluster) TenantAuth(ctx context.Context, admin *client.Client, principal string, tenants []string) (Auth, error) {
	if c.pki == nil {
		return Auth{}, nil
	}
	for _, t := range tenants {
		if err := admin.GrantRole(ctx, principal, "tenant:"+t); err != nil {
			return Auth{}, fmt.Errorf("grant tenant:%s to %s: %w", t, principal, err)
		}
	}
	key, err := admin.CreateKey(ctx, principal, 0)
	if err != nil {
		return Auth{}, fmt.Errorf("create a key for %s: %w", principal, err)
	}
	return Auth{TLS: c.keyTLS, APIKey: key.GetToken()}, nil
}

// Endpoints are the advertised client addresses (through the proxies).
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.Client())
	}
	return eps
}

func (c *Cluster) initial() string {
	var initial []string
	for _, nd := range c.Nodes {
		initial = append(initial, nd.Name+"="+nd.PeerProxy.Addr())
	}
	return strings.Join(initial, ",")
}

func (c *Cluster) start(n *Node, initial string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.done: // it exited by itself (reported by Exits): start it again
			n.cmd = nil
			c.net.SetPID(n.Index, 0)
		default:
			return nil
		}
	}
	args := append([]string{"--name", n.Name, "--data-dir", n.DataDir,
		"--listen-client", n.ClientListen, "--advertise-client", n.Client(),
		"--listen-peer", n.PeerListen, "--advertise-peer", n.PeerProxy.Addr(),
		"--listen-metrics", n.Metrics, "--initial-cluster", initial}, c.memberFlags(n)...)
	args = append(args, c.flags...)
	logf, err := os.OpenFile(filepath.Join(c.logDir, n.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.starts++
	bin := c.bin
	if n.bin != "" {
		bin = n.bin
	}
	fmt.Fprintf(logf, "=== start %d: %s %s\n", n.starts, filepath.Join(bin, "metad"), strings.Join(args, " "))
	cmd := exec.Command(filepath.Join(bin, "metad"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	done := make(chan struct{})
	start := n.starts
	go func() {
		err := cmd.Wait()
		_ = logf.Close()
		n.mu.Lock()
		asked := n.stopping
		n.mu.Unlock()
		if !asked {
			c.mu.Lock()
			c.exits = append(c.exits, fmt.Sprintf("%s (start %d) exited by itself: %v; see logs/%s.log", n.Name, start, err, n.Name))
			c.mu.Unlock()
		}
		close(done)
	}()
	n.cmd, n.done, n.paused, n.stopping = cmd, done, false, false
	c.net.SetPID(n.Index, cmd.Process.Pid)
	return nil
}

// memberFlags are n's security flags: its member certificate and the CA, or --insecure.
func (c *Cluster) memberFlags(n *Node) []string {
	if c.pki == nil {
		return []string{"--insecure"}
	}
	return c.pki.MemberFlags(n.Name)
}

// Start restarts a node from its data dir (no-op when it runs).
func (c *Cluster) Start(n *Node) error { return c.start(n, c.initial()) }

// Kill sends SIGKILL and waits for the process to exit.
func (c *Cluster) Kill(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c.killLocked(n)
}

func (c *Cluster) killLocked(n *Node) {
	if n.cmd == nil {
		return
	}
	n.stopping = true
	_ = n.cmd.Process.Kill()
	n.mu.Unlock() // the wait goroutine reads stopping
	<-n.done
	n.mu.Lock()
	n.cmd, n.paused = nil, false
	c.net.SetPID(n.Index, 0)
}

// Stop sends SIGTERM (leadership is handed over) and waits up to 20 s, then kills.
func (c *Cluster) Stop(n *Node) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil
	}
	if n.paused {
		_ = n.cmd.Process.Signal(syscall.SIGCONT)
		n.paused = false
	}
	n.stopping = true
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := n.done
	n.mu.Unlock() // the wait goroutine reads stopping
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case <-done:
		n.mu.Lock()
		n.cmd = nil
		c.net.SetPID(n.Index, 0)
		return nil
	case <-t.C:
		n.mu.Lock()
		c.killLocked(n)
		return fmt.Errorf("%s did not stop within 20s of SIGTERM", n.Name)
	}
}

// Upgrade stops n (SIGTERM: a leader hands leadership over) and starts it again from its data
// dir on this tree's metad, as a rolling upgrade restarts a member on the new binary.
func (c *Cluster) Upgrade(n *Node) error {
	if err := c.Stop(n); err != nil {
		return err
	}
	n.mu.Lock()
	n.bin = ""
	n.mu.Unlock()
	return c.Start(n)
}

// Pause sends SIGSTOP.
func (c *Cluster) Pause(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && !n.paused {
		_ = n.cmd.Process.Signal(syscall.SIGSTOP)
		n.paused = true
	}
}

// Resume sends SIGCONT.
func (c *Cluster) Resume(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.paused {
		_ = n.cmd.Process.Signal(syscall.SIGCONT)
		n.paused = false
	}
}

// HealAll resumes paused nodes, starts stopped ones and makes every link pass.
func (c *Cluster) HealAll() error {
	c.net.Heal()
	var errs []error
	for _, n := range c.Nodes {
		c.Resume(n)
		errs = append(errs, c.Start(n))
	}
	return errors.Join(errs...)
}

// StartWorker runs `metactl worker` as client id (a fresh UUID) against the proxies until Close.
// In a secure cluster the worker is its own principal, name, by a client certificate, and admin
// (root) binds it worker:<client id> first: it may mount, unmount and ping for that id only. Its
// output goes to the log directory; extra are more of its flags.
func (c *Cluster) StartWorker(ctx context.Context, admin *client.Client, name string, segments int, size string, extra ...string) error {
	id := client.NewUUID()
	args := []string{"--endpoints", strings.Join(c.Endpoints(), ","), "--timeout", "3s"}
	if c.pki != nil {
		if err := admin.GrantRole(ctx, name, "worker:"+id.String()); err != nil {
			return fmt.Errorf("grant worker:%s to %s: %w", id, name, err)
		}
		cert, key := c.pki.Principal(c.tb, name)
		args = append(args, "--cacert", c.pki.CAFile(), "--cert", cert, "--key", key)
	} else {
		args = append(args, "--certs-dir", filepath.Join(c.dir, "no-certs")) // plaintext even if ./data/certs exists
	}
	args = append(args, "worker", "--client", id.String(), "--segments", fmt.Sprint(segments), "--segment-size", size)
	args = append(args, extra...)
	logf, err := os.Create(filepath.Join(c.logDir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, "metactl"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	c.mu.Lock()
	c.workers = append(c.workers, cmd)
	c.mu.Unlock()
	return nil
}

// Expiries reports every sign that a client was expired: each running node's
// metad_server_clients_expired_total (a node restarted since counts from its restart) and each
// worker log line saying the worker found its segments gone and remounted them.
func (c *Cluster) Expiries() ([]string, error) {
	var out []string
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		v, err := e2e.MetricValueTLS(c.rootTLS, n.Metrics, "metad_server_clients_expired_total")
		if err != nil {
			return out, fmt.Errorf("%s: %w", n.Name, err)
		}
		if v != 0 {
			out = append(out, fmt.Sprintf("%s expired %v clients", n.Name, v))
		}
	}
	logs, err := filepath.Glob(filepath.Join(c.logDir, "worker*.log"))
	if err != nil {
		return out, err
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			return out, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "remounting") {
				out = append(out, filepath.Base(path)+": "+line)
			}
		}
	}
	return out, nil
}

// Close stops the workers and every node, and closes the network. Idempotent.
func (c *Cluster) Close() {
	c.mu.Lock()
	workers := c.workers
	c.workers = nil
	c.mu.Unlock()
	for _, w := range workers {
		_ = w.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = w.Process.Kill()
			<-done
		}
	}
	c.net.Heal()
	for _, n := range c.Nodes {
		if err := c.Stop(n); err != nil {
			c.tb.Logf("chaos: %v", err)
		}
	}
	c.net.Close()
}

// direct returns a client (root) for node n's private client port: one attempt per call, no
// redirects. The monitor and the end checks use it so that faults never hide what a node says.
func (c *Cluster) direct(n *Node) (*client.Client, error) {
	return client.New(c.Root(client.Config{Endpoints: []string{n.ClientListen}, MaxRetries: -1,
		DialTimeout: 500 * time.Millisecond}))
}

// WaitLeader polls (through the private ports) until one running node says it leads and every
// running node names it, and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, cls []*client.Client) (*Node, error) {
	for {
		var leader *Node
		var named []string
		agree := true
		for i, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			st, err := cls[i].Status(sctx, n.ClientListen)
			cancel()
			if err != nil {
				agree = false
				continue
			}
			if st.GetRole() == metadv1.NodeRole_NODE_ROLE_LEADER {
				leader = n
			}
			named = append(named, st.GetLeaderName())
		}
		for _, nm := range named {
			agree = agree && leader != nil && nm == leader.Name
		}
		if leader != nil && agree {
			return leader, nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("no leader agreed on: %w", ctx.Err())
		case <-t.C:
		}
	}
}
