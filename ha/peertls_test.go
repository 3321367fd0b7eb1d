package ha

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"metad/tlsconf"
)

// Peer TLS tests: certificates from tlsconf in t.TempDir(), plain *tls.Config built from the files,
// real nodes on loopback.

// testPKI is a cluster CA in a temp dir with member certificates for 127.0.0.1.
type testPKI struct {
	t   *testing.T
	dir string
	ca  *tlsconf.CA
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{t: t, dir: dir, ca: ca}
}

func (p *testPKI) pool() *x509.CertPool {
	p.t.Helper()
	pem, err := os.ReadFile(filepath.Join(p.dir, tlsconf.CACertFile))
	if err != nil {
		p.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		p.t.Fatal("no CA certificate in ca.crt")
	}
	return pool
}

// member issues (once) and loads member name's certificate.
func (p *testPKI) member(name string, o tlsconf.Options) tls.Certificate {
	p.t.Helper()
	certPath, keyPath := tlsconf.MemberFiles(p.dir, name)
	if _, err := os.Stat(certPath); err != nil {
		if _, _, err := p.ca.IssueMember(p.dir, name, []string{"127.0.0.1"}, o); err != nil {
			p.t.Fatal(err)
		}
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// client issues and loads principal name's client certificate.
func (p *testPKI) client(name string) tls.Certificate {
	p.t.Helper()
	certPath, keyPath, err := p.ca.IssueClient(p.dir, name, tlsconf.Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// peerTLS is member name's PeerTLS.
func (p *testPKI) peerTLS(name string) *PeerTLS {
	cert := p.member(name, tlsconf.Options{})
	pool := p.pool()
	return &PeerTLS{
		Server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool},
		Client: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool},
	}
}

// clientConfig trusts this CA and presents cert (none when nil).
func (p *testPKI) clientConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: p.pool()}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

func newTLSCluster(t *testing.T, pki *testPKI, tweak func(*Config)) *testCluster {
	return newTestCluster(t, 3, func(cfg *Config) {
		cfg.PeerTLS = pki.peerTLS(cfg.Name)
		if tweak != nil {
			tweak(cfg)
		}
	})
}

func refused(n *Node, reason string) float64 {
	return testutil.ToFloat64(n.metrics.peerRefused.WithLabelValues(reason))
}

func (c *testCluster) noneRefused() {
	c.t.Helper()
	for name, n := range c.nodes {
		for _, r := range refusedReasons {
			if v := refused(n, r); v != 0 {
				c.t.Errorf("%s refused %v peer connections of its own cluster (%s)", name, v, r)
			}
		}
	}
}

func TestPeerTLSClusterReplicatesAndFailsOver(t *testing.T) {
	c := newTLSCluster(t, newTestPKI(t), nil)
	c.propose(mountCmd())
	for i := range 20 {
		c.put(fmt.Sprintf("a%02d", i))
	}
	c.waitConverged()
	// A planned handover (TimeoutNow) through the gate, then a crash.
	l := c.waitLeader()
	to := c.otherThan(l.cfg.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := l.TransferLeader(ctx, to); err != nil || got != to {
		t.Fatalf("transfer to %s: got %s, %v", to, got, err)
	}
	c.waitFor("the target to be a ready leader", 5*time.Second, func() bool { x := c.leader(); return x != nil && x.cfg.Name == to })
	c.put("after-transfer")
	old := c.waitLeader()
	oldName := old.cfg.Name
	_ = old.Kill()
	delete(c.nodes, oldName)
	nl := c.waitLeader()
	if nl.cfg.Name == oldName {
		t.Fatal("killed node is leader")
	}
	c.put("after-failover")
	c.start(oldName)
	c.waitConverged()
	if !c.readable(c.nodes[oldName], "after-failover") {
		t.Fatal("restarted node did not catch up")
	}
	c.noneRefused()
}

// A snapshot's raw bytes follow its InstallSnapshot request on the connection: the gate passes
// them through and the lagging node gets the state. The nodes run raft-boltdb: raft-wal still
// serves compacted entries from its tail segment, so on it the lagging node would catch up from
// the log and no snapshot would cross the gate.
func TestPeerTLSSnapshotInstall(t *testing.T) {
	c := newTLSCluster(t, newTestPKI(t), func(cfg *Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 20, 5, 50*time.Millisecond
		cfg.LogStore = LogStoreBolt
	})
	c.propose(mountCmd())
	l := c.waitLeader()
	lagger := c.otherThan(l.cfg.Name)
	_ = c.nodes[lagger].Kill()
	delete(c.nodes, lagger)
	for i := range 100 {
		c.put(fmt.Sprintf("s%03d", i))
	}
	c.waitFor("a snapshot on the leader", 10*time.Second, func() bool { return c.waitLeader().Status().LastSnapshotIndex > 0 })
	c.start(lagger)
	c.waitConverged()
	if !c.readable(c.nodes[lagger], "s099") {
		t.Fatal("lagging node did not get the state")
	}
	if c.nodes[lagger].Status().LastSnapshotIndex == 0 {
		t.Fatal("the lagging node caught up without a snapshot")
	}
	c.noneRefused()
}

// otherThan is the name of a running node other than the given ones.
func (c *testCluster) otherThan(names ...string) string {
	c.t.Helper()
next:
	for name := range c.nodes {
		for _, n := range names {
			if name == n {
				continue next
			}
		}
		return name
	}
	c.t.Fatalf("no node other than %v", names)
	return ""
}

// sendRPC sends one RPC frame on conn as raft's network transport does and reads the answer.
func sendRPC(conn net.Conn, typ uint8, req, resp any) error {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	w := bufio.NewWriter(conn)
	_ = w.WriteByte(typ)
	if err := codec.NewEncoder(w, &codec.MsgpackHandle{}).Encode(req); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	dec := codec.NewDecoder(bufio.NewReader(conn), &codec.MsgpackHandle{})
	var rpcErr string
	if err := dec.Decode(&rpcErr); err != nil {
		return err
	}
	if err := dec.Decode(resp); err != nil {
		return err
	}
	if rpcErr != "" {
		return fmt.Errorf("rpc error: %s", rpcErr)
	}
	return nil
}

func dialPeer(t *testing.T, n *Node, cfg *tls.Config) net.Conn {
	t.Helper()
	var conn net.Conn
	var err error
	if cfg == nil {
		conn, err = net.DialTimeout("tcp", n.PeerAddr(), 5*time.Second)
	} else {
		conn, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.PeerAddr(), cfg)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", n.PeerAddr(), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// voteFrom is a RequestVote for a term far ahead, from the named member, that a follower would
// act on (a leadership transfer's vote skips the known-leader check): without the gate it moves
// the target's term.
func voteFrom(target *Node, name, addr string) *raft.RequestVoteRequest {
	return &raft.RequestVoteRequest{
		RPCHeader:          raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(name), Addr: []byte(addr)},
		Term:               target.raft.CurrentTerm() + 1000,
		LastLogIndex:       target.raft.LastIndex() + 1000,
		LastLogTerm:        target.raft.CurrentTerm() + 1000,
		LeadershipTransfer: true,
	}
}

var marker = []byte("appended-by-an-impersonator")

// appendFrom is an AppendEntries from the named member in the target's current term that extends
// its log by one entry holding marker: without the gate a follower appends it.
func appendFrom(t *testing.T, target *Node, name, addr string) *raft.AppendEntriesRequest {
	t.Helper()
	// The target's last entry, read from its log store: on a loaded box a leader elected just now
	// may be truncating the target's tail as this reads it, so a miss is read again (bounded).
	var prev raft.Log
	var last uint64
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if last, err = target.stores.Log.LastIndex(); err == nil {
			if err = target.stores.Log.GetLog(last, &prev); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target's last log entry (%d): %v", last, err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	return &raft.AppendEntriesRequest{
		RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(name), Addr: []byte(addr)},
		Term:         target.raft.CurrentTerm(),
		PrevLogEntry: last,
		PrevLogTerm:  prev.Term,
		Entries:      []*raft.Log{{Index: last + 1, Term: target.raft.CurrentTerm(), Type: raft.LogCommand, Data: marker}},
	}
}

func hasMarker(t *testing.T, n *Node) bool {
	t.Helper()
	first, _ := n.stores.Log.FirstIndex()
	last, _ := n.stores.Log.LastIndex()
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := n.stores.Log.GetLog(i, &l); err == nil && bytes.Equal(l.Data, marker) {
			return true
		}
	}
	return false
}

// A peer holding n2's valid certificate cannot vote or append as n3: the connection is closed
// before the RPC reaches the target's Raft, and the refusal is counted.
func TestPeerTLSRefusesImpersonation(t *testing.T) {
	pki := newTestPKI(t)
	c := newTLSCluster(t, pki, nil)
	c.waitLeader()
	// The target is a follower other than n3; the impersonator speaks with n2's certificate.
	target := c.nodes[c.otherThan("n3", c.waitLeader().cfg.Name)]
	n2 := pki.member("n2", tlsconf.Options{})
	n3Addr := c.nodes["n3"].PeerAddr()

	// Control: n2 speaking as itself is heard (a stale vote, refused by Raft, changes nothing).
	stale := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte("n2"), Addr: []byte(c.nodes["n2"].PeerAddr())}}
	var vr raft.RequestVoteResponse
	if err := sendRPC(dialPeer(t, target, pki.clientConfig(&n2)), rpcRequestVote, stale, &vr); err != nil {
		t.Fatalf("n2 speaking as itself: %v", err)
	}
	if vr.Granted {
		t.Fatal("a stale vote was granted")
	}

	var ar raft.AppendEntriesResponse
	err := sendRPC(dialPeer(t, target, pki.clientConfig(&n2)), rpcAppendEntries, appendFrom(t, target, "n3", n3Addr), &ar)
	if err == nil {
		t.Errorf("AppendEntries claiming n3 on n2's certificate was answered (success %v)", ar.Success)
	}
	if hasMarker(t, target) {
		t.Error("the impersonator's entry was appended")
	}

	vote := voteFrom(target, "n3", n3Addr)
	err = sendRPC(dialPeer(t, target, pki.clientConfig(&n2)), rpcRequestVote, vote, &vr)
	if err == nil {
		t.Errorf("RequestVote claiming n3 on n2's certificate was answered (granted %v)", vr.Granted)
	}
	if term := target.raft.CurrentTerm(); term >= vote.Term {
		t.Errorf("the target's term moved to %d", term)
	}

	// A RequestVote naming no sender is refused too (raft skips its membership checks for it).
	anon := voteFrom(target, "", n3Addr)
	if err := sendRPC(dialPeer(t, target, pki.clientConfig(&n2)), rpcRequestVote, anon, &vr); err == nil {
		t.Error("RequestVote naming no sender was answered")
	}
	if got := refused(target, refusedMismatch); got != 2 {
		t.Errorf("sender_mismatch refusals: %v, want 2", got)
	}
	if got := refused(target, refusedNoSender); got != 1 {
		t.Errorf("no_sender refusals: %v, want 1", got)
	}
}

// Plaintext, a certificate from another CA, an expired certificate and a client (principal)
// certificate cannot reach Raft: each connection is closed and its vote never counts.
func TestPeerTLSRefusesBadPeers(t *testing.T) {
	pki := newTestPKI(t)
	c := newTLSCluster(t, pki, nil)
	leader := c.waitLeader()
	target := c.nodes[c.otherThan(leader.cfg.Name)]
	name := c.otherThan(leader.cfg.Name, target.cfg.Name) // the member each bad peer claims to be

	other := newTestPKI(t)
	otherCert := other.member(name, tlsconf.Options{})
	expiredPKI := &testPKI{t: t, dir: t.TempDir(), ca: pki.ca}
	expired := expiredPKI.member(name, tlsconf.Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour})
	principal := pki.client(name)

	for _, tc := range []struct {
		what   string
		cfg    *tls.Config
		reason string
	}{
		{"plaintext", nil, refusedHandshake},
		{"no certificate", pki.clientConfig(nil), refusedHandshake},
		{"another CA", pki.clientConfig(&otherCert), refusedHandshake},
		{"expired", pki.clientConfig(&expired), refusedHandshake},
		{"client certificate", pki.clientConfig(&principal), refusedNotMember},
	} {
		before := refused(target, tc.reason)
		vote := voteFrom(target, name, c.nodes[name].PeerAddr())
		var vr raft.RequestVoteResponse
		if err := sendRPC(dialPeer(t, target, tc.cfg), rpcRequestVote, vote, &vr); err == nil {
			t.Errorf("%s: the vote was answered (granted %v)", tc.what, vr.Granted)
		}
		if term := target.raft.CurrentTerm(); term >= vote.Term {
			t.Errorf("%s: the target's term moved to %d", tc.what, term)
		}
		c.waitFor(tc.what+" counted", 5*time.Second, func() bool { return refused(target, tc.reason) > before })
	}
}

// A node's transport refuses a server config that does not require verified client certificates.
func TestPeerTLSConfigChecked(t *testing.T) {
	pki := newTestPKI(t)
	weak := pki.peerTLS("n1")
	weak.Server.ClientAuth = tls.VerifyClientCertIfGiven
	for what, p := range map[string]*PeerTLS{
		"weak client auth": weak,
		"no client config": {Server: pki.peerTLS("n1").Server},
	} {
		cfg := testConfig("n1", t.TempDir())
		cfg.PeerTLS = p
		if _, err := NewNode(cfg, nil, nil); err == nil {
			t.Errorf("%s: the node started", what)
		}
	}
}

// The gate reads exactly one frame: the bytes it releases are the frame as sent, and the next byte
// on the connection (snapshot data, the next frame) is left unread.
func TestPeerFrameReadsNoFurther(t *testing.T) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("127.0.0.1:1")}
	frames := []struct {
		typ  uint8
		req  any
		tail int64
	}{
		{rpcAppendEntries, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3, PrevLogEntry: 9, PrevLogTerm: 2, LeaderCommitIndex: 8,
			Entries: []*raft.Log{{Index: 10, Term: 3, Data: bytes.Repeat([]byte{0xab}, 70000), AppendedAt: time.Now()}, {Index: 11, Term: 3}}}, 0},
		{rpcInstallSnapshot, &raft.InstallSnapshotRequest{RPCHeader: hdr, Term: 3, LastLogIndex: 11, Size: 5000}, 5000},
		{rpcRequestVote, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 4}, 0},
		{rpcRequestPreVote, &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 4}, 0},
		{rpcTimeoutNow, &raft.TimeoutNowRequest{RPCHeader: hdr}, 0},
	}
	var stream bytes.Buffer
	var want [][]byte
	for _, f := range frames {
		var one bytes.Buffer
		one.WriteByte(f.typ)
		// As the transport encodes (net_transport.go: TimeNotBuiltin unless the new time format is asked for).
		h := &codec.MsgpackHandle{}
		h.TimeNotBuiltin = true
		if err := codec.NewEncoder(&one, h).Encode(f.req); err != nil {
			t.Fatal(err)
		}
		want = append(want, one.Bytes())
		stream.Write(one.Bytes())
		stream.Write(bytes.Repeat([]byte{0xee}, int(f.tail))) // snapshot data: not msgpack
	}
	r := &frameReader{br: bufio.NewReaderSize(&stream, 4096)}
	dec := codec.NewDecoder(r, &codec.MsgpackHandle{})
	for i, f := range frames {
		got, err := readFrame(r, dec)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got.bytes, want[i]) {
			t.Fatalf("frame %d: read %d bytes, the frame has %d", i, len(got.bytes), len(want[i]))
		}
		if got.sender != "n2" || got.snapshotBytes != f.tail {
			t.Fatalf("frame %d: sender %q, snapshot bytes %d", i, got.sender, got.snapshotBytes)
		}
		if f.tail > 0 {
			tail := make([]byte, f.tail)
			if _, err := io.ReadFull(r.br, tail); err != nil || !bytes.Equal(tail, bytes.Repeat([]byte{0xee}, int(f.tail))) {
				t.Fatalf("frame %d: the snapshot data after it was not left unread: %v", i, err)
			}
		}
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		t.Fatalf("bytes left after the last frame: %v", err)
	}
	bad := &frameReader{br: bufio.NewReader(bytes.NewReader([]byte{7, 0x80}))}
	if _, err := readFrame(bad, codec.NewDecoder(bad, &codec.MsgpackHandle{})); err == nil {
		t.Fatal("an unknown RPC type was read as a frame")
	}
}

// TestReplicationIsNotPipelined: neither transport offers raft its AppendEntries pipeline
// (peerMaxInFlight), whose decoder can stop reading answers while the replication loop still
// sends, leaving a follower without entries and Shutdown waiting forever.
func TestReplicationIsNotPipelined(t *testing.T) {
	pki := newTestPKI(t)
	for _, c := range []struct {
		name  string
		tweak func(*Config)
	}{
		{"tcp", nil},
		{"tls", func(cfg *Config) { cfg.PeerTLS = pki.peerTLS(cfg.Name) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newTestCluster(t, 3, c.tweak)
			l := cl.waitLeader()
			for name, n := range cl.nodes {
				if n == l {
					continue
				}
				p, err := l.transport.AppendEntriesPipeline(raft.ServerID(name), raft.ServerAddress(n.PeerAddr()))
				if p != nil {
					_ = p.Close()
				}
				if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
					t.Fatalf("pipeline to %s: %v, want ErrPipelineReplicationNotSupported", name, err)
				}
			}
		})
	}
}
