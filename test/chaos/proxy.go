package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// The network: every node's peer port and client port sit behind a Proxy on loopback, and the
// nodes are told the proxies' addresses (--advertise-peer, --advertise-client, --initial-cluster),
// so every Raft connection and every forwarded call crosses a proxy. A proxy knows the node it
// fronts; it learns which node a connection comes from by finding the process that owns the
// connecting socket (Linux /proc: the socket's inode in /proc/net/tcp, then the node's
// /proc/<pid>/fd). Connections from any other process (the drill's clients, the workers) are
// External. Rules are per directed link (from, to):
//
//   - Pass: bytes flow.
//   - Drop: existing connections are closed, new ones are accepted and closed at once (a refused
//     connection: the sender learns fast).
//   - Blackhole: connections stay open but no byte is forwarded until the rule changes (a silent
//     partition: the sender learns only from its timeouts). Buffered bytes flow again on Pass.
//   - Mute: requests flow to the node, and everything it sends back is discarded: every call
//     arrives and runs, and its answer is lost (the node looks silent to the caller). When the
//     rule changes, the link's connections are closed (their streams lost bytes mid-frame).
//
// A partition of node i from node j sets both (i, j) and (j, i): Raft and forwarding connections
// are opened by either side.

// External is the source of a connection no node owns.
const External = -1

// Mode is what a link does to its connections.
type Mode int

const (
	Pass Mode = iota
	Drop
	Blackhole
	Mute
)

func (m Mode) String() string {
	return [...]string{"pass", "drop", "blackhole", "mute"}[m]
}

// link is a directed pair of nodes (From may be External).
type link struct{ From, To int }

// Net is safe for concurrent use. It holds the link rules and every proxied connection.
type Net struct {
	// mu guards every field below; a leaf lock (no I/O under it except closing sockets).
	mu      sync.Mutex
	rules   map[link]Mode
	pids    map[int]int // pid -> node index, of the running nodes
	conns   map[*pconn]struct{}
	changed chan struct{} // closed and replaced on every rule change: wakes blackholed copies
	proxies []*Proxy
	closed  bool
}

// NewNet returns a network where every link passes.
func NewNet() *Net {
	return &Net{rules: make(map[link]Mode), pids: make(map[int]int), conns: make(map[*pconn]struct{}),
		changed: make(chan struct{})}
}

// Supported reports whether the platform lets a proxy tell nodes apart (Linux /proc).
func Supported() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	_, err := os.Stat("/proc/net/tcp")
	return err == nil
}

// SetPID records that node runs as pid (0 forgets the node's process).
func (n *Net) SetPID(node, pid int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for p, i := range n.pids {
		if i == node {
			delete(n.pids, p)
		}
	}
	if pid > 0 {
		n.pids[pid] = node
	}
}

// Set sets the rule of the directed link from -> to, closing the link's connections on Drop and
// waking its stalled connections on Pass.
func (n *Net) Set(from, to int, m Mode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setLocked(from, to, m)
}

func (n *Net) setLocked(from, to int, m Mode) {
	l := link{from, to}
	was := n.rules[l]
	if m == Pass {
		delete(n.rules, l)
	} else {
		n.rules[l] = m
	}
	if m == Drop || was == Mute && m != Mute {
		for c := range n.conns {
			if c.link == l {
				c.closeLocked()
			}
		}
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// Isolate cuts node off from every other node in both directions (clients still reach it).
func (n *Net) Isolate(node int, nodes int, m Mode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for j := range nodes {
		if j != node {
			n.setLocked(node, j, m)
			n.setLocked(j, node, m)
		}
	}
}

// Heal makes every link pass.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for l, m := range n.rules {
		if m == Mute {
			for c := range n.conns {
				if c.link == l {
					c.closeLocked()
				}
			}
		}
		delete(n.rules, l)
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// mode returns the rule of l and the channel closed on the next change.
func (n *Net) mode(l link) (Mode, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rules[l], n.changed
}

// Close closes every proxy and connection.
func (n *Net) Close() {
	n.mu.Lock()
	n.closed = true
	proxies := n.proxies
	for c := range n.conns {
		c.closeLocked()
	}
	n.mu.Unlock()
	for _, p := range proxies {
		p.Close()
	}
}

// Proxy forwards one loopback listener to one node's port. Safe for concurrent use once Serve
// was called.
type Proxy struct {
	net    *Net
	node   int    // the node it fronts
	kind   string // "peer" or "client", for errors
	target string // the node's private address; set by Serve
	ln     net.Listener
	wg     sync.WaitGroup
}

// Listen opens a proxy for node's port on a new loopback port; Serve starts it. Opening every
// proxy before choosing the nodes' private ports keeps the two from colliding.
func (n *Net) Listen(node int, kind string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{net: n, node: node, kind: kind, ln: ln}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = ln.Close()
		return nil, errors.New("chaos: network closed")
	}
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	return p, nil
}

// Serve starts forwarding to target (the node's private address). Called once.
func (p *Proxy) Serve(target string) {
	p.target = target
	p.wg.Add(1)
	go p.serve()
}

// Addr is the proxy's address, the one the cluster advertises.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting and waits for the accept loop.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(in)
	}
}

// pconn is one proxied connection; its sockets are closed once, under Net.mu.
type pconn struct {
	link    link
	in, out net.Conn
	done    chan struct{} // closed by closeLocked
	closed  bool
}

func (c *pconn) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	_ = c.in.Close()
	if c.out != nil {
		_ = c.out.Close()
	}
}

func (p *Proxy) handle(in net.Conn) {
	from := p.net.source(in, p.ln.Addr())
	l := link{from, p.node}
	if m, _ := p.net.mode(l); m == Drop {
		_ = in.Close()
		return
	}
	out, err := net.Dial("tcp", p.target)
	if err != nil { // the node is down: refuse like it would
		_ = in.Close()
		return
	}
	c := &pconn{link: l, in: in, out: out, done: make(chan struct{})}
	p.net.mu.Lock()
	if p.net.closed {
		p.net.mu.Unlock()
		_ = in.Close()
		_ = out.Close()
		return
	}
	p.net.conns[c] = struct{}{}
	p.net.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.net.copy(c, out, in, false) }()
	go func() { defer wg.Done(); p.net.copy(c, in, out, true) }()
	wg.Wait()
	p.net.mu.Lock()
	c.closeLocked()
	delete(p.net.conns, c)
	p.net.mu.Unlock()
}

// copy moves bytes from src to dst, holding them while the link is blackholed and discarding the
// node's (reply) while it is muted, until either side closes or the link drops; then it closes the
// connection.
func (n *Net) copy(c *pconn, dst io.Writer, src io.Reader, reply bool) {
	defer func() {
		n.mu.Lock()
		c.closeLocked()
		n.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			for {
				m, changed := n.mode(c.link)
				if m == Pass || m == Mute && !reply {
					break
				}
				if m == Mute {
					k = 0 // the answer is lost
					break
				}
				if m == Drop {
					return
				}
				select {
				case <-changed:
				case <-c.done:
					return
				}
			}
			if k > 0 {
				if _, werr := dst.Write(buf[:k]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// source finds the node whose process owns the other end of in (External if none does).
func (n *Net) source(in net.Conn, local net.Addr) int {
	n.mu.Lock()
	pids := make(map[int]int, len(n.pids))
	for p, i := range n.pids {
		pids[p] = i
	}
	n.mu.Unlock()
	if len(pids) == 0 {
		return External
	}
	ra, ok1 := in.RemoteAddr().(*net.TCPAddr)
	la, ok2 := local.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return External
	}
	inode := socketInode(ra.Port, la.Port)
	if inode == "" {
		return External
	}
	want := "socket:[" + inode + "]"
	for pid, node := range pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && target == want {
				return node
			}
		}
	}
	return External
}

// socketInode returns the inode of the loopback socket with local port lport connected to remote
// port rport, from /proc/net/tcp and tcp6; "" if not found.
func socketInode(lport, rport int) string {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if ino := scanTCP(f, lport, rport); ino != "" {
			return ino
		}
	}
	return ""
}

func scanTCP(file string, lport, rport int) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if portOf(fields[1]) == lport && portOf(fields[2]) == rport {
			return fields[9]
		}
	}
	return ""
}

// portOf parses the port of a /proc/net/tcp address ("0100007F:1F90").
func portOf(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	v, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}
