package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// backupName is a scheduled backup's file name (package backup): index, term, UTC time.
var backupName = regexp.MustCompile(`^metad-\d+-\d+-(\d{8}T\d{6}\.\d{3}Z)\.snap$`)

// backupFiles lists the backups in dir, newest first, and the other entries.
func backupFiles(t *testing.T, dir string) (backups, others []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if backupName.MatchString(e.Name()) {
			backups = append(backups, e.Name())
		} else {
			others = append(others, e.Name())
		}
	}
	slices.SortFunc(backups, func(a, b string) int {
		return strings.Compare(backupName.FindStringSubmatch(b)[1], backupName.FindStringSubmatch(a)[1])
	})
	return backups, others
}

// inspectBackup verifies a backup file; ok is false when it is gone (retention deleted it).
func inspectBackup(t *testing.T, path string) (info *snapshot.Info, ok bool) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err = snapshot.Inspect(bufio.NewReader(f))
	if err != nil {
		t.Fatalf("backup %s does not verify: %v", path, err)
	}
	return info, true
}

// TestScheduledBackupsAndAutoRestore: in a 3-member cluster with --backup-dir on every member and a
// 1 s interval, the leader writes verified backups and retention keeps two, the followers write
// none; a member that rejoins with an empty data dir and --initial-cluster-state existing does not
// restore (it catches up from the leader); after the whole cluster is gone, a new member started
// alone on an empty data dir with --backup-restore-on-empty restores the newest backup, and an
// object written before that backup is readable.
func TestScheduledBackupsAndAutoRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	start := time.Now()
	root := t.TempDir()
	dirOf := func(p *Proc) string { return filepath.Join(root, "backups-"+p.Name) }
	c := PrepareCluster(t, 3, "--client-ttl", "5m")
	for _, p := range c.Nodes {
		p.Extra = append(p.Extra, "--backup-dir", dirOf(p), "--backup-interval", "1s", "--backup-retain", "2")
	}
	c.StartAll()
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seg := &metadv1.SegmentDesc{Id: client.NewUUID().Bytes(), Name: "backup-seg", Base: 1 << 32, Size: 64 << 20,
		Endpoint: "worker:0", Tier: metadv1.Tier_TIER_MEMORY}
	if err := cl.MountSegment(ctx, seg); err != nil {
		t.Fatalf("mount: %v", err)
	}
	pingLoop(t, cl)
	const key = "written/before-the-backup"
	if _, err := cl.Put(ctx, "", key, 4096, nil); err != nil {
		t.Fatalf("put: %v", err)
	}

	// Three backups by the leader, at least one with the object; never more than the two kept,
	// and a third for the moment between a backup's rename and the retention after it.
	seen := map[string]bool{}
	withObject := 0
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < 3 || withObject == 0 {
		backups, _ := backupFiles(t, dirOf(leader))
		if len(backups) > 3 {
			t.Fatalf("retention keeps 2, the leader's directory holds %v", backups)
		}
		for _, b := range backups {
			if seen[b] {
				continue
			}
			if info, ok := inspectBackup(t, filepath.Join(dirOf(leader), b)); ok {
				seen[b] = true
				if info.Objects >= 1 {
					withObject++
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader wrote %d backups (%d with the object) within 20s: %v", len(seen), withObject, backups)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if now := c.Leader(cl, 5*time.Second); now != leader {
		t.Fatalf("leadership moved from %s to %s during the test", leader.Name, now.Name)
	}
	for _, p := range c.Nodes {
		v, err := c.MetricValue(p, "metad_backup_last_success_timestamp_seconds")
		if err != nil {
			t.Fatal(err)
		}
		if p == leader && v < float64(start.Unix()) || p != leader && v != 0 {
			t.Errorf("%s (leader %s): metad_backup_last_success_timestamp_seconds = %v", p.Name, leader.Name, v)
		}
		if p == leader {
			size, err := c.MetricValue(p, "metad_backup_last_size_bytes")
			if err != nil || size <= 0 {
				t.Errorf("leader's metad_backup_last_size_bytes = %v (%v)", size, err)
			}
		}
	}

	// A follower that rejoins on an empty data dir, asked to restore on empty, does not: it joins
	// an existing cluster and catches up from the leader.
	var follower *Proc
	for _, p := range c.Nodes {
		if p != leader {
			follower = p
			break
		}
	}
	if err := c.Stop(follower); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(follower.DataDir); err != nil {
		t.Fatal(err)
	}
	follower.Extra = append(follower.Extra, "--initial-cluster-state", "existing", "--backup-restore-on-empty",
		"--backup-dir", dirOf(leader))
	c.Start(follower)
	deadline = time.Now().Add(20 * time.Second)
	for {
		st, err := cl.Status(ctx, follower.Client)
		lst, lerr := cl.Status(ctx, leader.Client)
		// (Each backup's barrier is committed without reaching the state machine, so the commit
		// index runs ahead of the applied index on every member: compare applied indexes.)
		if err == nil && lerr == nil && st.GetObjects() == 1 && st.GetAppliedIndex() >= lst.GetAppliedIndex() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not catch up: %v %v / %v %v", follower.Name, st, err, lst, lerr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The followers first: a leader stopped first would hand its leadership to one of them, which
	// would write a backup of its own before it stopped.
	for _, p := range c.Nodes {
		if p != leader {
			if err := c.Stop(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Stop(leader); err != nil {
		t.Fatal(err)
	}
	backups, others := backupFiles(t, dirOf(leader))
	if len(backups) != 2 || len(others) != 0 {
		t.Fatalf("the leader's directory after the cluster stopped: backups %v, others %v (retention keeps 2, no temp file)", backups, others)
	}
	for _, b := range backups {
		if _, ok := inspectBackup(t, filepath.Join(dirOf(leader), b)); !ok {
			t.Fatalf("%s vanished", b)
		}
	}
	for _, p := range c.Nodes {
		if p == leader {
			continue
		}
		if b, o := backupFiles(t, dirOf(p)); len(b)+len(o) != 0 {
			t.Errorf("follower %s wrote %v %v", p.Name, b, o)
		}
	}
	if log := follower.Log(); !strings.Contains(log, "nothing restored: this member joins an existing cluster") {
		t.Errorf("the rejoining follower's log does not say why it did not restore:\n%s", log)
	}

	// The cluster is gone: a new member alone, on an empty data dir, restores the newest backup.
	r := PrepareCluster(t, 1, "--client-ttl", "5m", "--backup-dir", dirOf(leader), "--backup-restore-on-empty")
	r.StartAll()
	rcl := r.Client()
	r.Leader(rcl, 20*time.Second)
	obj, err := rcl.Get(ctx, "", key)
	if err != nil {
		t.Fatalf("get %s after the auto-restore: %v\n%s", key, err, r.Nodes[0].Log())
	}
	if len(obj.GetReplicas()) == 0 {
		t.Fatalf("get %s after the auto-restore: no replica: %v", key, obj)
	}
	r.StopAll()
	if log := r.Nodes[0].Log(); !strings.Contains(log, "restored the newest backup that verifies") || !strings.Contains(log, backups[0]) {
		t.Fatalf("the restored member's log does not name %s:\n%s", backups[0], log)
	}
	t.Logf("backups, a rejoin and an auto-restore in %s", time.Since(start).Round(time.Millisecond))
}
