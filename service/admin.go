package service

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// RegisterTenant creates a tenant instance.
func (s *Service) RegisterTenant(ctx context.Context, req *metadv1.RegisterTenantRequest) (*metadv1.RegisterTenantResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	name, err := tenantNamed("name", req.GetName())
	if err != nil {
		return nil, fail(err, req.GetName(), nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{
		Name: name, QuotaBytes: req.GetQuotaBytes()}}}
	res, err := s.propose(ctx, cmd, name, nil)
	if err != nil {
		return nil, err
	}
	return &metadv1.RegisterTenantResponse{InstanceId: res.Instance}, nil
}

// UnregisterTenant closes a tenant (with force, erasing its objects and groups).
func (s *Service) UnregisterTenant(ctx context.Context, req *metadv1.UnregisterTenantRequest) (*metadv1.UnregisterTenantResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	name, err := tenantNamed("name", req.GetName())
	if err != nil {
		return nil, fail(err, req.GetName(), nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	// The command's result counts objects only; the groups are counted just before, which is
	// exact unless a put races with the teardown.
	var groups int
	if t, ok := s.state().Tenant(name); ok && req.GetForce() {
		groups = t.Groups
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_UnregisterTenant{UnregisterTenant: &metadv1.UnregisterTenant{
		Name: name, Force: req.GetForce()}}}
	res, err := s.propose(ctx, cmd, name, nil)
	if err != nil {
		return nil, err
	}
	return &metadv1.UnregisterTenantResponse{ObjectsRemoved: uint64(res.Count), GroupsRemoved: uint64(groups)}, nil
}

// ListTenants lists the registered tenants sorted by name.
func (s *Service) ListTenants(ctx context.Context, req *metadv1.ListTenantsRequest) (*metadv1.ListTenantsResponse, error) {
	st, _, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	out := &metadv1.ListTenantsResponse{}
	for _, t := range st.TenantInfos() {
		if t.Life == store.TenantRemoved {
			continue
		}
		out.Tenants = append(out.Tenants, &metadv1.TenantInfo{
			Name: t.Name, InstanceId: t.Instance, RequestedQuotaBytes: t.Requested,
			EffectiveQuotaBytes: t.Effective, ChargedBytes: t.Charged,
			Objects: uint64(max(t.Objects, 0)), Groups: uint64(t.Groups), State: wire.TenantStateTo(t.Life)})
	}
	return out, nil
}

// SetQuota changes a tenant's requested quota and reports the effective quota after it.
func (s *Service) SetQuota(ctx context.Context, req *metadv1.SetQuotaRequest) (*metadv1.SetQuotaResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_SetQuota{SetQuota: &metadv1.SetQuota{Tenant: tenant, QuotaBytes: req.GetQuotaBytes()}}}
	if _, err := s.propose(ctx, cmd, tenant, nil); err != nil {
		return nil, err
	}
	out := &metadv1.SetQuotaResponse{RequestedQuotaBytes: req.GetQuotaBytes()}
	if t, ok := s.state().Tenant(tenant); ok {
		out.RequestedQuotaBytes, out.EffectiveQuotaBytes = t.Requested, t.Effective
	}
	return out, nil
}

// GetQuota reports a tenant's quota and usage.
func (s *Service) GetQuota(ctx context.Context, req *metadv1.GetQuotaRequest) (*metadv1.GetQuotaResponse, error) {
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	st, _, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	t, ok := st.Tenant(tenant)
	if !ok || t.Life == store.TenantRemoved {
		return nil, fail(&store.Error{Reason: store.TenantNotRegistered, Msg: fmt.Sprintf("tenant %q is not registered", tenant)}, tenant, nil)
	}
	return &metadv1.GetQuotaResponse{RequestedQuotaBytes: t.Requested, EffectiveQuotaBytes: t.Effective,
		ChargedBytes: t.Charged, CapacityBytes: st.Segments().Capacity(alloc.TierMemory)}, nil
}

// ListSegments lists the mounted segments, optionally of one tier or one client, sorted by id.
func (s *Service) ListSegments(ctx context.Context, req *metadv1.ListSegmentsRequest) (*metadv1.ListSegmentsResponse, error) {
	if err := tierOf("tier", req.GetTier()); err != nil && req.GetTier() != metadv1.Tier_TIER_LOCAL_DISK {
		return nil, fail(err, "", nil)
	}
	var owner alloc.ID
	if len(req.GetClientId()) > 0 {
		c, err := clientOf("client_id", req.GetClientId())
		if err != nil {
			return nil, fail(err, "", nil)
		}
		owner = c
	}
	tier := wire.TierFrom(req.GetTier())
	st, _, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	var segs []alloc.SegmentInfo
	for _, sg := range st.Segments().List() {
		if (tier == 0 || sg.Tier == tier) && (owner.IsZero() || sg.Owner == owner) {
			segs = append(segs, sg)
		}
	}
	counts := replicaCounts(st, segs)
	arenaFree := map[alloc.ID]uint64{}
	for _, a := range st.Arenas().List() {
		arenaFree[a.Segment] += a.FreeBytes()
	}
	out := &metadv1.ListSegmentsResponse{Segments: make([]*metadv1.SegmentInfo, len(segs))}
	for i, sg := range segs {
		out.Segments[i] = &metadv1.SegmentInfo{Segment: wire.SegmentTo(sg.Segment), UsedBytes: sg.Used, Replicas: counts[sg.ID],
			Closing: sg.Closing, UnmountAtUnixNano: sg.UnmountAt, ArenaFreeBytes: arenaFree[sg.ID]}
	}
	return out, nil
}

// replicaCounts counts the replicas placed in each of segs: a census of every object (an operator
// call, O(objects)), skipped when there is no segment to report.
func replicaCounts(st *store.Store, segs []alloc.SegmentInfo) map[alloc.ID]uint64 {
	counts := make(map[alloc.ID]uint64, len(segs))
	if len(segs) == 0 {
		return counts
	}
	for _, sg := range segs {
		counts[sg.ID] = 0
	}
	st.VisitHandles(0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			os := h.State()
			if os == nil {
				continue
			}
			for _, r := range os.Replicas {
				if n, ok := counts[r.Extent.Segment]; ok {
					counts[r.Extent.Segment] = n + 1
				}
			}
		}
		return true
	})
	return counts
}

func memberTo(m ha.Member) *metadv1.Member {
	return &metadv1.Member{Name: m.Name, PeerAddress: m.PeerAddr, ClientAddress: m.ClientAddr, Voter: m.Voter, Leader: m.Leader,
		FeatureLevel: m.Level}
}

// ListMembers lists the Raft configuration as the leader sees it, with each member's progress as
// it answers the leader.
func (s *Service) ListMembers(ctx context.Context, req *metadv1.ListMembersRequest) (*metadv1.ListMembersResponse, error) {
	if err := s.here(); err != nil {
		return nil, err
	}
	ms, err := s.b.Members()
	if err != nil {
		return nil, fail(err, "", nil)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	out := &metadv1.ListMembersResponse{Members: make([]*metadv1.Member, len(ms))}
	for i, m := range ms {
		out.Members[i] = memberTo(m)
	}
	s.withProgress(ctx, ms, out.Members)
	return out, nil
}

// AddMember adds a voter, or a learner.
func (s *Service) AddMember(ctx context.Context, req *metadv1.AddMemberRequest) (*metadv1.AddMemberResponse, error) {
	if err := memberOf("name", req.GetName()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := addressOf("peer_address", req.GetPeerAddress()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	add := s.b.AddMember
	if req.GetLearner() {
		add = s.b.AddLearner
	}
	idx, err := add(ctx, req.GetName(), req.GetPeerAddress())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	return &metadv1.AddMemberResponse{Index: idx}, nil
}

// RemoveMember removes a member (MEMBER_NOT_FOUND when it is not in the configuration).
func (s *Service) RemoveMember(ctx context.Context, req *metadv1.RemoveMemberRequest) (*metadv1.RemoveMemberResponse, error) {
	if req.GetName() == "" { // looked up, not checked: a member added before the name rules can go
		return nil, fail(badf("name", "must not be empty"), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	if err := s.b.RemoveMember(ctx, req.GetName()); err != nil {
		return nil, fail(err, "", nil)
	}
	return &metadv1.RemoveMemberResponse{}, nil
}

// TransferLeader hands leadership to another member and names the new leader (MEMBER_NOT_FOUND
// for a target not in the configuration; the leader itself as target is a no-op naming it).
func (s *Service) TransferLeader(ctx context.Context, req *metadv1.TransferLeaderRequest) (*metadv1.TransferLeaderResponse, error) {
	if err := s.here(); err != nil {
		return nil, err
	}
	name, err := s.b.TransferLeader(ctx, req.GetTarget())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	out := &metadv1.TransferLeaderResponse{LeaderName: name}
	if ms, err := s.b.Members(); err == nil {
		for _, m := range ms {
			if m.Name == name {
				out.LeaderAddress = m.ClientAddr
			}
		}
	}
	return out, nil
}

// RecordMember records a member's addresses (on the leader; forwarded there). Members call it for
// themselves (members.go); the leader refuses a name that is not in the Raft configuration.
func (s *Service) RecordMember(ctx context.Context, req *metadv1.RecordMemberRequest) (*metadv1.RecordMemberResponse, error) {
	if err := memberOf("name", req.GetName()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := addressOf("peer_address", req.GetPeerAddress()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := addressOf("client_address", req.GetClientAddress()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	if err := s.b.RecordMember(ctx, fsm.Member{Name: req.GetName(), PeerAddr: req.GetPeerAddress(), ClientAddr: req.GetClientAddress(),
		Level: req.GetFeatureLevel()}); err != nil {
		return nil, fail(err, "", nil)
	}
	return &metadv1.RecordMemberResponse{}, nil
}

func roleTo(r ha.Role) metadv1.NodeRole {
	switch r {
	case ha.RoleLeader:
		return metadv1.NodeRole_NODE_ROLE_LEADER
	case ha.RoleFollower:
		return metadv1.NodeRole_NODE_ROLE_FOLLOWER
	case ha.RoleCandidate:
		return metadv1.NodeRole_NODE_ROLE_CANDIDATE
	case ha.RoleShutdown:
		return metadv1.NodeRole_NODE_ROLE_SHUTDOWN
	}
	return metadv1.NodeRole_NODE_ROLE_UNSPECIFIED
}

// buildVersion is the main module's version as the Go toolchain recorded it.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}

// Status describes the node that answers (never forwarded).
func (s *Service) Status(ctx context.Context, req *metadv1.StatusRequest) (*metadv1.StatusResponse, error) {
	hs := s.b.Status()
	n := s.state().Totals()
	return &metadv1.StatusResponse{
		Name: hs.Name, ClientAddress: hs.ClientAddr, PeerAddress: hs.PeerAddr, Role: roleTo(hs.Role),
		Term: hs.Term, AppliedIndex: hs.AppliedIndex, CommitIndex: hs.CommitIndex, LastLogIndex: hs.LastLogIndex,
		LeaderName: hs.LeaderName, LeaderAddress: hs.LeaderAddr,
		Objects: uint64(max(n.Objects, 0)), Tenants: uint64(n.Tenants), Segments: uint64(n.Segments),
		LastSnapshotIndex: hs.LastSnapshotIndex, Version: buildVersion(),
	}, nil
}

// SnapshotSave and SnapshotRestore are in snapshot.go.
