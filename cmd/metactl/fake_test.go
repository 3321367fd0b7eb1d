package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"metad/client"
	"metad/proto/metadv1"
)

// fakeCluster is a one-node in-memory stand-in for metad, enough for metactl's verbs: it keeps
// tenants, segments and objects with the reasons SEMANTICS names, and answers Admin calls. Safe
// for concurrent use (one mutex guards everything).
type fakeCluster struct {
	metadv1.UnimplementedMetadataServer
	addr string

	mu       sync.Mutex
	tenants  map[string]*metadv1.TenantInfo
	nextInst uint64
	objects  map[string]*fakeObject // by tenant + "\x00" + key
	segments map[string]*metadv1.SegmentDesc
	closing  map[string]int64 // segment id -> end of its graceful unmount (unix ns); nil until the first
	members  []*metadv1.Member
	pings    map[string]int // by client id bytes
	nextRep  uint64
	leader   string
	term     uint64
	// lastConfig is the ReplicaConfig of the last PutStart.
	lastConfig *metadv1.ReplicaConfig
	tasks      map[uint64]*metadv1.ScheduledTask // scheduled tasks (task_test.go)
	drains     map[uint64]*metadv1.DrainJob      // drain jobs (drain_test.go)
	// drainStalls is how many DrainStatus calls to come wait for their deadline instead of
	// answering (a cluster too busy to answer in time).
	drainStalls int

	// writeDelay, set before any call, is how long PutStart, PutEnd and their batch forms take
	// before they answer (bench_test.go); zero answers at once. Not guarded by mu: never changed
	// once calls start.
	writeDelay time.Duration
}

type fakeObject struct {
	tenant, key, group string
	size               uint64
	writer             []byte
	complete           bool
	dataType           uint32
	replicas           []*metadv1.Replica
}

type fakeAdmin struct {
	metadv1.UnimplementedAdminServer
	c *fakeCluster
}

// startCluster starts a fake cluster on loopback; opts configure its gRPC server (TLS,
// interceptors). It stops when the test ends.
func startCluster(t *testing.T, opts ...grpc.ServerOption) *fakeCluster {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &fakeCluster{
		addr:     lis.Addr().String(),
		tenants:  map[string]*metadv1.TenantInfo{},
		objects:  map[string]*fakeObject{},
		segments: map[string]*metadv1.SegmentDesc{},
		pings:    map[string]int{},
		leader:   "n1", term: 2,
	}
	c.members = []*metadv1.Member{{Name: "n1", PeerAddress: "127.0.0.1:6101", ClientAddress: c.addr, Voter: true, Leader: true, FeatureLevel: 3}}
	c.registerLocked("default", 0)
	srv := grpc.NewServer(opts...)
	metadv1.RegisterMetadataServer(srv, c)
	metadv1.RegisterAdminServer(srv, &fakeAdmin{c: c})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return c
}

func reject(code codes.Code, reason metadv1.Reason, format string, args ...any) error {
	st, err := status.New(code, fmt.Sprintf(format, args...)).WithDetails(&metadv1.ErrorDetail{Reason: reason})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func tname(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

func okey(tenant string, key []byte) string { return tname(tenant) + "\x00" + string(key) }

func (c *fakeCluster) registerLocked(name string, quota uint64) uint64 {
	c.nextInst++
	c.tenants[name] = &metadv1.TenantInfo{Name: name, InstanceId: c.nextInst, RequestedQuotaBytes: quota,
		EffectiveQuotaBytes: quota, State: metadv1.TenantState_TENANT_STATE_OPEN}
	return c.nextInst
}

// placeLocked allocates one replica of size in the first memory segment.
func (c *fakeCluster) placeLocked(size uint64) ([]*metadv1.Replica, error) {
	ids := make([]string, 0, len(c.segments))
	for id, s := range c.segments {
		if s.GetTier() == metadv1.Tier_TIER_MEMORY {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, reject(codes.ResourceExhausted, metadv1.Reason_REASON_NO_AVAILABLE_HANDLE, "no segment has room for %d bytes", size)
	}
	sort.Strings(ids)
	s := c.segments[ids[0]]
	c.nextRep++
	return []*metadv1.Replica{{ReplicaId: c.nextRep, Tier: metadv1.Tier_TIER_MEMORY, SegmentId: s.GetId(), SegmentEndpoint: s.GetEndpoint(),
		BaseAddress: s.GetBase(), Offset: 64 * c.nextRep, Size: size, Status: metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING}}, nil
}

func (c *fakeCluster) putStartLocked(tenant string, client, key, group []byte, size uint64, cfg *metadv1.ReplicaConfig) ([]*metadv1.Replica, error) {
	if _, ok := c.tenants[tname(tenant)]; !ok {
		return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_TENANT_NOT_REGISTERED, "tenant %q is not registered", tname(tenant))
	}
	if len(key) == 0 || size == 0 || len(client) != 16 {
		return nil, reject(codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS, "bad put of key %q", key)
	}
	k := okey(tenant, key)
	if _, ok := c.objects[k]; ok {
		return nil, reject(codes.AlreadyExists, metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS, "tenant %q key %q exists", tname(tenant), key)
	}
	reps, err := c.placeLocked(size)
	if err != nil {
		return nil, err
	}
	c.objects[k] = &fakeObject{tenant: tname(tenant), key: string(key), group: string(group), size: size, writer: client,
		dataType: cfg.GetDataType(), replicas: reps}
	return reps, nil
}

func (c *fakeCluster) putEndLocked(tenant string, client, key []byte) error {
	o, ok := c.objects[okey(tenant, key)]
	switch {
	case !ok:
		return reject(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "tenant %q key %q not found", tname(tenant), key)
	case !bytes.Equal(o.writer, client):
		return reject(codes.PermissionDenied, metadv1.Reason_REASON_ILLEGAL_CLIENT, "tenant %q key %q is written by another client", tname(tenant), key)
	}
	o.complete = true
	for _, r := range o.replicas {
		r.Status = metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE
	}
	return nil
}

func (c *fakeCluster) PutStart(_ context.Context, r *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	time.Sleep(c.writeDelay)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastConfig = r.GetConfig()
	reps, err := c.putStartLocked(r.GetTenant(), r.GetClientId(), r.GetKey(), r.GetGroup(), r.GetSize(), r.GetConfig())
	if err != nil {
		return nil, err
	}
	return &metadv1.PutStartResponse{Replicas: cloneReplicas(reps)}, nil
}

func (c *fakeCluster) PutEnd(_ context.Context, r *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	time.Sleep(c.writeDelay)
	c.mu.Lock()
	defer c.mu.Unlock()
	return &metadv1.PutEndResponse{}, c.putEndLocked(r.GetTenant(), r.GetClientId(), r.GetKey())
}

func (c *fakeCluster) PutRevoke(_ context.Context, r *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[okey(r.GetTenant(), r.GetKey())]
	if !ok || o.complete {
		return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_INVALID_WRITE, "no write of key %q in progress", r.GetKey())
	}
	delete(c.objects, okey(r.GetTenant(), r.GetKey()))
	return &metadv1.PutRevokeResponse{}, nil
}

func cloneReplicas(reps []*metadv1.Replica) []*metadv1.Replica {
	out := make([]*metadv1.Replica, len(reps))
	for i, r := range reps {
		out[i] = proto.Clone(r).(*metadv1.Replica)
	}
	return out
}

func (c *fakeCluster) getLocked(tenant string, key []byte) (*fakeObject, error) {
	o, ok := c.objects[okey(tenant, key)]
	if !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "tenant %q key %q not found", tname(tenant), key)
	}
	if !o.complete {
		return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_REPLICA_IS_NOT_READY, "tenant %q key %q is being written", tname(tenant), key)
	}
	return o, nil
}

func (c *fakeCluster) Get(_ context.Context, r *metadv1.GetRequest) (*metadv1.GetResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, err := c.getLocked(r.GetTenant(), r.GetKey())
	if err != nil {
		return nil, err
	}
	lease := uint64(10000)
	if r.GetStale() {
		lease = 0
	}
	return &metadv1.GetResponse{Replicas: cloneReplicas(o.replicas), LeaseTtlMs: lease, Size: o.size, DataType: o.dataType}, nil
}

func (c *fakeCluster) Exist(_ context.Context, r *metadv1.ExistRequest) (*metadv1.ExistResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[okey(r.GetTenant(), r.GetKey())]
	return &metadv1.ExistResponse{Exists: ok && o.complete}, nil
}

func (c *fakeCluster) BatchExist(_ context.Context, r *metadv1.BatchExistRequest) (*metadv1.BatchExistResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.BatchExistResponse{LeaseTtlMs: 10000}
	for _, k := range r.GetKeys() {
		o, ok := c.objects[okey(r.GetTenant(), k)]
		resp.Exists = append(resp.Exists, ok && o.complete)
	}
	return resp, nil
}

func (c *fakeCluster) BatchGet(_ context.Context, r *metadv1.BatchGetRequest) (*metadv1.BatchGetResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.BatchGetResponse{LeaseTtlMs: 10000}
	for _, k := range r.GetKeys() {
		o, err := c.getLocked(r.GetTenant(), k)
		if err != nil {
			d := status.Convert(err)
			resp.Results = append(resp.Results, &metadv1.BatchGetResponse_Result{Status: &metadv1.Status{
				Reason: metadv1.Reason_REASON_OBJECT_NOT_FOUND, Message: d.Message()}})
			continue
		}
		resp.Results = append(resp.Results, &metadv1.BatchGetResponse_Result{Status: &metadv1.Status{},
			Replicas: cloneReplicas(o.replicas), Size: o.size})
	}
	return resp, nil
}

func (c *fakeCluster) BatchPutStart(_ context.Context, r *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error) {
	time.Sleep(c.writeDelay)
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.BatchPutStartResponse{}
	for _, it := range r.GetItems() {
		reps, err := c.putStartLocked(r.GetTenant(), r.GetClientId(), it.GetKey(), it.GetGroup(), it.GetSize(), r.GetConfig())
		res := &metadv1.BatchPutStartResponse_Result{Status: &metadv1.Status{}, Replicas: cloneReplicas(reps)}
		if err != nil {
			res.Status = &metadv1.Status{Reason: client.ReasonOf(err), Message: status.Convert(err).Message()}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (c *fakeCluster) BatchPutEnd(_ context.Context, r *metadv1.BatchPutEndRequest) (*metadv1.BatchPutEndResponse, error) {
	time.Sleep(c.writeDelay)
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.BatchPutEndResponse{}
	for _, k := range r.GetKeys() {
		s := &metadv1.Status{}
		if err := c.putEndLocked(r.GetTenant(), r.GetClientId(), k); err != nil {
			s = &metadv1.Status{Reason: metadv1.Reason_REASON_INVALID_WRITE, Message: status.Convert(err).Message()}
		}
		resp.Results = append(resp.Results, s)
	}
	return resp, nil
}

func (c *fakeCluster) Remove(_ context.Context, r *metadv1.RemoveRequest) (*metadv1.RemoveResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.objects[okey(r.GetTenant(), r.GetKey())]; !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "tenant %q key %q not found", tname(r.GetTenant()), r.GetKey())
	}
	delete(c.objects, okey(r.GetTenant(), r.GetKey()))
	return &metadv1.RemoveResponse{}, nil
}

func (c *fakeCluster) RemoveAll(_ context.Context, r *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.RemoveAllResponse{}
	for k, o := range c.objects {
		if o.tenant != tname(r.GetTenant()) {
			continue
		}
		if !o.complete {
			resp.Skipped++
			continue
		}
		delete(c.objects, k)
		resp.Removed++
	}
	return resp, nil
}

func (c *fakeCluster) groupLocked(tenant, group string) []string {
	var keys []string
	for _, o := range c.objects {
		if o.tenant == tname(tenant) && o.group == group && group != "" {
			keys = append(keys, o.key)
		}
	}
	sort.Strings(keys)
	return keys
}

func (c *fakeCluster) ListGroup(_ context.Context, r *metadv1.ListGroupRequest) (*metadv1.ListGroupResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.ListGroupResponse{}
	for _, k := range c.groupLocked(r.GetTenant(), string(r.GetGroup())) {
		if k > string(r.GetStartAfter()) {
			resp.Keys = append(resp.Keys, []byte(k))
		}
	}
	return resp, nil
}

func (c *fakeCluster) RemoveGroup(_ context.Context, r *metadv1.RemoveGroupRequest) (*metadv1.RemoveGroupResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := c.groupLocked(r.GetTenant(), string(r.GetGroup()))
	if len(keys) == 0 {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "group %q not found", r.GetGroup())
	}
	for _, k := range keys {
		delete(c.objects, okey(r.GetTenant(), []byte(k)))
	}
	return &metadv1.RemoveGroupResponse{Removed: uint64(len(keys))}, nil
}

func (c *fakeCluster) MountSegment(_ context.Context, r *metadv1.MountSegmentRequest) (*metadv1.MountSegmentResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := r.GetSegment()
	if len(s.GetId()) != 16 || s.GetSize() == 0 || s.GetSize()%64 != 0 || s.GetBase() == 0 || s.GetBase()%64 != 0 {
		return nil, reject(codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS, "bad segment")
	}
	if old, ok := c.segments[string(s.GetId())]; ok && !bytes.Equal(old.GetOwnerClientId(), r.GetClientId()) {
		return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_SEGMENT_OWNED_BY_OTHER_CLIENT, "segment owned by another client")
	}
	c.segments[string(s.GetId())] = &metadv1.SegmentDesc{Id: s.GetId(), Name: s.GetName(), Base: s.GetBase(), Size: s.GetSize(),
		Endpoint: s.GetEndpoint(), Tier: s.GetTier(), OwnerClientId: r.GetClientId()}
	return &metadv1.MountSegmentResponse{}, nil
}

func (c *fakeCluster) UnmountSegment(_ context.Context, r *metadv1.UnmountSegmentRequest) (*metadv1.UnmountSegmentResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.segments[string(r.GetSegmentId())]
	if !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_SEGMENT_NOT_FOUND, "segment not mounted")
	}
	if !bytes.Equal(s.GetOwnerClientId(), r.GetClientId()) {
		return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_SEGMENT_OWNED_BY_OTHER_CLIENT, "segment owned by another client")
	}
	if g := r.GetGraceMs(); g > 0 {
		if c.closing == nil {
			c.closing = map[string]int64{}
		}
		at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g) * time.Millisecond).UnixNano()
		if old, ok := c.closing[string(r.GetSegmentId())]; !ok || at < old {
			c.closing[string(r.GetSegmentId())] = at
		}
		return &metadv1.UnmountSegmentResponse{Closing: true, UnmountAtUnixNano: c.closing[string(r.GetSegmentId())]}, nil
	}
	delete(c.segments, string(r.GetSegmentId()))
	delete(c.closing, string(r.GetSegmentId()))
	return &metadv1.UnmountSegmentResponse{ReplicasDropped: 2, ObjectsErased: 1}, nil
}

func (c *fakeCluster) Ping(_ context.Context, r *metadv1.PingRequest) (*metadv1.PingResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pings[string(r.GetClientId())]++
	resp := &metadv1.PingResponse{ClientTtlMs: 10000, LeaderName: c.leader, LeaderAddress: c.addr, Term: c.term,
		MemberAddresses: []string{c.addr}}
	for id, s := range c.segments {
		if bytes.Equal(s.GetOwnerClientId(), r.GetClientId()) {
			resp.SegmentIds = append(resp.SegmentIds, []byte(id))
		}
	}
	return resp, nil
}

func (a *fakeAdmin) RegisterTenant(_ context.Context, r *metadv1.RegisterTenantRequest) (*metadv1.RegisterTenantResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if _, ok := a.c.tenants[r.GetName()]; ok {
		return nil, reject(codes.AlreadyExists, metadv1.Reason_REASON_TENANT_ALREADY_EXISTS, "tenant %q is already registered", r.GetName())
	}
	return &metadv1.RegisterTenantResponse{InstanceId: a.c.registerLocked(r.GetName(), r.GetQuotaBytes())}, nil
}

func (a *fakeAdmin) UnregisterTenant(_ context.Context, r *metadv1.UnregisterTenantRequest) (*metadv1.UnregisterTenantResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if _, ok := a.c.tenants[r.GetName()]; !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_TENANT_NOT_REGISTERED, "tenant %q is not registered", r.GetName())
	}
	n := uint64(0)
	for k, o := range a.c.objects {
		if o.tenant == r.GetName() {
			if !r.GetForce() {
				return nil, reject(codes.FailedPrecondition, metadv1.Reason_REASON_TENANT_NOT_EMPTY, "tenant %q has objects", r.GetName())
			}
			delete(a.c.objects, k)
			n++
		}
	}
	delete(a.c.tenants, r.GetName())
	return &metadv1.UnregisterTenantResponse{ObjectsRemoved: n}, nil
}

func (a *fakeAdmin) ListTenants(context.Context, *metadv1.ListTenantsRequest) (*metadv1.ListTenantsResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	resp := &metadv1.ListTenantsResponse{}
	for _, t := range a.c.tenants {
		ti := &metadv1.TenantInfo{Name: t.GetName(), InstanceId: t.GetInstanceId(), RequestedQuotaBytes: t.GetRequestedQuotaBytes(),
			EffectiveQuotaBytes: t.GetEffectiveQuotaBytes(), State: t.GetState()}
		for _, o := range a.c.objects {
			if o.tenant == t.GetName() {
				ti.Objects++
				ti.ChargedBytes += o.size
			}
		}
		resp.Tenants = append(resp.Tenants, ti)
	}
	sort.Slice(resp.Tenants, func(i, j int) bool { return resp.Tenants[i].GetName() < resp.Tenants[j].GetName() })
	return resp, nil
}

func (a *fakeAdmin) SetQuota(_ context.Context, r *metadv1.SetQuotaRequest) (*metadv1.SetQuotaResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	t, ok := a.c.tenants[r.GetTenant()]
	if !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_TENANT_NOT_REGISTERED, "tenant %q is not registered", r.GetTenant())
	}
	t.RequestedQuotaBytes, t.EffectiveQuotaBytes = r.GetQuotaBytes(), r.GetQuotaBytes()
	return &metadv1.SetQuotaResponse{RequestedQuotaBytes: r.GetQuotaBytes(), EffectiveQuotaBytes: r.GetQuotaBytes()}, nil
}

func (a *fakeAdmin) GetQuota(_ context.Context, r *metadv1.GetQuotaRequest) (*metadv1.GetQuotaResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	t, ok := a.c.tenants[r.GetTenant()]
	if !ok {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_TENANT_NOT_REGISTERED, "tenant %q is not registered", r.GetTenant())
	}
	return &metadv1.GetQuotaResponse{RequestedQuotaBytes: t.GetRequestedQuotaBytes(), EffectiveQuotaBytes: t.GetEffectiveQuotaBytes(),
		CapacityBytes: 4 << 30}, nil
}

func (a *fakeAdmin) ListSegments(_ context.Context, r *metadv1.ListSegmentsRequest) (*metadv1.ListSegmentsResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	resp := &metadv1.ListSegmentsResponse{}
	for _, s := range a.c.segments {
		if r.GetTier() != 0 && s.GetTier() != r.GetTier() || len(r.GetClientId()) > 0 && !bytes.Equal(r.GetClientId(), s.GetOwnerClientId()) {
			continue
		}
		at, closing := a.c.closing[string(s.GetId())]
		resp.Segments = append(resp.Segments, &metadv1.SegmentInfo{Segment: s, UsedBytes: 4096, ArenaFreeBytes: 1024, Replicas: 1, Closing: closing, UnmountAtUnixNano: at})
	}
	sort.Slice(resp.Segments, func(i, j int) bool {
		return bytes.Compare(resp.Segments[i].GetSegment().GetId(), resp.Segments[j].GetSegment().GetId()) < 0
	})
	return resp, nil
}

func (a *fakeAdmin) ListMembers(context.Context, *metadv1.ListMembersRequest) (*metadv1.ListMembersResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	return &metadv1.ListMembersResponse{Members: a.c.members, Index: 7}, nil
}

func (a *fakeAdmin) AddMember(_ context.Context, r *metadv1.AddMemberRequest) (*metadv1.AddMemberResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	a.c.members = append(a.c.members, &metadv1.Member{Name: r.GetName(), PeerAddress: r.GetPeerAddress(), Voter: true})
	return &metadv1.AddMemberResponse{Index: 8}, nil
}

func (a *fakeAdmin) RemoveMember(_ context.Context, r *metadv1.RemoveMemberRequest) (*metadv1.RemoveMemberResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	for i, m := range a.c.members {
		if m.GetName() == r.GetName() {
			a.c.members = append(a.c.members[:i:i], a.c.members[i+1:]...)
			return &metadv1.RemoveMemberResponse{Index: 9}, nil
		}
	}
	return nil, reject(codes.NotFound, metadv1.Reason_REASON_INVALID_PARAMS, "no member %q", r.GetName())
}

func (a *fakeAdmin) TransferLeader(_ context.Context, r *metadv1.TransferLeaderRequest) (*metadv1.TransferLeaderResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	to := r.GetTarget()
	if to == "" {
		to = "n2"
	}
	a.c.leader = to
	a.c.term++
	return &metadv1.TransferLeaderResponse{LeaderName: to, LeaderAddress: a.c.addr}, nil
}

func (a *fakeAdmin) Status(context.Context, *metadv1.StatusRequest) (*metadv1.StatusResponse, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	return &metadv1.StatusResponse{Name: "n1", ClientAddress: a.c.addr, PeerAddress: "127.0.0.1:6101",
		Role: metadv1.NodeRole_NODE_ROLE_LEADER, Term: a.c.term, AppliedIndex: 42, CommitIndex: 42, LastLogIndex: 43,
		LeaderName: a.c.leader, LeaderAddress: a.c.addr, Objects: uint64(len(a.c.objects)), Version: "test"}, nil
}

// pingCount is how many pings client id sent.
func (c *fakeCluster) pingCount(id []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pings[string(id)]
}

// segmentsOf returns the segments owned by id.
func (c *fakeCluster) segmentsOf(id []byte) []*metadv1.SegmentDesc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*metadv1.SegmentDesc
	for _, s := range c.segments {
		if bytes.Equal(s.GetOwnerClientId(), id) {
			out = append(out, s)
		}
	}
	return out
}

// dropSegments forgets every segment (as if their client had expired).
func (c *fakeCluster) dropSegments() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.segments = map[string]*metadv1.SegmentDesc{}
}

// allSegments returns how many segments are mounted.
func (c *fakeCluster) allSegments() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.segments)
}

// notLeaderErr is a NOT_LEADER rejection naming the leader.
func notLeaderErr(name, addr string) error {
	st, err := status.New(codes.FailedPrecondition, "not the leader").WithDetails(&metadv1.ErrorDetail{
		Reason: metadv1.Reason_REASON_NOT_LEADER, LeaderName: name, LeaderAddress: addr})
	if err != nil {
		panic(err)
	}
	return st.Err()
}
