package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot/snapshottest"
)

// tenantWant is what populate wrote into one tenant.
type tenantWant struct {
	quota           uint64
	objects, groups uint64
}

// populate writes a state that exercises every kind of record: three tenants (two with quotas),
// memory and NOF segments, explicit groups, singletons, several replicas, NOF replicas, hard and
// soft pins, and a put that was started but not ended (a PROCESSING replica). It returns what each
// tenant holds.
func populate(t *testing.T, cl *client.Client, prefix string) map[string]tenantWant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]tenantWant{"default": {}}
	for _, tn := range []struct {
		name  string
		quota uint64
	}{{prefix + "alpha", 64 << 20}, {prefix + "beta", 0}} {
		if _, err := cl.RegisterTenant(ctx, tn.name, tn.quota); err != nil {
			t.Fatalf("register %s: %v", tn.name, err)
		}
		want[tn.name] = tenantWant{quota: tn.quota}
	}
	if _, err := cl.SetQuota(ctx, "default", 256<<20); err != nil {
		t.Fatal(err)
	}
	want["default"] = tenantWant{quota: 256 << 20}
	for i, tier := range []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_NOF} {
		id := client.NewUUID()
		seg := &metadv1.SegmentDesc{Id: id.Bytes(), Name: fmt.Sprintf("%sseg%d", prefix, i), Base: uint64(i+1) << 32, Size: 64 << 20,
			Endpoint: fmt.Sprintf("worker:%d", i), Tier: tier}
		if err := cl.MountSegment(ctx, seg); err != nil {
			t.Fatalf("mount: %v", err)
		}
	}
	pingLoop(t, cl)
	for tenant := range want {
		w := want[tenant]
		for g := range 2 {
			for i := range 6 {
				opts := &client.PutOptions{Group: fmt.Sprintf("g%d", g), MemoryReplicas: uint32(1 + i%2)}
				if i == 0 {
					opts.NOFReplicas = 1
				}
				if i == 1 {
					opts.HardPin = true
				}
				if i == 2 {
					opts.SoftPin, opts.SoftPinTTL = metadv1.SoftPinAction_SOFT_PIN_ACTION_ENABLE, time.Hour
				}
				if _, err := cl.Put(ctx, tenant, fmt.Sprintf("grp%d/obj%02d", g, i), uint64(4096*(i+1)), opts); err != nil {
					t.Fatalf("put: %v", err)
				}
				w.objects++
			}
			w.groups++
		}
		for i := range 8 {
			if _, err := cl.Put(ctx, tenant, fmt.Sprintf("single%02d", i), 640, &client.PutOptions{DataType: uint32(i)}); err != nil {
				t.Fatalf("put: %v", err)
			}
			w.objects++
		}
		// A write in progress in the replicated state: an UpsertStart always takes a log entry
		// (a PutStart of a new key is a reservation in the leader's memory, in no snapshot).
		if _, _, err := cl.UpsertStart(ctx, tenant, "in-progress", 1024, nil); err != nil {
			t.Fatalf("upsert start: %v", err)
		}
		w.objects++
		want[tenant] = w
	}
	return want
}

var savedRE = regexp.MustCompile(`saved snapshot at index (\d+), term (\d+): (\d+) objects, (\d+) tenants`)

// TestSnapshotSaveInspectRestore: save from a 3-node cluster (from the leader, through a follower,
// and stale from a follower), inspect, restore offline into a fresh 3-node cluster and online into
// a running one with other state; every restored cluster holds exactly the saved state (same state
// digest, same records) on every node, and takes new writes. Bad files are refused by every tool
// with a message that says what is wrong, and leave the cluster unchanged.
func TestSnapshotSaveInspectRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	start := time.Now()
	// No arenas: the test compares saves taken at different moments, and a leader that took puts
	// may still be granting arenas (a change of state) after the last put. Snapshots with arenas
	// are tested in fsm (golden-v5, overlapping spans) and by the drill's online restore.
	src := NewCluster(t, 3, "--client-ttl", "5m", "--no-arenas")
	srcCl := src.Client()
	leader := src.Leader(srcCl, 20*time.Second)
	want := populate(t, srcCl, "")
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	awaitFeatureLevel(t, lctx, srcCl, 5) // the level whose binaries read chunked files
	var wantObjects uint64
	for _, w := range want {
		wantObjects += w.objects
	}

	// Save from the cluster.
	saved := filepath.Join(t.TempDir(), "backup.snap")
	out, err := src.Metactl("snapshot", "save", saved)
	m := savedRE.FindStringSubmatch(out)
	if err != nil || m == nil || m[3] != strconv.FormatUint(wantObjects, 10) || m[4] != "3" {
		t.Fatalf("metactl snapshot save: %v\n%s", err, out)
	}
	if _, err := os.Stat(saved + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("save left %s.tmp behind", saved)
	}

	// Inspect: the counts match what was written and what the cluster reports; a state with no
	// rate limit is written in format 6, which the previous release reads, and a cluster whose
	// members all read chunked files saves one.
	doc := src.Inspect(saved)
	if doc.Checksum != "ok" || doc.FormatVersion != 6 || doc.FileVersion != 2 || doc.Chunks < 1 || doc.Objects != wantObjects || len(doc.Tenants) != 3 || len(doc.Segments) != 3 || doc.Index == 0 {
		t.Fatalf("inspect: %+v", doc)
	}
	if strconv.FormatUint(doc.Index, 10) != m[1] || strconv.FormatUint(doc.Term, 10) != m[2] {
		t.Fatalf("save reported index %s term %s, inspect %d %d", m[1], m[2], doc.Index, doc.Term)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tenants, err := srcCl.ListTenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range doc.Tenants {
		w := want[ti.Name]
		if ti.Objects != w.objects || ti.Groups != w.groups || ti.QuotaBytes != w.quota {
			t.Fatalf("inspect tenant %s: %+v, wrote %+v", ti.Name, ti, w)
		}
		for _, lt := range tenants {
			if lt.GetName() == ti.Name && (lt.GetObjects() != ti.Objects || lt.GetGroups() != ti.Groups || lt.GetChargedBytes() != ti.MemoryBytes) {
				t.Fatalf("inspect tenant %s: %+v, the cluster lists %v", ti.Name, ti, lt)
			}
		}
		if ti.NOFBytes == 0 {
			t.Fatalf("tenant %s: no NOF bytes", ti.Name)
		}
	}
	segs, err := srcCl.ListSegments(ctx, client.SegmentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range segs {
		for _, ds := range doc.Segments {
			if ds.ID == client.FormatID(sg.GetSegment().GetId()) && ds.Used != sg.GetUsedBytes() {
				t.Fatalf("segment %s: inspect says %d bytes used, the cluster %d", ds.ID, ds.Used, sg.GetUsedBytes())
			}
		}
	}
	if out, err := src.Metactl("snapshot", "inspect", saved); err != nil || !strings.Contains(out, "checksum        ok") ||
		!strings.Contains(out, "alpha") || !strings.Contains(out, "NOF") {
		t.Fatalf("inspect table: %v\n%s", err, out)
	}

	// Through a follower only: forwarded to the leader, the same state. Stale from a follower:
	// that follower's own state, the same once it has caught up.
	var follower *Proc
	for _, p := range src.Nodes {
		if p != leader {
			follower = p
		}
	}
	viaFollower, _ := src.Save([]string{follower.Client})
	sameState(t, src, saved, viaFollower)
	src.waitDigest(follower, doc.StateDigest, 10*time.Second)
	t.Logf("source cluster and saves: %s", time.Since(start))
	src.StopAll()

	// Offline restore into a fresh 3-node cluster.
	mark := time.Now()
	off := PrepareCluster(t, 3, "--client-ttl", "5m")
	for _, p := range off.Nodes {
		out, err := off.Metad("restore", "--snapshot", saved, "--data-dir", p.DataDir, "--name", p.Name,
			"--initial-cluster", off.Initial, "--log-level", "warn")
		if err != nil || !strings.Contains(out, fmt.Sprintf("%d objects, 3 tenants, 3 segments", wantObjects)) {
			t.Fatalf("metad restore %s: %v\n%s", p.Name, err, out)
		}
	}
	if out, err := off.Metad("restore", "--snapshot", saved, "--data-dir", off.Nodes[0].DataDir, "--name", "n1",
		"--initial-cluster", off.Initial); err == nil || !strings.Contains(out, "data dir is not empty") {
		t.Fatalf("metad restore into a used data dir: %v\n%s", err, out)
	}
	off.StartAll()
	offCl := off.Client()
	off.Leader(offCl, 20*time.Second)
	restored, _ := off.Save(nil)
	sameState(t, off, saved, restored)
	for _, p := range off.Nodes {
		off.waitDigest(p, doc.StateDigest, 10*time.Second)
	}
	if _, err := offCl.Put(ctx, "alpha", "after-offline-restore", 4096, nil); err != nil {
		t.Fatalf("write after the offline restore: %v", err)
	}
	if g, err := offCl.Get(ctx, "beta", "grp1/obj02"); err != nil || len(g.GetReplicas()) == 0 {
		t.Fatalf("read after the offline restore: %v %v", g, err)
	}
	t.Logf("offline restore: %s", time.Since(mark))
	off.StopAll()

	// Online restore into a running cluster that holds other state; bad files first.
	mark = time.Now()
	on := NewCluster(t, 3, "--client-ttl", "5m", "--no-arenas")
	onCl := on.Client()
	onLeader := on.Leader(onCl, 20*time.Second)
	populate(t, onCl, "other-")
	before, beforeDoc := on.Save(nil)
	refuseBadFiles(t, on, onCl, saved, beforeDoc.StateDigest)
	after, _ := on.Save(nil)
	sameState(t, on, before, after)

	// Through a follower only: the stream is relayed to the leader.
	var onFollower *Proc
	for _, p := range on.Nodes {
		if p != onLeader {
			onFollower = p
		}
	}
	out, err = on.MetactlAt([]string{onFollower.Client}, "snapshot", "restore", saved)
	if err != nil || !strings.Contains(out, fmt.Sprintf("restored snapshot of index %d, term %d: %d objects, 3 tenants, 3 segments, %d groups",
		doc.Index, doc.Term, wantObjects, doc.Groups)) {
		t.Fatalf("metactl snapshot restore: %v\n%s", err, out)
	}
	restored, _ = on.Save(nil)
	sameState(t, on, saved, restored)
	for _, p := range on.Nodes {
		on.waitDigest(p, doc.StateDigest, 10*time.Second)
	}
	ts, err := onCl.ListTenants(ctx)
	if err != nil || len(ts) != 3 {
		t.Fatalf("tenants after the online restore: %v %v", ts, err)
	}
	if _, err := onCl.Put(ctx, "beta", "after-online-restore", 4096, nil); err != nil {
		t.Fatalf("write after the online restore: %v", err)
	}
	if _, err := onCl.Get(ctx, "beta", "after-online-restore"); err != nil {
		t.Fatal(err)
	}
	t.Logf("online restore and bad files: %s; whole test %s", time.Since(mark), time.Since(start))
}

// refuseBadFiles checks that truncated, foreign, future-version, checksum-damaged and impossible
// files are refused by metactl snapshot inspect, metactl snapshot restore, the SnapshotRestore RPC
// itself (no local check) and metad restore, each with a message naming the problem, and that the
// running cluster c still holds the state with digest digest.
func refuseBadFiles(t *testing.T, c *Cluster, cl *client.Client, good string, digest string) {
	t.Helper()
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	future := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(future[8:], 7)
	damaged := append([]byte(nil), data...)
	damaged[len(damaged)-2] ^= 0x40
	cases := []struct {
		name    string
		data    []byte
		inspect string // what metactl snapshot inspect says ("" = it accepts the file)
		refused string // what the leader and metad restore say
	}{
		{"truncated", data[:len(data)*2/3], "SNAPSHOT_TRUNCATED", "snapshot is truncated"},
		{"foreign", []byte("<html><body>not a snapshot at all</body></html>\n"), "SNAPSHOT_BAD_MAGIC", "not a metad snapshot (bad magic)"},
		{"future", future, "SNAPSHOT_FUTURE_VERSION", "newer than this binary reads"},
		{"checksum", damaged, "SNAPSHOT_CHECKSUM", "snapshot checksum mismatch"},
		{"impossible", snapshottest.Overlapping(t, data), "", "snapshot is corrupt"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		path := filepath.Join(dir, tc.name+".snap")
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := c.Metactl("snapshot", "inspect", path)
		if tc.inspect == "" {
			if err != nil {
				t.Fatalf("%s: inspect should accept the file's format: %v\n%s", tc.name, err, out)
			}
		} else if err == nil || !strings.Contains(out, "error: "+tc.inspect) || !strings.Contains(out, tc.refused) {
			t.Fatalf("%s: metactl snapshot inspect: %v\n%s", tc.name, err, out)
		}
		out, err = c.Metactl("snapshot", "restore", path)
		if err == nil || !strings.Contains(out, tc.refused) {
			t.Fatalf("%s: metactl snapshot restore: %v\n%s", tc.name, err, out)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = cl.SnapshotRestore(ctx, f)
		cancel()
		f.Close()
		if err == nil || !strings.Contains(client.MessageOf(err), tc.refused) || client.ReasonOf(err) != metadv1.Reason_REASON_INVALID_PARAMS {
			t.Fatalf("%s: SnapshotRestore RPC: %v", tc.name, err)
		}
		newDir := filepath.Join(dir, tc.name+"-data")
		out, err = c.Metad("restore", "--snapshot", path, "--data-dir", newDir, "--name", "n1", "--initial-cluster", c.Initial, "--log-level", "error")
		if err == nil || !strings.Contains(out, tc.refused) {
			t.Fatalf("%s: metad restore: %v\n%s", tc.name, err, out)
		}
		if _, err := os.Stat(newDir); !os.IsNotExist(err) {
			t.Fatalf("%s: metad restore left %s behind", tc.name, newDir)
		}
	}
	for _, p := range c.Nodes {
		c.waitDigest(p, digest, 5*time.Second)
	}
}

// TestSnapshotRecoveryDrill: two of three nodes are lost for good; the survivor is stopped,
// recovered as a one-node cluster with `metad recover`, started, and grows back to three with two
// new members (metactl member add, --initial-cluster-state existing). All data is present on every
// member and the cluster takes writes.
func TestSnapshotRecoveryDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	start := time.Now()
	c := NewCluster(t, 3, "--client-ttl", "5m")
	cl := c.Client()
	c.Leader(cl, 20*time.Second)
	populate(t, cl, "")
	_, doc := c.SettledSave(20 * time.Second)

	// n2 and n3 are gone for good; n1 alone has no quorum and is stopped.
	n1 := c.Nodes[0]
	c.Kill(c.Nodes[1])
	c.Kill(c.Nodes[2])
	c.Kill(n1)
	peers := filepath.Join(t.TempDir(), "peers.json")
	if err := os.WriteFile(peers, []byte(fmt.Sprintf(`[{"id": "n1", "address": %q}]`, n1.Peer)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := c.Metad("recover", "--data-dir", n1.DataDir, "--peers", peers, "--name", "n1", "--log-level", "warn")
	if err != nil || !strings.Contains(out, "the cluster is now n1="+n1.Peer) {
		t.Fatalf("metad recover: %v\n%s", err, out)
	}
	c.Start(n1)
	c.Leader(cl, 20*time.Second)
	c.waitDigest(n1, doc.StateDigest, 10*time.Second)

	// Two new members join.
	n1Only := []string{n1.Client}
	for _, name := range []string{"n4", "n5"} {
		p := c.AddNode(name, "--client-ttl", "5m")
		c.Start(p)
		if out, err := c.MetactlAt(n1Only, "member", "add", name, p.Peer); err != nil || strings.Contains(out, "configuration index 0)") {
			t.Fatalf("metactl member add %s: %v\n%s", name, err, out)
		}
	}
	out, err = c.MetactlAt(n1Only, "member", "ls")
	if err != nil || strings.Count(out, " voter ")+strings.Count(out, " leader ") < 3 || strings.Contains(out, "n2") || !strings.Contains(out, "n5") {
		t.Fatalf("metactl member ls: %v\n%s", err, out)
	}
	for _, p := range c.Nodes {
		if p.Running() {
			c.waitDigest(p, doc.StateDigest, 15*time.Second)
		}
	}
	// The grown cluster commits with the new members (n1 alone is no longer a quorum of three).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Put(ctx, "", "after-recovery", 4096, nil); err != nil {
		t.Fatalf("write after the recovery: %v", err)
	}
	n4 := c.Nodes[3]
	if _, err := cl.Status(ctx, n4.Client); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := cl.Get(ctx, "", "after-recovery", client.Stale())
		st, serr := cl.Status(ctx, n4.Client)
		if err == nil && len(g.GetReplicas()) > 0 && serr == nil && st.GetObjects() == doc.Objects+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n4 did not get the write made after the recovery: %v %v %v", st, err, serr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("recovery drill: %s", time.Since(start))
}
