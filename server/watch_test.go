package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// TestWatchOverGRPC: a tenant principal's watch is authorized by the tenant its request names
// (when its request arrives: the stream interceptor admits it then), answers its first response
// at once, sends its tenant's events only, and a start the window no longer holds is
// FAILED_PRECONDITION with WATCH_COMPACTED naming the oldest revision.
func TestWatchOverGRPC(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	for _, tn := range []string{"a", "b"} {
		n.b.MustApply(t, servicetest.RegisterTenant(tn))
	}
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	n.b.MustApply(t, servicetest.Grant("root-ish", "admin"))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	admin, _ := servicetest.NewKey(t, n.b, "root-ish", 0)
	c := n.clients(t)

	ctx, cancel := context.WithTimeout(withKey(t, alice), 30*time.Second)
	defer cancel()
	rival, err := c.meta.Watch(ctx, &metadv1.WatchRequest{Tenant: "b"})
	if err == nil {
		_, err = rival.Recv()
	}
	wantCode(t, err, codes.PermissionDenied)
	every, err := c.meta.Watch(ctx, &metadv1.WatchRequest{AllTenants: true})
	if err == nil {
		_, err = every.Recv()
	}
	wantCode(t, err, codes.PermissionDenied)

	stream, err := c.meta.Watch(ctx, &metadv1.WatchRequest{ProgressIntervalMs: 100}) // "": alice's one tenant
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || len(first.GetEvents()) != 0 || first.GetNext().GetIndex() == 0 {
		t.Fatalf("first response %v %v: want no events and the start revision", first, err)
	}
	actx := withKey(t, admin)
	if _, err := c.meta.MountSegment(actx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"b", "a"} {
		if _, err := c.meta.PutStart(actx, &metadv1.PutStartRequest{Tenant: tn, ClientId: idb(clientA), Key: []byte("k-" + tn), Size: 64}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.meta.PutEnd(actx, &metadv1.PutEndRequest{Tenant: tn, ClientId: idb(clientA), Key: []byte("k-" + tn)}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if evs := resp.GetEvents(); len(evs) > 0 {
			if len(evs) != 1 || evs[0].GetTenant() != "a" || string(evs[0].GetKey()) != "k-a" ||
				evs[0].GetKind() != metadv1.WatchEventKind_WATCH_EVENT_KIND_STORED || len(evs[0].GetReplicas()) != 1 {
				t.Fatalf("alice's stream got %v", evs)
			}
			break
		}
	}

	applied, _ := n.b.FSM().Window().Applied()
	n.b.FSM().Window().Reset(applied) // as a restore does
	old, err := c.meta.Watch(actx, &metadv1.WatchRequest{Start: &metadv1.Revision{Index: 1}})
	if err == nil {
		_, err = old.Recv()
	}
	d := wantErr(t, err, codes.FailedPrecondition, metadv1.Reason_REASON_WATCH_COMPACTED)
	if d.GetRevision().GetIndex() != applied+1 {
		t.Fatalf("compacted names %v, want %d", d.GetRevision(), applied+1)
	}
	// The open stream is ended by the replaced state.
	if _, err := stream.Recv(); err != nil {
		wantErr(t, err, codes.Unavailable, metadv1.Reason_REASON_STATE_REPLACED)
	} else if _, err := stream.Recv(); err == nil {
		t.Fatal("the stream went on after its member's state was replaced")
	}
}

// BenchmarkWatchStream: the events per second one Watch stream delivers over loopback gRPC
// (decode included) from a window holding 64k STORED events of one tenant, 1,024 per response.
func BenchmarkWatchStream(b *testing.B) {
	h := start(b, newFakeBackend(b, nil), testConfig())
	if _, err := h.meta.MountSegment(tctx(b), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<30)}); err != nil {
		b.Fatal(err)
	}
	const n, batch = 1 << 16, 1024
	for i := 0; i < n; i += batch {
		ps := &metadv1.BatchPutStart{ClientId: idb(clientA), Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}
		pe := &metadv1.BatchPutEnd{ClientId: idb(clientA)}
		for j := i; j < i+batch; j++ {
			k := []byte(fmt.Sprintf("bench/%08d", j))
			ps.Items = append(ps.Items, &metadv1.BatchPutStart_Item{Key: k, Size: 4096})
			pe.Keys = append(pe.Keys, k)
		}
		h.b.MustApply(b, &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: ps}})
		h.b.MustApply(b, &metadv1.Command{Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: pe}})
	}
	read := 0
	for b.Loop() {
		ctx, cancel := context.WithCancel(tctx(b))
		stream, err := h.meta.Watch(ctx, &metadv1.WatchRequest{Start: &metadv1.Revision{Index: 1}})
		if err != nil {
			b.Fatal(err)
		}
		for got := 0; got < n; {
			resp, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			got += len(resp.GetEvents())
		}
		read += n
		cancel()
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "events/s")
}
