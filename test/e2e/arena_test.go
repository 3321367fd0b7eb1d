package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// Reservations across a leader change, on real processes: the leader answers a PutStart of a new
// key from its own term's allocation arenas with no log entry while it holds the leader lease; a
// leader change loses those reservations, and the new leader keeps an earlier term's arenas out of
// every placement until the fence (put_release_timeout plus the lease) has passed.

// arenaObj is the size of every object these tests write: a multiple of the 64-byte allocation
// unit, so that a full segment has no free byte left.
const arenaObj = 4096

// extent is one replica's allocated range: [off, end) of segment seg.
type extent struct {
	key      string
	seg      string
	off, end uint64
}

func (a extent) overlaps(b extent) bool { return a.seg == b.seg && a.off < b.end && b.off < a.end }

func (a extent) String() string { return fmt.Sprintf("%s [%d, %d)", a.key, a.off, a.end) }

// extentsOf returns the allocated ranges of key's replicas (sizes rounded up to 64 bytes).
func extentsOf(key string, reps []*metadv1.Replica) []extent {
	out := make([]extent, 0, len(reps))
	for _, r := range reps {
		out = append(out, extent{key: key, seg: string(r.GetSegmentId()), off: r.GetOffset(), end: r.GetOffset() + (r.GetSize()+63)&^63})
	}
	return out
}

// getExtents reads key (a linearizable Get) and returns its replicas' ranges.
func getExtents(t *testing.T, ctx context.Context, cl *client.Client, tenant, key string) []extent {
	t.Helper()
	resp, err := cl.Get(ctx, tenant, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.GetReplicas()) == 0 {
		t.Fatalf("get %s: no replica", key)
	}
	return extentsOf(key, resp.GetReplicas())
}

// mountMemory mounts a MEMORY segment of size bytes owned by cl and returns its id.
func mountMemory(t *testing.T, ctx context.Context, cl *client.Client, name string, size uint64) []byte {
	t.Helper()
	id := client.NewUUID()
	if err := cl.MountSegment(ctx, &metadv1.SegmentDesc{Id: id.Bytes(), Name: name, Base: 1 << 30, Size: size,
		Endpoint: "127.0.0.1:1", Tier: metadv1.Tier_TIER_MEMORY}); err != nil {
		t.Fatalf("mount %s: %v", name, err)
	}
	return id.Bytes()
}

// segmentInfo returns the state's view of segment id (a linearizable read).
func segmentInfo(t *testing.T, ctx context.Context, cl *client.Client, id []byte) *metadv1.SegmentInfo {
	t.Helper()
	segs, err := cl.ListSegments(ctx, client.SegmentFilter{})
	if err != nil {
		t.Fatalf("list segments: %v", err)
	}
	for _, s := range segs {
		if string(s.GetSegment().GetId()) == string(id) {
			return s
		}
	}
	t.Fatalf("segment %x not mounted: %v", id, segs)
	return nil
}

// mustMetric reads metric name on p, failing t when p serves no sample of it.
func mustMetric(t *testing.T, c *Cluster, p *Proc, name string) float64 {
	t.Helper()
	v, err := c.MetricValue(p, name)
	if err != nil {
		t.Fatalf("%s metrics: %v", p.Name, err)
	}
	return v
}

// reserve PutStarts key until the leader answers it from its arenas: the leader's
// metad_server_reservations rises by one with the answer. A PutStart that went through the log
// instead (the first of a term, while the keeper asks for an arena, or one the arenas had no room
// for) is revoked and tried again.
func reserve(t *testing.T, ctx context.Context, c *Cluster, cl *client.Client, leader *Proc, tenant, key string, opts *client.PutOptions) []*metadv1.Replica {
	t.Helper()
	var reps []*metadv1.Replica
	logged := 0
	waitUntil(t, 20*time.Second, "a PutStart of "+key+" answered from the leader's arenas", func() bool {
		before := mustMetric(t, c, leader, "metad_server_reservations")
		got, err := cl.PutStart(ctx, tenant, key, arenaObj, opts)
		if err != nil {
			t.Fatalf("put start %s: %v", key, err)
		}
		if mustMetric(t, c, leader, "metad_server_reservations") == before+1 {
			reps = got
			return true
		}
		logged++
		if err := cl.PutRevoke(ctx, tenant, key, metadv1.Tier_TIER_UNSPECIFIED); err != nil {
			t.Fatalf("revoke the logged put start of %s: %v", key, err)
		}
		return false
	})
	if logged > 0 {
		t.Logf("%s: reserved after %d PutStarts through the log", key, logged)
	}
	return reps
}

// TestReservationLostAtLeaderChange: a PutStart the leader answered from its arenas lives only in
// that leader's memory. After kill -9 of the leader, the write's PutEnd on the new leader answers
// RESERVATION_LOST (gRPC Aborted), the key does not exist, and a fresh put of it succeeds.
func TestReservationLostAtLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "60s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mountMemory(t, ctx, cl, "lost", 64<<20)
	for i := range 4 { // the first PutStart of a term goes through the log while the keeper asks for an arena
		if _, err := cl.Put(ctx, "", fmt.Sprintf("warm-%d", i), arenaObj, nil); err != nil {
			t.Fatalf("warm-up put: %v", err)
		}
	}
	const key = "lost"
	reps := reserve(t, ctx, c, cl, leader, "", key, nil)
	if len(reps) != 1 || reps[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING {
		t.Fatalf("reserved replicas %v, want one PROCESSING", reps)
	}
	if _, err := cl.Get(ctx, "", key); !client.IsReason(err, metadv1.Reason_REASON_REPLICA_IS_NOT_READY) {
		t.Fatalf("get of the reserved key before its PutEnd: %v, want REPLICA_IS_NOT_READY", err)
	}

	c.Kill(leader)
	old := leader
	leader = c.Leader(cl, 20*time.Second)
	t.Logf("killed leader %s; new leader %s", old.Name, leader.Name)

	err := cl.PutEnd(ctx, "", key, metadv1.Tier_TIER_UNSPECIFIED)
	if !client.IsReason(err, metadv1.Reason_REASON_RESERVATION_LOST) || status.Code(err) != codes.Aborted {
		t.Fatalf("PutEnd of the lost reservation on the new leader: %v (reason %s, code %s), want RESERVATION_LOST (Aborted)",
			err, client.ReasonName(client.ReasonOf(err)), status.Code(err))
	}
	if _, err := cl.Get(ctx, "", key); !client.IsReason(err, metadv1.Reason_REASON_OBJECT_NOT_FOUND) {
		t.Fatalf("get of the lost key: %v, want OBJECT_NOT_FOUND", err)
	}
	if ok, err := cl.Exist(ctx, "", key); ok || err != nil {
		t.Fatalf("exist of the lost key: %v %v, want false", ok, err)
	}
	if _, err := cl.Put(ctx, "", key, arenaObj, nil); err != nil {
		t.Fatalf("fresh put of the lost key: %v", err)
	}
	if got := getExtents(t, ctx, cl, "", key); len(got) != 1 {
		t.Fatalf("the key put again: replicas %v, want one", got)
	}
}

// TestZombieWriterNeverSharesBytes: a writer whose PutStart the old leader answered from its
// arenas may still be writing its bytes after that leader died (a zombie writer). The new leader
// must give none of those bytes to a new object until the fence has passed: the segment fills up
// (NO_AVAILABLE_HANDLE) with every reserved range still untouched. After the fence the new leader
// retires the old term's arenas and the segment fills further, into the formerly reserved ranges;
// no two objects ever share a byte.
func TestZombieWriterNeverSharesBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	// The fence: long enough for the fill below to end before it (2 to 4 s on a loaded two-core
	// machine), short enough to wait out.
	const fence = 8 * time.Second
	const segSize = 1 << 20
	// Every object is hard-pinned and eviction never starts: the segment fills up and stays full.
	c := NewCluster(t, 3, "--client-ttl", "120s", "--put-release-timeout", fence.String(), "--evict-high-watermark", "1")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seg := mountMemory(t, ctx, cl, "zombie", segSize)
	pinned := &client.PutOptions{HardPin: true}
	objects := []string{}
	for i := range 4 {
		k := fmt.Sprintf("warm-%d", i)
		if _, err := cl.Put(ctx, "", k, arenaObj, pinned); err != nil {
			t.Fatalf("warm-up put: %v", err)
		}
		objects = append(objects, k)
	}
	var zombie []extent
	for i := range 4 {
		k := fmt.Sprintf("zombie-%d", i)
		zombie = append(zombie, extentsOf(k, reserve(t, ctx, c, cl, leader, "", k, pinned))...)
	}
	t.Logf("reserved on %s: %v", leader.Name, zombie)

	c.Kill(leader)
	killed := time.Now()
	old := leader
	leader = c.Leader(cl, 20*time.Second)
	t.Logf("killed leader %s; new leader %s after %s", old.Name, leader.Name, time.Since(killed).Round(time.Millisecond))

	// Fill the segment on the new leader. The placements must all happen before the fence passes
	// (checked below by the retire counter), or the check proves nothing.
	var fresh []string
	full := false
	for i := range 2 * segSize / arenaObj {
		k := fmt.Sprintf("fresh-%03d", i)
		_, err := cl.Put(ctx, "", k, arenaObj, pinned)
		if client.IsReason(err, metadv1.Reason_REASON_NO_AVAILABLE_HANDLE) {
			full = true
			break
		}
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		fresh = append(fresh, k)
	}
	filled := time.Since(killed)
	retired := mustMetric(t, c, leader, "metad_server_arena_retires_total")
	if retired != 0 && filled >= fence {
		t.Fatalf("the fence passed during the fill (%s after the kill, fence %s): the overlap check needs a longer --put-release-timeout",
			filled.Round(time.Millisecond), fence)
	}
	if retired != 0 {
		t.Errorf("%v arenas retired within %s of the kill, before the fence (%s)", retired, filled.Round(time.Millisecond), fence)
	}
	if !full {
		t.Fatalf("%d puts of %d bytes into a %d-byte segment never met NO_AVAILABLE_HANDLE", len(fresh), arenaObj, segSize)
	}
	t.Logf("the new leader placed %d objects in %s after the kill, then NO_AVAILABLE_HANDLE", len(fresh), filled.Round(time.Millisecond))
	info := segmentInfo(t, ctx, cl, seg)
	if info.GetUsedBytes() != segSize || info.GetReplicas()*arenaObj >= segSize {
		t.Errorf("segment after the fill: used %d of %d, %d replicas; want all used, and fewer than %d replicas (the old arenas hold the rest)",
			info.GetUsedBytes(), segSize, info.GetReplicas(), segSize/arenaObj)
	}
	for _, k := range fresh {
		for _, e := range getExtents(t, ctx, cl, "", k) {
			for _, z := range zombie {
				if e.overlaps(z) {
					t.Errorf("new object %v shares bytes with the zombie reservation %v", e, z)
				}
			}
		}
	}
	objects = append(objects, fresh...)
	if t.Failed() {
		return
	}
	// The zombie's own PutEnd, while the old arenas are held.
	if err := cl.PutEnd(ctx, "", zombie[0].key, metadv1.Tier_TIER_UNSPECIFIED); !client.IsReason(err, metadv1.Reason_REASON_RESERVATION_LOST) {
		t.Fatalf("PutEnd of %s on the new leader: %v, want RESERVATION_LOST", zombie[0].key, err)
	}

	// Past the fence the old arenas are retired and their bytes, the reserved ranges among them,
	// take new objects until the segment holds objects and nothing else.
	waitUntil(t, fence+30*time.Second, "the new leader to retire the old term's arenas", func() bool {
		return mustMetric(t, c, leader, "metad_server_arena_retires_total") > 0
	})
	t.Logf("old arenas retired %s after the kill", time.Since(killed).Round(time.Millisecond))
	var after []string
	tries := 0
	waitUntil(t, 30*time.Second, "the segment full of objects, no arena bytes left", func() bool {
		if tries++; tries > 2*segSize/arenaObj {
			t.Fatalf("%d puts after the retire and the segment is not full of objects", tries)
		}
		k := fmt.Sprintf("after-%03d", len(after))
		_, err := cl.Put(ctx, "", k, arenaObj, pinned)
		if err == nil {
			after = append(after, k)
			return false
		}
		if !client.IsReason(err, metadv1.Reason_REASON_NO_AVAILABLE_HANDLE) {
			t.Fatalf("put %s: %v", k, err)
		}
		// Refused for space: done once no arena holds a byte either (one may be being granted).
		info := segmentInfo(t, ctx, cl, seg)
		return info.GetUsedBytes() == segSize && info.GetReplicas()*arenaObj == segSize
	})
	if len(after) == 0 {
		t.Fatalf("no put succeeded after the old arenas were retired")
	}
	t.Logf("after the retire %d more objects fit", len(after))
	objects = append(objects, after...)
	var all []extent
	for _, k := range objects {
		all = append(all, getExtents(t, ctx, cl, "", k)...)
	}
	for _, z := range zombie {
		if !slices.ContainsFunc(all, z.overlaps) {
			t.Errorf("no object took the formerly reserved range %v", z)
		}
	}
	slices.SortFunc(all, func(a, b extent) int { return cmp.Or(strings.Compare(a.seg, b.seg), cmp.Compare(a.off, b.off)) })
	for i := 1; i < len(all); i++ {
		if all[i].overlaps(all[i-1]) {
			t.Errorf("objects share bytes: %v and %v", all[i-1], all[i])
		}
	}
}

// TestReservationQuotaAndWatermark: reservations count against the tenant's quota although the
// replicated state charges nothing for them: with the quota held by reservations a further
// PutStart is refused TENANT_QUOTA_EXCEEDED, a PutRevoke makes room again, and the segment counts
// the arenas' bytes as used. A leader change loses the reservations and their quota: the new
// leader takes PutStarts up to the quota again.
func TestReservationQuotaAndWatermark(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	const (
		tenant = "quota"
		quota  = 64 << 10
		n      = quota / arenaObj
	)
	c := NewCluster(t, 3, "--client-ttl", "60s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	seg := mountMemory(t, ctx, cl, "quota", 64<<20)
	if _, err := cl.RegisterTenant(ctx, tenant, 0); err != nil {
		t.Fatalf("register tenant: %v", err)
	}
	if _, err := cl.SetQuota(ctx, tenant, quota); err != nil {
		t.Fatalf("set quota: %v", err)
	}
	if q, err := cl.GetQuota(ctx, tenant); err != nil || q.GetEffectiveQuotaBytes() != quota {
		t.Fatalf("quota: %v %v, want %d effective", q, err, quota)
	}
	const warm = 4 // committed objects of the default tenant, no quota
	for i := range warm {
		if _, err := cl.Put(ctx, "", fmt.Sprintf("warm-%d", i), arenaObj, nil); err != nil {
			t.Fatalf("warm-up put: %v", err)
		}
	}

	key := func(i int) string { return fmt.Sprintf("q-%02d", i) }
	for i := range n {
		reserve(t, ctx, c, cl, leader, tenant, key(i), nil)
	}
	if got := mustMetric(t, c, leader, "metad_server_reservations"); got != n {
		t.Fatalf("%s reservations: %v, want %d", leader.Name, got, n)
	}
	if got := mustMetric(t, c, leader, "metad_server_reserved_quota_bytes"); got != n*arenaObj {
		t.Fatalf("%s reserved quota bytes: %v, want %d", leader.Name, got, n*arenaObj)
	}
	if q, err := cl.GetQuota(ctx, tenant); err != nil || q.GetChargedBytes() != 0 {
		t.Fatalf("quota with only reservations: %v %v, want nothing charged in the state", q, err)
	}
	_, err := cl.PutStart(ctx, tenant, "q-over", arenaObj, nil)
	if !client.IsReason(err, metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED) {
		t.Fatalf("PutStart past the quota the reservations hold: %v, want TENANT_QUOTA_EXCEEDED", err)
	}

	// The segment counts the arenas (the reservations' ranges inside them) as used.
	committed := uint64(warm * arenaObj)
	info := segmentInfo(t, ctx, cl, seg)
	if info.GetUsedBytes() < committed+n*arenaObj {
		t.Fatalf("segment used %d with %d bytes committed and %d reserved; want the reserved counted", info.GetUsedBytes(), committed, n*arenaObj)
	}
	out, err := c.Metactl("segment", "ls", "-o", "json")
	if err != nil {
		t.Fatalf("metactl segment ls: %v\n%s", err, out)
	}
	var ls []struct {
		UsedBytes uint64 `json:"used_bytes"`
		Replicas  uint64 `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("metactl segment ls: %v\n%s", err, out)
	}
	if ls[0].UsedBytes < committed+n*arenaObj || ls[0].Replicas != warm {
		t.Fatalf("metactl segment ls: used %d, %d replicas; want at least %d used by %d replicas and the arenas",
			ls[0].UsedBytes, ls[0].Replicas, committed+n*arenaObj, warm)
	}
	t.Logf("segment used %d bytes: %d committed, %d reserved, the rest free in arenas", ls[0].UsedBytes, committed, n*arenaObj)

	// A PutRevoke gives one reservation's quota back.
	if err := cl.PutRevoke(ctx, tenant, key(0), metadv1.Tier_TIER_UNSPECIFIED); err != nil {
		t.Fatalf("revoke %s: %v", key(0), err)
	}
	if got := mustMetric(t, c, leader, "metad_server_reserved_quota_bytes"); got != (n-1)*arenaObj {
		t.Fatalf("%s reserved quota bytes after a revoke: %v, want %d", leader.Name, got, (n-1)*arenaObj)
	}
	reserve(t, ctx, c, cl, leader, tenant, "q-over", nil)
	if _, err := cl.PutStart(ctx, tenant, "q-over-2", arenaObj, nil); !client.IsReason(err, metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED) {
		t.Fatalf("PutStart past the quota again: %v, want TENANT_QUOTA_EXCEEDED", err)
	}

	c.Kill(leader)
	old := leader
	leader = c.Leader(cl, 20*time.Second)
	t.Logf("killed leader %s; new leader %s", old.Name, leader.Name)
	if q, err := cl.GetQuota(ctx, tenant); err != nil || q.GetChargedBytes() != 0 {
		t.Fatalf("quota on the new leader: %v %v, want nothing charged", q, err)
	}
	// Whether each is reserved or goes through the log, n PutStarts fit the quota and one more does not.
	for i := range n {
		if _, err := cl.PutStart(ctx, tenant, key(i), arenaObj, nil); err != nil {
			t.Fatalf("PutStart %s on the new leader: %v", key(i), err)
		}
	}
	if _, err := cl.PutStart(ctx, tenant, "q-over", arenaObj, nil); !client.IsReason(err, metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED) {
		t.Fatalf("PutStart past the quota on the new leader: %v, want TENANT_QUOTA_EXCEEDED", err)
	}
	t.Logf("new leader %s: %v reservations, %v quota bytes reserved", leader.Name,
		mustMetric(t, c, leader, "metad_server_reservations"), mustMetric(t, c, leader, "metad_server_reserved_quota_bytes"))
}

// TestReservationLostRightAfterElection: the PutEnd of a lost reservation answers RESERVATION_LOST
// from the new leader's first moment as leader, not only once its arena keeper has run: the
// earlier term's arenas are in the state from the start. The write's client asks every surviving
// node back to back, one attempt each (no client retries), so the first answer comes as soon as
// the new leader takes writes; three leader kills, each one chance to answer too early.
func TestReservationLostRightAfterElection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "60s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mountMemory(t, ctx, cl, "lost", 64<<20)
	for round := range 3 {
		key := fmt.Sprintf("lost-%d", round)
		reserve(t, ctx, c, cl, leader, "", key, nil)
		var probes []*client.Client
		for _, p := range c.Nodes {
			if p == leader {
				continue
			}
			pc, err := client.New(client.Config{Endpoints: []string{p.Client}, ClientID: cl.ClientID(), MaxRetries: -1, NoSession: true})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			probes = append(probes, pc)
		}
		old := leader
		c.Kill(old)
		killed := time.Now()
		var answer error
		waitUntil(t, 20*time.Second, "a leader's answer to the PutEnd of "+key, func() bool {
			// Back to back for a while, not once per poll: the window this test looks at opens
			// when the new leader starts taking writes and may last only tens of milliseconds.
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
				for _, pc := range probes {
					actx, acancel := context.WithTimeout(ctx, time.Second)
					err := pc.PutEnd(actx, "", key, metadv1.Tier_TIER_UNSPECIFIED)
					acancel()
					switch {
					case client.IsReason(err, metadv1.Reason_REASON_NOT_LEADER), client.IsReason(err, metadv1.Reason_REASON_UNAVAILABLE),
						status.Code(err) == codes.DeadlineExceeded:
						continue // no leader yet, or not this node
					}
					answer = err
					return true
				}
			}
			return false
		})
		t.Logf("round %d: killed %s; PutEnd answered %s after the kill: %v", round, old.Name, time.Since(killed).Round(time.Millisecond), answer)
		if !client.IsReason(answer, metadv1.Reason_REASON_RESERVATION_LOST) {
			t.Errorf("round %d: PutEnd of the lost reservation, first answer of the new leader: %v, want RESERVATION_LOST", round, answer)
		}
		leader = c.Leader(cl, 20*time.Second)
		c.Start(old)
		waitUntil(t, 30*time.Second, old.Name+" back as a follower of "+leader.Name, func() bool {
			sctx, scancel := context.WithTimeout(ctx, time.Second)
			defer scancel()
			st, err := cl.Status(sctx, old.Client)
			lst, lerr := cl.Status(sctx, leader.Client)
			if err != nil || lerr != nil {
				return false
			}
			// The applied index counts state machine commands only: a new term's no-op and the
			// barriers are committed but never applied.
			return st.GetLeaderName() == leader.Name && st.GetAppliedIndex() >= lst.GetAppliedIndex()
		})
	}
}

// TestBatchPutsUseArenas: a BatchPutStart after warm-up is answered from the leader's arenas as
// far as they have room (the reservations gauge rises; the items past the room go through the log
// in one command), and its BatchPutEnd commits the reserved ones in one PutCommit and the others
// in one BatchPutEnd: every object is COMPLETE at the ranges its start gave, and the gauge is back.
func TestBatchPutsUseArenas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "60s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mountMemory(t, ctx, cl, "batch", 64<<20)
	reserve(t, ctx, c, cl, leader, "", "first", nil) // the keeper holds arenas from here on
	before := mustMetric(t, c, leader, "metad_server_reservations")
	const n = 16
	items := make([]client.BatchPutItem, n)
	keys := make([]string, n)
	for i := range items {
		keys[i] = fmt.Sprintf("batch-%02d", i)
		items[i] = client.BatchPutItem{Key: keys[i], Size: arenaObj}
	}
	res, err := cl.BatchPutStart(ctx, "", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string][]extent{}
	for i, r := range res {
		if r.GetStatus().GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
			t.Fatalf("item %d: %v", i, r.GetStatus())
		}
		placed[keys[i]] = extentsOf(keys[i], r.GetReplicas())
	}
	// The first arenas are small (64 KiB: 16 objects of this size), and "first" took one slot.
	if got := mustMetric(t, c, leader, "metad_server_reservations") - before; got < n/2 {
		t.Fatalf("the batch made %v reservations, want most of its %d items from arenas", got, n)
	}
	sts, err := cl.BatchPutEnd(ctx, "", keys, metadv1.Tier_TIER_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range sts {
		if st.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
			t.Fatalf("end of %s: %v", keys[i], st)
		}
	}
	if got := mustMetric(t, c, leader, "metad_server_reservations"); got != before {
		t.Fatalf("%v reservations left after the batch's end, want %v", got, before)
	}
	for _, k := range keys {
		got := getExtents(t, ctx, cl, "", k)
		if len(got) != 1 || got[0] != placed[k][0] {
			t.Fatalf("%s committed at %v, placed at %v", k, got, placed[k])
		}
	}
}
