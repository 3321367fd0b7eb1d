package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// BenchmarkOffloadThroughput: TIERS.md's offload target. Three metad processes on loopback; one
// worker (a client in this process) mounts a memory segment and an offloading SSD registration,
// and 50,000 objects of 4 KiB are put on its segment in batches of 1,024, queuing 50,000 offload
// tasks. Then the worker drains its mailbox as a worker does (client.RunTasksWith: FetchTasks of
// 1,024, then one NotifyOffload of them) with an offload that writes nothing, so that the figure
// is the cluster's, not a disk's: offload tasks acknowledged per second (target >= 20,000).
func BenchmarkOffloadThroughput(b *testing.B) {
	const objects, batch = 50_000, 1024
	for b.Loop() {
	}
	c := NewCluster(b, 3)
	admin := c.Client()
	c.Leader(admin, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	awaitFeatureLevel(b, ctx, admin, 5)
	workerID := client.NewUUID()
	worker, err := client.New(client.Config{Endpoints: c.Endpoints(), ClientID: workerID})
	if err != nil {
		b.Fatal(err)
	}
	defer worker.Close()
	pingLoop(b, worker)
	id := client.NewUUID()
	if err := worker.MountSegment(ctx, &metadv1.SegmentDesc{Id: id.Bytes(), Name: "offload-bench", Base: 1 << 30,
		Size: 2 * objects * 4096, Endpoint: "127.0.0.1:1", Tier: metadv1.Tier_TIER_MEMORY}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := worker.MountLocalDisk(ctx, 2*objects*4096, "127.0.0.1:1", true); err != nil {
		b.Fatal(err)
	}
	items := make([]client.BatchPutItem, 0, batch)
	for i := 0; i < objects; i += batch {
		items = items[:0]
		for j := i; j < min(i+batch, objects); j++ {
			items = append(items, client.BatchPutItem{Key: fmt.Sprintf("ob-%06d", j), Size: 4096})
		}
		sts, err := worker.BatchPut(ctx, "", items, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range sts {
			if st.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				b.Fatal(st)
			}
		}
	}
	runner := client.TaskRunner{Offload: func(*metadv1.ScheduledTask) error { return nil }}
	start := time.Now()
	done := 0
	for done < objects {
		n, err := worker.RunTasksWith(ctx, batch, runner)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatalf("mailbox empty after %d of %d offloads", done, objects)
		}
		done += n
	}
	elapsed := time.Since(start)
	segs, err := admin.ListSegments(ctx, client.SegmentFilter{Tier: metadv1.Tier_TIER_LOCAL_DISK})
	if err != nil || len(segs) != 1 || segs[0].GetReplicas() != objects {
		b.Fatalf("the SSD registration after the offloads: %v %v; want %d replicas", segs, err, objects)
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "offloads/s")
	b.ReportMetric(float64(elapsed.Milliseconds()), "ms/50k-offloads")
}
