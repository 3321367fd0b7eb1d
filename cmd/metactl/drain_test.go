package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// The fake's drain jobs: a job starts with 4 objects left on a mounted segment; each DrainStatus
// of a running job moves 2 of them, and the job is DONE when none is left.

func (a *fakeAdmin) StartDrain(_ context.Context, r *metadv1.StartDrainRequest) (*metadv1.StartDrainResponse, error) {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range r.GetSegmentIds() {
		if _, ok := c.segments[string(id)]; !ok {
			return nil, reject(codes.NotFound, metadv1.Reason_REASON_SEGMENT_NOT_FOUND, "segment_ids: segment %s is not mounted", uuidText(id))
		}
	}
	if c.drains == nil {
		c.drains = map[uint64]*metadv1.DrainJob{}
	}
	j := &metadv1.DrainJob{DrainId: uint64(len(c.drains) + 1), SegmentIds: r.GetSegmentIds(), TargetSegmentIds: r.GetTargetSegmentIds(),
		MaxConcurrency: r.GetMaxConcurrency(), State: metadv1.DrainState_DRAIN_STATE_RUNNING, ObjectsLeft: 4, CreatedUnixNano: 1}
	c.drains[j.DrainId] = j
	return &metadv1.StartDrainResponse{Drain: proto.Clone(j).(*metadv1.DrainJob)}, nil
}

func (a *fakeAdmin) DrainStatus(ctx context.Context, r *metadv1.DrainStatusRequest) (*metadv1.DrainStatusResponse, error) {
	c := a.c
	c.mu.Lock()
	if c.drainStalls > 0 {
		c.drainStalls--
		c.mu.Unlock()
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer c.mu.Unlock()
	resp := &metadv1.DrainStatusResponse{}
	for id := uint64(1); id <= uint64(len(c.drains)); id++ {
		j := c.drains[id]
		if r.GetDrainId() != 0 && r.GetDrainId() != id {
			continue
		}
		if j.State == metadv1.DrainState_DRAIN_STATE_RUNNING {
			j.ObjectsLeft, j.Moved = j.ObjectsLeft-2, j.Moved+2
			if j.ObjectsLeft == 0 {
				j.State = metadv1.DrainState_DRAIN_STATE_DONE
			}
		}
		resp.Drains = append(resp.Drains, proto.Clone(j).(*metadv1.DrainJob))
	}
	if r.GetDrainId() != 0 && len(resp.Drains) == 0 {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_DRAIN_NOT_FOUND, "drain %d: not found", r.GetDrainId())
	}
	return resp, nil
}

func (a *fakeAdmin) CancelDrain(_ context.Context, r *metadv1.CancelDrainRequest) (*metadv1.CancelDrainResponse, error) {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.drains[r.GetDrainId()]
	if j == nil {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_DRAIN_NOT_FOUND, "drain %d: not found", r.GetDrainId())
	}
	if j.State == metadv1.DrainState_DRAIN_STATE_RUNNING {
		j.State = metadv1.DrainState_DRAIN_STATE_CANCELLED
	}
	return &metadv1.CancelDrainResponse{Drain: proto.Clone(j).(*metadv1.DrainJob)}, nil
}

// TestDrainVerbs: drain start (its usage errors, a refusal, -o json), drain status as a table and
// as JSON, --wait printing the progress until the job is done, and drain cancel.
func TestDrainVerbs(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	var seg string
	for id := range c.segments {
		seg = uuidText([]byte(id))
	}
	for _, args := range [][]string{
		{"drain", "start"},
		{"drain", "start", "--segments", "nope"},
		{"drain", "start", "--segments", seg, "--max-concurrency", "0"},
		{"drain", "status", "--wait"},
		{"drain", "cancel"},
	} {
		if r := metactl(t, c.addr, args...); r.code != exitUsage {
			t.Fatalf("%v: exit %d, want a usage error", args, r.code)
		}
	}
	r := metactl(t, c.addr, "drain", "start", "--segments", "00000000-0000-4000-8000-000000000001")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: SEGMENT_NOT_FOUND") {
		t.Fatalf("drain of an unknown segment: %+v", r)
	}
	var started drainView
	metactl(t, c.addr, "drain", "start", "--segments", seg, "--max-concurrency", "4", "-o", "json").ok(t).json(t, &started)
	if started.ID != 1 || started.State != "RUNNING" || started.ObjectsLeft != 4 || started.MaxConcurrency != 4 ||
		len(started.Segments) != 1 || started.Segments[0] != seg {
		t.Fatalf("drain start: %+v", started)
	}
	r = metactl(t, c.addr, "drain", "status").ok(t)
	if !strings.Contains(r.stdout, "LEFT") || !strings.Contains(r.stdout, "RUNNING") || !strings.Contains(r.stdout, seg) {
		t.Fatalf("drain status output:\n%s", r.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r = metactlCtx(t, ctx, c.addr, "drain", "status", "1", "--wait", "--interval", "10ms").ok(t)
	if !strings.Contains(r.stdout, "0 objects left, 4 moved, 0 failed") || !strings.Contains(r.stdout, "drain 1 DONE") {
		t.Fatalf("drain status --wait output:\n%s", r.stdout)
	}
	var views []drainView
	metactl(t, c.addr, "drain", "status", "-o", "json").ok(t).json(t, &views)
	if len(views) != 1 || views[0].State != "DONE" || views[0].Moved != 4 || views[0].ObjectsLeft != 0 {
		t.Fatalf("drain status -o json: %+v", views)
	}
	metactl(t, c.addr, "drain", "start", "--segments", seg).ok(t)
	r = metactl(t, c.addr, "drain", "cancel", "2").ok(t)
	if !strings.Contains(r.stdout, "drain 2 CANCELLED") {
		t.Fatalf("drain cancel output:\n%s", r.stdout)
	}
	r = metactl(t, c.addr, "drain", "cancel", "9")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: DRAIN_NOT_FOUND") {
		t.Fatalf("cancel of an unknown drain: %+v", r)
	}
}

// TestDrainWaitOutlastsAPollThatTimesOut: drain status --wait goes on after a poll that the
// cluster did not answer within --timeout (the drain runs whether or not it is watched), and
// reports it; a cluster that answers no poll for another --timeout ends the wait.
func TestDrainWaitOutlastsAPollThatTimesOut(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	var seg string
	for id := range c.segments {
		seg = uuidText([]byte(id))
	}
	metactl(t, c.addr, "drain", "start", "--segments", seg).ok(t)
	c.mu.Lock()
	c.drainStalls = 1
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := metactlCtx(t, ctx, c.addr, "--timeout", "200ms", "drain", "status", "1", "--wait", "--interval", "10ms").ok(t)
	if !strings.Contains(r.stdout, "drain 1: progress not read") || !strings.Contains(r.stdout, "drain 1 DONE") {
		t.Fatalf("drain status --wait output:\n%s", r.stdout)
	}

	metactl(t, c.addr, "drain", "start", "--segments", seg).ok(t)
	c.mu.Lock()
	c.drainStalls = 1000
	c.mu.Unlock()
	r = metactlCtx(t, ctx, c.addr, "--timeout", "100ms", "drain", "status", "2", "--wait", "--interval", "10ms")
	if r.code != exitError || !strings.Contains(strings.ToLower(r.stderr), "deadline") { // DeadlineExceeded, DEADLINE_EXCEEDED or "context deadline exceeded", by where it ended
		t.Fatalf("drain status --wait on a cluster that never answers: %+v", r)
	}
	if n := strings.Count(r.stdout, "progress not read"); n != 1 {
		t.Fatalf("drain status --wait reported %d failed polls, want 1 (each takes the whole --timeout):\n%s", n, r.stdout)
	}
}
