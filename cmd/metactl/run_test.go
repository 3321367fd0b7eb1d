package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"metad/client"
	"metad/proto/metadv1"
)

// result is one metactl run's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// metactl runs a command line against the given endpoints.
func metactl(t *testing.T, endpoints string, args ...string) result {
	t.Helper()
	return metactlCtx(t, context.Background(), endpoints, args...)
}

func metactlCtx(t *testing.T, ctx context.Context, endpoints string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--endpoints", endpoints, "--timeout", "5s"}, args...)
	code := runContext(ctx, full, &out, &errb)
	t.Logf("metactl %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return result{code, out.String(), errb.String()}
}

func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
	return r
}

func (r result) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
}

// mountFor gives the fake cluster one memory segment so puts can place replicas.
func mountFor(t *testing.T, c *fakeCluster) {
	t.Helper()
	metactl(t, c.addr, "segment", "mount", "--size", "1GiB", "--endpoint", "sim://test").ok(t)
}

func TestPutGetRoundTrip(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)

	r := metactl(t, c.addr, "put", "k1", "--size", "4KiB").ok(t)
	if !strings.Contains(r.stdout, "put k1: 4 KiB in tenant default, 1 replica") || !strings.Contains(r.stdout, "COMPLETE") {
		t.Fatalf("put output:\n%s", r.stdout)
	}
	var got getView
	metactl(t, c.addr, "get", "k1", "-o", "json").ok(t).json(t, &got)
	if got.Key != "k1" || got.Tenant != "default" || got.Size != 4096 || got.LeaseTTLMs != 10000 || len(got.Replicas) != 1 ||
		got.Replicas[0].Status != "COMPLETE" || got.Replicas[0].Tier != "MEMORY" || got.Replicas[0].SegmentEndpoint != "sim://test" {
		t.Fatalf("get: %+v", got)
	}
	r = metactl(t, c.addr, "get", "k1", "--stale").ok(t)
	if !strings.Contains(r.stdout, "no lease (stale read)") || !strings.Contains(r.stdout, "REPLICA") {
		t.Fatalf("stale get output:\n%s", r.stdout)
	}

	// A second put of the key is refused with the server's reason.
	r = metactl(t, c.addr, "put", "k1", "--size", "1")
	if r.code != exitError || !strings.HasPrefix(r.stderr, `error: OBJECT_ALREADY_EXISTS: tenant "default" key "k1" exists`) {
		t.Fatalf("second put: %+v", r)
	}
}

func TestGetMissingIsAnError(t *testing.T) {
	c := startCluster(t)
	r := metactl(t, c.addr, "get", "nope")
	if r.code != exitError || r.stderr != "error: OBJECT_NOT_FOUND: tenant \"default\" key \"nope\" not found\n" || r.stdout != "" {
		t.Fatalf("get of a missing key: %+v", r)
	}
}

func TestPutStartThenEnd(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	r := metactl(t, c.addr, "put-start", "k2", "--size", "100", "--tenant", "default", "--data-type", "7").ok(t)
	if !strings.Contains(r.stdout, "PROCESSING") || !strings.Contains(r.stdout, "metactl put-end k2 --client "+defaultClientID().String()) {
		t.Fatalf("put-start output:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "get", "k2"); r.code != exitError || !strings.HasPrefix(r.stderr, "error: REPLICA_IS_NOT_READY: ") {
		t.Fatalf("get while writing: %+v", r)
	}
	other := client.NewUUID().String()
	if r := metactl(t, c.addr, "put-end", "k2", "--client", other); r.code != exitError || !strings.HasPrefix(r.stderr, "error: ILLEGAL_CLIENT: ") {
		t.Fatalf("put-end by another client: %+v", r)
	}
	metactl(t, c.addr, "put-end", "k2").ok(t)
	var got getView
	metactl(t, c.addr, "-o", "json", "get", "k2").ok(t).json(t, &got)
	if got.DataType != 7 || got.Size != 100 {
		t.Fatalf("get after put-end: %+v", got)
	}
	metactl(t, c.addr, "put-start", "k3", "--size", "100").ok(t)
	metactl(t, c.addr, "put-revoke", "k3").ok(t)
	metactl(t, c.addr, "put", "k4", "--size", "100", "--host", "node-7").ok(t)
	c.mu.Lock()
	host := c.lastConfig.GetPreferredHost()
	c.mu.Unlock()
	if host != "node-7" {
		t.Fatalf("put --host node-7 sent preferred_host %q", host)
	}
	if r := metactl(t, c.addr, "get", "k3"); !strings.HasPrefix(r.stderr, "error: OBJECT_NOT_FOUND") {
		t.Fatalf("get after revoke: %+v", r)
	}
}

func TestExistsRmAndGroups(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	for _, k := range []string{"a", "b", "c"} {
		metactl(t, c.addr, "put", k, "--size", "64", "--group", "g1").ok(t)
	}
	var ex []existView
	metactl(t, c.addr, "exists", "a", "zz", "c", "-o", "json").ok(t).json(t, &ex)
	if len(ex) != 3 || !ex[0].Exists || ex[1].Exists || !ex[2].Exists || ex[1].Key != "zz" {
		t.Fatalf("exists: %+v", ex)
	}
	if r := metactl(t, c.addr, "exists", "zz").ok(t); !strings.Contains(r.stdout, "zz   false") {
		t.Fatalf("exists table:\n%s", r.stdout)
	}
	var gl struct {
		Keys []string `json:"keys"`
	}
	metactl(t, c.addr, "group", "ls", "g1", "-o", "json").ok(t).json(t, &gl)
	if strings.Join(gl.Keys, ",") != "a,b,c" {
		t.Fatalf("group ls: %+v", gl)
	}
	metactl(t, c.addr, "rm", "b", "--force").ok(t)
	if r := metactl(t, c.addr, "rm", "b"); !strings.HasPrefix(r.stderr, "error: OBJECT_NOT_FOUND") {
		t.Fatalf("second rm: %+v", r)
	}
	if r := metactl(t, c.addr, "group", "rm", "g1").ok(t); !strings.Contains(r.stdout, "removed group g1: 2 objects") {
		t.Fatalf("group rm:\n%s", r.stdout)
	}
	metactl(t, c.addr, "put", "d", "--size", "64").ok(t)
	var ra map[string]any
	metactl(t, c.addr, "rm-all", "-o", "json").ok(t).json(t, &ra)
	if ra["removed"] != float64(1) || ra["tenant"] != "default" {
		t.Fatalf("rm-all: %v", ra)
	}
}

func TestTenantVerbs(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	if r := metactl(t, c.addr, "tenant", "create", "t1", "--quota", "1GiB").ok(t); !strings.Contains(r.stdout, "registered tenant t1 (instance 2, quota 1 GiB)") {
		t.Fatalf("tenant create:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "tenant", "create", "t1"); r.code != exitError || !strings.HasPrefix(r.stderr, "error: TENANT_ALREADY_EXISTS: ") {
		t.Fatalf("second create: %+v", r)
	}
	metactl(t, c.addr, "put", "k", "--size", "4KiB", "--tenant", "t1").ok(t)
	var ts []tenantView
	metactl(t, c.addr, "tenant", "ls", "-o", "json").ok(t).json(t, &ts)
	if len(ts) != 2 || ts[1].Name != "t1" || ts[1].RequestedQuotaBytes != 1<<30 || ts[1].Objects != 1 || ts[1].State != "open" {
		t.Fatalf("tenant ls: %+v", ts)
	}
	r := metactl(t, c.addr, "tenant", "ls").ok(t)
	if !strings.Contains(r.stdout, "NAME") || !strings.Contains(r.stdout, "unlimited") || !strings.Contains(r.stdout, "1 GiB") {
		t.Fatalf("tenant ls table:\n%s", r.stdout)
	}
	metactl(t, c.addr, "tenant", "quota", "t1", "2GiB").ok(t)
	var q map[string]any
	metactl(t, c.addr, "tenant", "quota", "t1", "-o", "json").ok(t).json(t, &q)
	if q["requested_quota_bytes"] != float64(2<<30) || q["capacity_bytes"] != float64(4<<30) {
		t.Fatalf("tenant quota: %v", q)
	}
	if r := metactl(t, c.addr, "tenant", "rm", "t1"); !strings.HasPrefix(r.stderr, "error: TENANT_NOT_EMPTY: ") {
		t.Fatalf("tenant rm of a non-empty tenant: %+v", r)
	}
	if r := metactl(t, c.addr, "tenant", "rm", "t1", "--force").ok(t); !strings.Contains(r.stdout, "1 object and 0 groups erased") {
		t.Fatalf("tenant rm --force:\n%s", r.stdout)
	}
}

func TestSegmentVerbs(t *testing.T) {
	c := startCluster(t)
	owner := client.NewUUID()
	id := client.NewUUID()
	r := metactl(t, c.addr, "segment", "mount", "--size", "1MiB", "--tier", "nof", "--client", owner.String(), "--id", id.String(), "-o", "json").ok(t)
	var sv segmentView
	r.json(t, &sv)
	if sv.ID != id.String() || sv.Owner != owner.String() || sv.Tier != "NOF" || sv.Size != 1<<20 || sv.Base == 0 || sv.Base%64 != 0 {
		t.Fatalf("mount: %+v", sv)
	}
	if !strings.Contains(r.stderr, "stays mounted only while client "+owner.String()+" pings") {
		t.Fatalf("mount note missing: %s", r.stderr)
	}
	var segs []segmentView
	metactl(t, c.addr, "segment", "ls", "--tier", "NOF", "-o", "json").ok(t).json(t, &segs)
	if len(segs) != 1 || segs[0].ID != id.String() || segs[0].UsedBytes != 4096 || segs[0].ArenaFree != 1024 {
		t.Fatalf("segment ls: %+v", segs)
	}
	metactl(t, c.addr, "segment", "ls", "--client", client.NewUUID().String(), "-o", "json").ok(t).json(t, &segs)
	if len(segs) != 0 {
		t.Fatalf("segment ls of another client: %+v", segs)
	}
	// A graceful unmount: the segment is closing until its deadline, and segment ls says so.
	var closing map[string]any
	metactl(t, c.addr, "segment", "unmount", id.String(), "--grace", "30s", "-o", "json").ok(t).json(t, &closing)
	if closing["closing"] != true || closing["unmount_at"] != "2030-01-01T00:00:30.000Z" {
		t.Fatalf("graceful unmount: %+v", closing)
	}
	if r := metactl(t, c.addr, "segment", "unmount", id.String(), "--grace", "1m").ok(t); !strings.Contains(r.stdout,
		"segment "+id.String()+" is closing: no new allocations, replicas readable, unmounted at 2030-01-01T00:00:30.000Z") {
		t.Fatalf("repeated graceful unmount:\n%s", r.stdout)
	}
	metactl(t, c.addr, "segment", "ls", "-o", "json").ok(t).json(t, &segs)
	if len(segs) != 1 || !segs[0].Closing || segs[0].UnmountAt != "2030-01-01T00:00:30.000Z" {
		t.Fatalf("segment ls of a closing segment: %+v", segs)
	}
	if r := metactl(t, c.addr, "segment", "ls").ok(t); !strings.Contains(r.stdout, "CLOSING") || !strings.Contains(r.stdout, "ARENA-FREE") || !strings.Contains(r.stdout, "until 2030-01-01T00:00:30.000Z") {
		t.Fatalf("segment ls table:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "segment", "unmount", id.String(), "--grace", "-1s"); r.code == 0 {
		t.Fatalf("negative grace accepted: %+v", r)
	}
	// Unmount looks the owner up.
	if r := metactl(t, c.addr, "segment", "unmount", id.String()).ok(t); !strings.Contains(r.stdout, "unmounted segment "+id.String()+": 2 replicas dropped, 1 object erased") {
		t.Fatalf("unmount:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "segment", "unmount", id.String()); r.code != exitError || !strings.HasPrefix(r.stderr, "error: SEGMENT_NOT_FOUND: ") {
		t.Fatalf("second unmount: %+v", r)
	}
}

func TestMemberLeaderAndStatus(t *testing.T) {
	c := startCluster(t)
	metactl(t, c.addr, "member", "add", "n4", "127.0.0.1:6104").ok(t)
	var ml struct {
		Index   uint64       `json:"index"`
		Members []memberView `json:"members"`
	}
	metactl(t, c.addr, "member", "ls", "-o", "json").ok(t).json(t, &ml)
	if ml.Index != 7 || len(ml.Members) != 2 || ml.Members[1].Name != "n4" || !ml.Members[0].Leader ||
		ml.Members[0].FeatureLevel != 3 || ml.Members[1].FeatureLevel != 0 {
		t.Fatalf("member ls: %+v", ml)
	}
	if r := metactl(t, c.addr, "member", "ls").ok(t); !strings.Contains(r.stdout, "LEVEL") || !strings.Contains(r.stdout, "n4") {
		t.Fatalf("member ls (table):\n%s", r.stdout)
	}
	metactl(t, c.addr, "member", "rm", "n4").ok(t)
	if r := metactl(t, c.addr, "leader", "transfer", "--to", "n3").ok(t); !strings.Contains(r.stdout, "leader is now n3") {
		t.Fatalf("leader transfer:\n%s", r.stdout)
	}

	dead := deadAddr(t)
	r := metactl(t, c.addr+","+dead, "status").ok(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ENDPOINT") || !strings.Contains(lines[1], "leader") ||
		!strings.Contains(lines[1], "42") || !strings.Contains(lines[2], "unreachable") {
		t.Fatalf("status table:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "unreachable "+dead) {
		t.Fatalf("status stderr: %s", r.stderr)
	}
	var sv []statusView
	metactl(t, c.addr+","+dead, "status", "-o", "json").ok(t).json(t, &sv)
	if len(sv) != 2 || !sv[0].Reachable || sv[0].Name != "n1" || sv[0].Role != "leader" || sv[0].Term != 3 || sv[0].LastLogIndex != 43 || sv[1].Reachable || sv[1].Error == "" {
		t.Fatalf("status json: %+v", sv)
	}
	if r := metactl(t, dead, "status"); r.code != exitError || !strings.HasPrefix(r.stderr, "error: UNAVAILABLE: no endpoint answered") {
		t.Fatalf("status with nothing up: %+v", r)
	}
}

// A node that is not the leader answers NOT_LEADER with the leader's address: metactl follows it.
func TestFollowsNotLeader(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		return nil, notLeaderErr("n1", c.addr)
	}))
	metadv1.RegisterMetadataServer(srv, &metadv1.UnimplementedMetadataServer{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	metactl(t, lis.Addr().String(), "put", "k", "--size", "64").ok(t)
	metactl(t, c.addr, "get", "k").ok(t)
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"tenant"},
		{"tenant", "explode"},
		{"put"},
		{"put", "k"},
		{"put", "k", "--size", "4XB"},
		{"put", "k", "--size", "4KiB", "--replicas", "9"},
		{"put", "k", "--size", "4KiB", "--client", "not-a-uuid"},
		{"get", "a", "b"},
		{"get", "k", "-o", "yaml"},
		{"get", "k", "--timeout", "0s"},
		{"get", "k", "--nope"},
		{"put-end", "k", "--tier", "TAPE"},
		{"put-end", "k", "--tier", "LOCAL_DISK"},
		{"segment", "mount", "--size", "4096", "--tier", "DISK", "--base", "4096"},
		{"segment", "mount", "--size", "100"},
		{"segment", "unmount", "xyz"},
		{"worker", "--segment-size", "100"},
		{"bench", "--op", "scan"},
		{"bench", "--batch", "5000"},
		{"member", "add", "n4"},
		{"--bogus", "status"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		code := runContext(context.Background(), append([]string{"--endpoints", "127.0.0.1:1"}, args...), &out, &errb)
		if code != exitUsage || errb.Len() == 0 {
			t.Errorf("metactl %s: exit %d, stderr %q; want exit 2 with a message", strings.Join(args, " "), code, errb.String())
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"put", "-h"}, {"help", "tenant", "ls"}} {
		var out, errb bytes.Buffer
		if code := runContext(context.Background(), args, &out, &errb); code != exitOK {
			t.Errorf("metactl %v: exit %d", args, code)
		}
	}
	var out bytes.Buffer
	runContext(context.Background(), []string{"help"}, &out, &out)
	for _, v := range verbs {
		if !strings.Contains(out.String(), v.name) {
			t.Errorf("help does not list %q", v.name)
		}
	}
}

func TestWorkerMountsAndPings(t *testing.T) {
	c := startCluster(t)
	id := client.NewUUID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result)
	go func() {
		var out, errb bytes.Buffer
		code := runContext(ctx, []string{"--endpoints", c.addr, "worker", "--segments", "3", "--segment-size", "64MiB",
			"--client", id.String(), "--ping-interval", "20ms", "-o", "json"}, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	waitFor(t, "3 segments and 3 pings", func() bool { return len(c.segmentsOf(id[:])) == 3 && c.pingCount(id[:]) >= 3 })
	// The cluster loses the worker's segments (it was expired): the next ping remounts them.
	c.dropSegments()
	waitFor(t, "the segments remounted", func() bool { return len(c.segmentsOf(id[:])) == 3 })
	cancel() // as SIGINT does
	r := <-done
	t.Logf("worker:\n%s%s", r.stdout, r.stderr)
	if r.code != exitOK {
		t.Fatalf("worker exit %d: %s", r.code, r.stderr)
	}
	var wv workerView
	r.json(t, &wv)
	if wv.ClientID != id.String() || len(wv.Segments) != 3 {
		t.Fatalf("worker output: %+v", wv)
	}
	for i, s := range wv.Segments {
		if s.Size != 64<<20 || s.Base%64 != 0 || s.Owner != id.String() || (i > 0 && s.Base != wv.Segments[i-1].Base+64<<20) {
			t.Fatalf("segment %d: %+v", i, s)
		}
	}
	if !strings.Contains(r.stderr, "leader n1 at "+c.addr+" (term 2)") || !strings.Contains(r.stderr, "remounting") {
		t.Fatalf("worker events: %s", r.stderr)
	}
}

func TestWorkerDurationAndGeneratedID(t *testing.T) {
	c := startCluster(t)
	r := metactl(t, c.addr, "worker", "--segments", "1", "--segment-size", "1MiB", "--duration", "300ms",
		"--ping-interval", "50ms", "--unmount-on-exit").ok(t)
	if !strings.Contains(r.stdout, "mounted 1 segment of 1 MiB (MEMORY)") || !strings.Contains(r.stdout, "unmounted") {
		t.Fatalf("worker output:\n%s", r.stdout)
	}
	if n := c.allSegments(); n != 0 {
		t.Fatalf("%d segments left after --unmount-on-exit", n)
	}
}

func TestBench(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	for _, args := range [][]string{
		{"bench", "--op", "put", "--clients", "4", "--duration", "300ms"},
		{"bench", "--op", "put", "--clients", "3", "--duration", "200ms", "--batch", "16", "--conns", "2"},
		{"bench", "--op", "get", "--clients", "4", "--duration", "200ms", "--keys", "100"},
		{"bench", "--op", "get", "--clients", "2", "--duration", "200ms", "--keys", "50", "--batch", "8"},
		{"bench", "--op", "mixed", "--clients", "4", "--duration", "200ms", "--keys", "20", "--size", "1KiB"},
		{"bench", "--op", "exist", "--clients", "2", "--duration", "200ms", "--keys", "50", "--batch", "40"},
	} {
		var res benchResult
		metactl(t, c.addr, append(args, "-o", "json")...).ok(t).json(t, &res)
		if res.Ops == 0 || res.OpsPerSec <= 0 || res.P50Ms <= 0 || res.P99Ms < res.P50Ms || res.P999Ms < res.P99Ms ||
			res.Errors != 0 || res.DurationS < 0.2 {
			t.Fatalf("bench %v: %+v", args, res)
		}
		switch res.Op {
		case "put":
			if res.Puts == 0 || res.Gets != 0 {
				t.Fatalf("put bench: %+v", res)
			}
		case "get":
			if res.Gets == 0 || res.Puts != 0 || res.KeySpace == 0 {
				t.Fatalf("get bench: %+v", res)
			}
		case "mixed":
			if res.Gets == 0 || res.Puts == 0 {
				t.Fatalf("mixed bench: %+v", res)
			}
		case "exist":
			if res.Gets != res.Items || res.Puts != 0 || res.KeySpace == 0 {
				t.Fatalf("exist bench (every key asked was pre-populated): %+v", res)
			}
		}
		if res.Op == "put" && (res.Ops != res.Puts || res.Items != res.Puts || res.RPCs != 2*res.Ops/uint64(res.Batch) ||
			res.ObjectP50Ms != res.P50Ms) {
			t.Fatalf("put bench (an op is one object, two RPCs per object or batch of them): %+v", res)
		}
		if res.Op != "put" && res.Batch > 1 && res.Items != res.Ops*uint64(res.Batch) {
			t.Fatalf("batch bench items: %+v", res)
		}
	}
	r := metactl(t, c.addr, "bench", "--clients", "2", "--duration", "100ms").ok(t)
	for _, want := range []string{"ops/s", "p50", "p99", "p999", "errors"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("bench table lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestBenchWithoutSegmentsFails(t *testing.T) {
	c := startCluster(t)
	r := metactl(t, c.addr, "bench", "--clients", "2", "--duration", "100ms")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: NO_AVAILABLE_HANDLE: ") {
		t.Fatalf("bench with no segment: %+v", r)
	}
	r = metactl(t, c.addr, "bench", "--op", "get", "--keys", "10", "--clients", "2", "--duration", "100ms")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "error: NO_AVAILABLE_HANDLE: pre-populating 10 keys: ") {
		t.Fatalf("get bench with no segment: %+v", r)
	}
	// --mount gives it one, pinged during the run.
	var res benchResult
	metactl(t, c.addr, "bench", "--clients", "2", "--duration", "300ms", "--mount", "256MiB", "-o", "json").ok(t).json(t, &res)
	if res.Puts == 0 || c.allSegments() != 1 {
		t.Fatalf("bench --mount: %+v, %d segments", res, c.allSegments())
	}
	metactl(t, c.addr, "bench", "--op", "mixed", "--keys", "10", "--clients", "2", "--duration", "100ms", "--mount", "64MiB").ok(t)
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
