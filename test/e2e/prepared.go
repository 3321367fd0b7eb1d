package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// Helpers for clusters whose data dirs are prepared before the processes start (offline restore,
// recovery drills), and for snapshot files.

// fastRaft are the short Raft timeouts NewCluster uses, given explicitly to nodes laid out here.
var fastRaft = []string{"--heartbeat-timeout", "300ms", "--election-timeout", "300ms", "--leader-lease-timeout", "150ms"}

// PrepareCluster lays out n nodes named n1..nN (free loopback ports, data dirs in a temp dir, short
// Raft timeouts) without starting them, so their data dirs can be prepared first; StartAll starts
// them. extra flags go to every node.
func PrepareCluster(tb testing.TB, n int, extra ...string) *Cluster {
	tb.Helper()
	c := &Cluster{T: tb, Bin: BuildBinaries(tb), Dir: tb.TempDir()}
	ports := FreePorts(tb, 3*n)
	var initial []string
	for i := range n {
		p := &Proc{Name: fmt.Sprintf("n%d", i+1), Client: ports[3*i], Peer: ports[3*i+1], Metrics: ports[3*i+2],
			DataDir: filepath.Join(c.Dir, fmt.Sprintf("n%d", i+1)), Extra: append(append([]string(nil), fastRaft...), extra...)}
		c.Nodes = append(c.Nodes, p)
		initial = append(initial, p.Name+"="+p.Peer)
	}
	c.Initial = strings.Join(initial, ",")
	tb.Cleanup(c.StopAll)
	return c
}

// StartAll starts every node that is not running.
func (c *Cluster) StartAll() {
	c.T.Helper()
	for _, p := range c.Nodes {
		if !p.Running() {
			c.Start(p)
		}
	}
}

// Running reports whether p's process is running (started and not stopped or killed by the test).
func (p *Proc) Running() bool { return p.cmd != nil }

// AddNode lays out one more node (free ports, a fresh data dir) that joins the running cluster:
// it starts with --initial-cluster-state existing and waits to be added (metactl member add).
// Start it with Start.
func (c *Cluster) AddNode(name string, extra ...string) *Proc {
	c.T.Helper()
	ports := FreePorts(c.T, 3)
	p := &Proc{Name: name, Client: ports[0], Peer: ports[1], Metrics: ports[2], DataDir: filepath.Join(c.Dir, name),
		Extra: append(append(append([]string(nil), fastRaft...), "--initial-cluster-state", "existing"), extra...)}
	c.Nodes = append(c.Nodes, p)
	return p
}

// Metad runs the metad binary with args (a subcommand such as restore or recover) and returns
// its combined output.
func (c *Cluster) Metad(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Bin, "metad"), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MetactlAt runs metactl against the given endpoints only.
func (c *Cluster) MetactlAt(endpoints []string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Bin, "metactl"), append([]string{"--endpoints", strings.Join(endpoints, ",")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Log returns what p has logged so far (for failure messages).
func (p *Proc) Log() string {
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// inspectDoc is the part of `metactl snapshot inspect -o json` the tests read.
type inspectDoc struct {
	FormatVersion uint32 `json:"format_version"`
	FileVersion   uint32 `json:"file_version"`
	Chunks        int64  `json:"chunks"`
	Index         uint64 `json:"index"`
	Term          uint64 `json:"term"`
	Checksum      string `json:"checksum"`
	Objects       uint64 `json:"objects"`
	Groups        uint64 `json:"groups"`
	StateDigest   string `json:"state_digest"`
	StoreDigest   string `json:"store_digest"`
	Tenants       []struct {
		Name        string `json:"name"`
		QuotaBytes  uint64 `json:"quota_bytes"`
		Objects     uint64 `json:"objects"`
		Groups      uint64 `json:"groups"`
		MemoryBytes uint64 `json:"memory_bytes"`
		NOFBytes    uint64 `json:"nof_bytes"`
	} `json:"tenants"`
	Segments []struct {
		ID   string `json:"id"`
		Tier string `json:"tier"`
		Used uint64 `json:"used"`
	} `json:"segments"`
	Members []struct {
		Name string `json:"name"`
	} `json:"members"`
}

// Inspect runs `metactl snapshot inspect -o json` on path (no cluster involved).
func (c *Cluster) Inspect(path string) inspectDoc {
	c.T.Helper()
	out, err := c.MetactlAt([]string{"127.0.0.1:1"}, "snapshot", "inspect", path, "-o", "json")
	if err != nil {
		c.T.Fatalf("metactl snapshot inspect %s: %v\n%s", path, err, out)
	}
	var d inspectDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		c.T.Fatalf("inspect output: %v\n%s", err, out)
	}
	return d
}

// Save runs `metactl snapshot save` against endpoints (all nodes when nil) into a new file in the
// test's temp dir and returns the file and what inspect says of it.
func (c *Cluster) Save(endpoints []string, args ...string) (string, inspectDoc) {
	c.T.Helper()
	if endpoints == nil {
		endpoints = c.Endpoints()
	}
	path := filepath.Join(c.T.TempDir(), "saved.snap")
	out, err := c.MetactlAt(endpoints, append([]string{"snapshot", "save", path}, args...)...)
	if err != nil {
		c.T.Fatalf("metactl snapshot save: %v\n%s", err, out)
	}
	return path, c.Inspect(path)
}

// SettledSave is Save (from every node) repeated until every running node holds the state the
// save holds: the leader's background entries (an arena grant after a burst of puts) can land
// just after a save, so a save taken at once may describe a state that no node keeps.
func (c *Cluster) SettledSave(within time.Duration) (string, inspectDoc) {
	c.T.Helper()
	deadline := time.Now().Add(within)
	for {
		path, doc := c.Save(nil)
		if c.allHold(doc.StateDigest) {
			return path, doc
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("the nodes did not settle on one state within %s", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allHold reports whether every running node's state digest (a stale save of it) is want.
func (c *Cluster) allHold(want string) bool {
	for _, p := range c.Nodes {
		if !p.Running() {
			continue
		}
		path := filepath.Join(c.T.TempDir(), p.Name+".snap")
		if _, err := c.MetactlAt([]string{p.Client}, "snapshot", "save", path, "--allow-stale"); err != nil || c.Inspect(path).StateDigest != want {
			return false
		}
	}
	return true
}

// waitDigest polls `snapshot save --allow-stale` on node p until its state digest is want, and
// returns the path of that save.
func (c *Cluster) waitDigest(p *Proc, want string, within time.Duration) string {
	c.T.Helper()
	deadline := time.Now().Add(within)
	for {
		path := filepath.Join(c.T.TempDir(), p.Name+".snap")
		out, err := c.MetactlAt([]string{p.Client}, "snapshot", "save", path, "--allow-stale")
		if err == nil && c.Inspect(path).StateDigest == want {
			return path
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("%s does not hold the expected state after %s: %v\n%s", p.Name, within, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// records returns a snapshot file's records other than members and client sessions, deterministically encoded (for
// showing where two states differ).
func records(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sr, err := snapshot.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	rec := &metadv1.Record{}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		switch rec.Record.(type) {
		case *metadv1.Record_Member, *metadv1.Record_Session: // the cluster's and its clients', not the data
		default:
			out = append(out, rec.String())
		}
	}
}

// sameState fails the test unless the snapshot files a and b describe the same replicated state:
// the same state digest, and (checked too, to show any difference) the same records.
func sameState(tb testing.TB, c *Cluster, a, b string) {
	tb.Helper()
	ra, rb := records(tb, a), records(tb, b)
	for i := range min(len(ra), len(rb)) {
		if ra[i] != rb[i] {
			tb.Fatalf("record %d differs:\n%s\n%s", i, ra[i], rb[i])
		}
	}
	if len(ra) != len(rb) {
		tb.Fatalf("%d records against %d", len(ra), len(rb))
	}
	if da, db := c.Inspect(a).StateDigest, c.Inspect(b).StateDigest; da != db {
		tb.Fatalf("state digests differ: %s %s", da, db)
	}
}

// pingLoop keeps cl's client alive (its mounted segments stay) until the test ends.
func pingLoop(tb testing.TB, cl *client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			_, _ = cl.Ping(pctx)
			pcancel()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	tb.Cleanup(func() { cancel(); <-done })
}
