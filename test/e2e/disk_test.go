package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// TestLocalDiskAcrossLeaderKill: a worker registers its SSD with metactl, reports offloads, and
// the leader is killed: the new leader serves every LOCAL_DISK replica (owner and endpoint
// included) from the replicated state, a disk-only object stays readable after its memory
// replica is dropped, and the worker's own eviction and its unmount drop exactly its replicas.
func TestLocalDiskAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3)
	admin := c.Client()
	leader := c.Leader(admin, 20*time.Second)
	workerID := client.NewUUID()
	worker, err := client.New(client.Config{Endpoints: c.Endpoints(), ClientID: workerID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Close() })
	pingLoop(t, worker)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mem := client.UUID(mountMemory(t, ctx, worker, "ld-mem", 1<<20))
	spare := client.UUID(mountMemory(t, ctx, worker, "ld-spare", 1<<20))
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("ld-%02d", i)
		opts := &client.PutOptions{PreferredSegments: []client.UUID{mem}}
		if i == 3 { // on the spare segment, whose unmount leaves it on disk alone
			opts.PreferredSegments[0] = spare
		}
		reps, err := worker.Put(ctx, "", keys[i], 4096, opts)
		if err != nil {
			t.Fatalf("put %s: %v", keys[i], err)
		}
		if onSpare := bytes.Equal(reps[0].GetSegmentId(), spare.Bytes()); onSpare != (i == 3) {
			t.Fatalf("put %s landed on segment %x", keys[i], reps[0].GetSegmentId())
		}
	}
	metactl := func(args ...string) string {
		t.Helper()
		out, err := c.Metactl(append(args, "--client", workerID.String())...)
		if err != nil {
			t.Fatalf("metactl %v: %v\n%s", args, err, out)
		}
		return out
	}
	awaitFeatureLevel(t, ctx, admin, 5) // the LOCAL_DISK commands' level (fsm's levelLocalDisk)
	metactl("disk", "mount", "--capacity", "1MiB", "--endpoint", "127.0.0.1:9400", "--offload")
	if out := metactl("disk", "offload", keys[0], keys[1], keys[2], keys[3]); strings.Count(out, "recorded") != 4 {
		t.Fatalf("disk offload:\n%s", out)
	}
	// One object keeps only its disk replica: its memory one goes with the spare segment.
	if r, err := worker.UnmountSegment(ctx, spare); err != nil || r.GetReplicasDropped() != 1 || r.GetObjectsErased() != 0 {
		t.Fatalf("unmount the spare segment: %v %v", r, err)
	}

	c.Kill(leader)
	c.Leader(admin, 20*time.Second)
	check := func(key string, want ...metadv1.Tier) {
		t.Helper()
		g, err := admin.Get(ctx, "", key)
		if err != nil || len(g.GetReplicas()) != len(want) {
			t.Fatalf("get %s: %v %v; want %v", key, g, err, want)
		}
		for i, r := range g.GetReplicas() {
			if r.GetTier() != want[i] {
				t.Fatalf("get %s: replica %d is %s, want %v", key, i, r.GetTier(), want)
			}
			if r.GetTier() == metadv1.Tier_TIER_LOCAL_DISK &&
				(!bytes.Equal(r.GetOwnerClientId(), workerID.Bytes()) || r.GetSegmentEndpoint() != "127.0.0.1:9400") {
				t.Fatalf("get %s: disk replica %v, want owner %s at 127.0.0.1:9400", key, r, workerID)
			}
		}
	}
	check(keys[0], metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_LOCAL_DISK)
	check(keys[3], metadv1.Tier_TIER_LOCAL_DISK)
	check(keys[4], metadv1.Tier_TIER_MEMORY)

	if out := metactl("disk", "evict", keys[0], keys[3], keys[4]); strings.Count(out, "dropped") != 2 || !strings.Contains(out, "NO_REPLICA_ON_SEGMENT") {
		t.Fatalf("disk evict:\n%s", out)
	}
	check(keys[0], metadv1.Tier_TIER_MEMORY)
	if _, err := admin.Get(ctx, "", keys[3]); client.ReasonOf(err) != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("get %s after its only replica went: %v", keys[3], err)
	}
	if out := metactl("disk", "unmount"); !strings.Contains(out, "2 replicas dropped") {
		t.Fatalf("disk unmount:\n%s", out)
	}
	check(keys[1], metadv1.Tier_TIER_MEMORY)
	segs, err := admin.ListSegments(ctx, client.SegmentFilter{Tier: metadv1.Tier_TIER_LOCAL_DISK})
	if err != nil || len(segs) != 0 {
		t.Fatalf("LOCAL_DISK segments after the unmount: %v %v", segs, err)
	}
}

// awaitFeatureLevel polls until every member records at least level: each records its binary's
// level soon after it joins, and until then the leader refuses the commands above the lowest.
func awaitFeatureLevel(t testing.TB, ctx context.Context, cl *client.Client, level uint32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := cl.ListMembers(ctx)
		low := uint32(0)
		if err == nil && len(resp.GetMembers()) > 0 {
			low = level
			for _, m := range resp.GetMembers() {
				low = min(low, m.GetFeatureLevel())
			}
		}
		if low >= level {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members not at feature level %d within 20s: %v %v", level, resp, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// TestOffloadAcrossLeaderKill: a worker (metactl worker --local-disk DIR --offload) takes the
// offload task that each put on its segment queues, writes the object's file and reports it; the
// leader is killed halfway through the puts. In the end every object has exactly one LOCAL_DISK
// replica, of this worker, every file is on the worker's disk at the object's size, and each
// object's offload ended SUCCESS once: no task was lost or done twice across the failover.
func TestOffloadAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3)
	admin := c.Client()
	leader := c.Leader(admin, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	awaitFeatureLevel(t, ctx, admin, 5)
	workerID := client.NewUUID()
	dir := t.TempDir()
	c.StartWorker(1, "64MiB", "--client", workerID.String(), "--local-disk", dir, "--offload",
		"--task-interval", "50ms", "--endpoint", "127.0.0.1:9500")
	awaitWorkerDisk(t, ctx, admin, workerID)
	const n = 120
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("off-%03d", i)
		if i == n/2 {
			c.Kill(leader)
			c.Leader(admin, 20*time.Second)
		}
		if _, err := admin.Put(ctx, "", keys[i], uint64(1000+i), nil); err != nil {
			t.Fatalf("put %s: %v", keys[i], err)
		}
	}
	onDisk := func(key string) (bool, error) {
		g, err := admin.Get(ctx, "", key)
		if err != nil {
			return false, err
		}
		disk := 0
		for _, r := range g.GetReplicas() {
			if r.GetTier() == metadv1.Tier_TIER_LOCAL_DISK {
				if !bytes.Equal(r.GetOwnerClientId(), workerID.Bytes()) {
					return false, fmt.Errorf("%s: a LOCAL_DISK replica of another owner: %v", key, r)
				}
				disk++
			}
		}
		if disk > 1 {
			return false, fmt.Errorf("%s has %d LOCAL_DISK replicas", key, disk)
		}
		return disk == 1, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, k := range keys {
		for {
			ok, err := onDisk(k)
			if err != nil && client.ReasonOf(err) == metadv1.Reason_REASON_UNSPECIFIED {
				t.Fatal(err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not offloaded within 60s (%v)", k, err)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
	}
	for i, k := range keys {
		fi, err := os.Stat(filepath.Join(dir, hex.EncodeToString([]byte("default")), hex.EncodeToString([]byte(k))))
		if err != nil || fi.Size() != int64(1000+i) {
			t.Fatalf("%s's file: %v %v; want %d bytes", k, fi, err, 1000+i)
		}
	}
	success := map[string]int{}
	var after uint64
	for {
		tasks, more, err := admin.ListTasks(ctx, "", after, 1024, metadv1.TaskState_TASK_STATE_UNSPECIFIED)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			after = task.GetTaskId()
			if task.GetKind() != metadv1.TaskKind_TASK_KIND_OFFLOAD {
				continue
			}
			if task.GetState() == metadv1.TaskState_TASK_STATE_SUCCESS {
				success[string(task.GetKey())]++
			} else if task.GetState() != metadv1.TaskState_TASK_STATE_FAILED {
				t.Fatalf("offload task left %s: %v", task.GetState(), task)
			}
		}
		if !more {
			break
		}
	}
	for _, k := range keys {
		if success[k] != 1 {
			t.Fatalf("%s: %d successful offload tasks, want 1 (%v)", k, success[k], success)
		}
	}
}

// TestPromotionOnHit: a cluster with --promote-on-hit and a worker (metactl worker --local-disk
// DIR --promote) whose SSD holds objects that are on disk alone: two reads of one queue its
// promotion, the worker reads the file back into the memory replica the leader places on its
// segment, and the next read names that memory replica first.
func TestPromotionOnHit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--promote-on-hit")
	admin := c.Client()
	c.Leader(admin, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	awaitFeatureLevel(t, ctx, admin, 5)
	workerID := client.NewUUID()
	dir := t.TempDir()
	c.StartWorker(1, "16MiB", "--client", workerID.String(), "--local-disk", dir, "--promote", "--task-interval", "50ms")
	// The objects are written through a staging client's segment, reported on the worker's SSD
	// (their files made here), and left on disk alone when the staging segment goes.
	staging, err := client.New(client.Config{Endpoints: c.Endpoints(), ClientID: client.NewUUID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = staging.Close() })
	pingLoop(t, staging)
	seg := client.UUID(mountMemory(t, ctx, staging, "staging", 1<<20))
	keys := []string{"hot", "cold"}
	for _, k := range keys {
		if _, err := staging.Put(ctx, "", k, 3000, &client.PutOptions{PreferredSegments: []client.UUID{seg}}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, hex.EncodeToString([]byte("default")), hex.EncodeToString([]byte(k)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{7}, 3000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		segs, err := admin.ListSegments(ctx, client.SegmentFilter{Tier: metadv1.Tier_TIER_LOCAL_DISK})
		if err == nil && len(segs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's local disk not mounted: %v %v", segs, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if out, err := c.Metactl("disk", "offload", "--client", workerID.String(), "hot", "cold"); err != nil || strings.Count(out, "recorded") != 2 {
		t.Fatalf("disk offload: %v\n%s", err, out)
	}
	if _, err := staging.UnmountSegment(ctx, seg); err != nil {
		t.Fatal(err)
	}
	first := func(key string) metadv1.Tier {
		t.Helper()
		g, err := admin.Get(ctx, "", key)
		if err != nil || len(g.GetReplicas()) == 0 {
			t.Fatalf("get %s: %v %v", key, g, err)
		}
		return g.GetReplicas()[0].GetTier()
	}
	if first("hot") != metadv1.Tier_TIER_LOCAL_DISK || first("cold") != metadv1.Tier_TIER_LOCAL_DISK {
		t.Fatal("the objects are not on disk alone")
	}
	deadline = time.Now().Add(30 * time.Second)
	for first("hot") != metadv1.Tier_TIER_MEMORY { // every read counts: the second queues it
		if time.Now().After(deadline) {
			t.Fatal("hot was not promoted within 30s")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	g, err := admin.Get(ctx, "", "hot")
	if err != nil || len(g.GetReplicas()) != 2 || g.GetReplicas()[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
		t.Fatalf("hot after its promotion: %v %v", g, err)
	}
	g, err = admin.Get(ctx, "", "cold")
	if err != nil || len(g.GetReplicas()) != 1 {
		t.Fatalf("cold, read twice in all, was promoted too early or lost: %v %v", g, err)
	}
}

// TestWorkerEvictsItsOwnSSD: a worker whose SSD (--disk-capacity) holds four objects offloads a
// fifth by removing its oldest file first and reporting it (EvictDiskReplica): in the end the
// cluster names exactly the files on the worker's disk, the newest four, and the older objects
// keep their memory replicas.
func TestWorkerEvictsItsOwnSSD(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3)
	admin := c.Client()
	c.Leader(admin, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	awaitFeatureLevel(t, ctx, admin, 5)
	workerID := client.NewUUID()
	dir := t.TempDir()
	const size, fit = 4000, 4 // 4032 bytes counted each: four fit in 16 KiB
	c.StartWorker(1, "1MiB", "--client", workerID.String(), "--local-disk", dir, "--disk-capacity", "16KiB",
		"--offload", "--task-interval", "20ms", "--endpoint", "127.0.0.1:9501")
	awaitWorkerDisk(t, ctx, admin, workerID)
	tiers := func(key string) []metadv1.Tier {
		g, err := admin.Get(ctx, "", key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		var out []metadv1.Tier
		for _, r := range g.GetReplicas() {
			out = append(out, r.GetTier())
		}
		return out
	}
	onDisk := func(key string) bool {
		for _, tier := range tiers(key) {
			if tier == metadv1.Tier_TIER_LOCAL_DISK {
				return true
			}
		}
		return false
	}
	const n = 10
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ssd-%02d", i)
		if _, err := admin.Put(ctx, "", keys[i], size, nil); err != nil {
			t.Fatalf("put %s: %v", keys[i], err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for !onDisk(keys[i]) { // one offload at a time: the order of the files is the order of the puts
			if time.Now().After(deadline) {
				t.Fatalf("%s not offloaded within 20s", keys[i])
			}
			time.Sleep(10 * time.Millisecond) // poll interval
		}
	}
	for i, k := range keys {
		_, err := os.Stat(filepath.Join(dir, hex.EncodeToString([]byte("default")), hex.EncodeToString([]byte(k))))
		kept := i >= n-fit
		if (err == nil) != kept || onDisk(k) != kept {
			t.Fatalf("%s (put %d of %d): file %v, LOCAL_DISK replica %v; want both %v", k, i+1, n, err, onDisk(k), kept)
		}
		if got := tiers(k); got[0] != metadv1.Tier_TIER_MEMORY {
			t.Fatalf("%s lost its memory replica: %v", k, got)
		}
	}
	segs, err := admin.ListSegments(ctx, client.SegmentFilter{Client: workerID})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.GetSegment().GetTier() == metadv1.Tier_TIER_LOCAL_DISK && s.GetUsedBytes() != fit*4032 {
			t.Fatalf("the registration accounts %d bytes, want %d", s.GetUsedBytes(), fit*4032)
		}
	}
}

// awaitWorkerDisk waits up to 20 s until the worker has mounted its memory segment and its local
// disk (metactl worker --segments 1 --local-disk).
func awaitWorkerDisk(t *testing.T, ctx context.Context, admin *client.Client, workerID client.UUID) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		segs, err := admin.ListSegments(ctx, client.SegmentFilter{Client: workerID})
		if err == nil && len(segs) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's segment and local disk not mounted: %v %v", segs, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
