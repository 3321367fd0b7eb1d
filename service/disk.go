package service

import (
	"context"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// The LOCAL_DISK tier's calls (store/ops_disk.go): a worker registers its local SSD, reports the
// objects it offloaded to it, and reports the files it removed. Each is one replicated command at
// feature level 5 (ha.Node.Propose refuses it while a member records a lower level).

// MountLocalDisk registers the calling client's local SSD as its LOCAL_DISK segment.
func (s *Service) MountLocalDisk(ctx context.Context, req *metadv1.MountLocalDiskRequest) (*metadv1.MountLocalDiskResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := localDiskOf(client, req.GetCapacityBytes(), req.GetEndpoint(), req.GetOffload()); err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_MountLocalDisk{MountLocalDisk: &metadv1.MountLocalDisk{
		ClientId: client[:], CapacityBytes: req.GetCapacityBytes(), Endpoint: req.GetEndpoint(), Offload: req.GetOffload()}}}
	res, err := s.propose(ctx, cmd, "", nil)
	if err != nil {
		return nil, err
	}
	s.live.touch(client, s.cfg.nowNano())
	id := alloc.LocalDiskID(client)
	return &metadv1.MountLocalDiskResponse{SegmentId: id[:], Created: res.Created}, nil
}

// UnmountLocalDisk drops the calling client's SSD registration (an unmount_segment of its
// segment): exactly its LOCAL_DISK replicas go, and objects left with none are erased. A client
// with no registration gets zero counts: the call is idempotent.
func (s *Service) UnmountLocalDisk(ctx context.Context, req *metadv1.UnmountLocalDiskRequest) (*metadv1.UnmountLocalDiskResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	id := alloc.LocalDiskID(client)
	cmd := &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
		ClientId: client[:], SegmentIds: [][]byte{id[:]}, Reason: metadv1.UnmountReason_UNMOUNT_REASON_CLIENT_REQUEST}}}
	res, err := s.proposeChecked(ctx, cmd)
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if res.Reason == store.SegmentNotFound {
		return &metadv1.UnmountLocalDiskResponse{}, nil
	}
	if err := rejected(&res, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.UnmountLocalDiskResponse{ReplicasDropped: uint64(res.Unmount.Replicas), ObjectsErased: uint64(res.Unmount.Erased)}, nil
}

// NotifyOffload records the objects of one tenant that the calling client offloaded to its SSD:
// COMPLETE LOCAL_DISK replicas. One status per report, in order.
func (s *Service) NotifyOffload(ctx context.Context, req *metadv1.NotifyOffloadRequest) (*metadv1.NotifyOffloadResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, err := tenantOf(req.GetTenant())
	if err != nil {
		return nil, fail(err, req.GetTenant(), nil)
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := offloadResultsOf(req.GetResults()); err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_NotifyOffload{NotifyOffload: &metadv1.NotifyOffload{
		Tenant: tenant, ClientId: client[:], Results: req.GetResults()}}}
	res, err := s.proposeChecked(ctx, cmd)
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	sts, err := statusesOf(&res, len(req.GetResults()), tenant)
	if err != nil {
		return nil, err
	}
	return &metadv1.NotifyOffloadResponse{Results: sts}, nil
}

// EvictDiskReplica drops the calling client's LOCAL_DISK replicas of one tenant's keys, or their
// DISK replicas on a shared root, whose files it removed. One status per key, in order.
func (s *Service) EvictDiskReplica(ctx context.Context, req *metadv1.EvictDiskReplicaRequest) (*metadv1.EvictDiskReplicaResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, keys, err := tenantKeysOf(req.GetTenant(), req.GetKeys())
	if err != nil {
		return nil, err
	}
	client, err := clientOf("client_id", req.GetClientId())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := store.ValidateDistinct("keys", len(keys), func(i int) string { return keys[i] }); err != nil {
		return nil, fail(err, tenant, nil)
	}
	if t := req.GetTier(); t != metadv1.Tier_TIER_LOCAL_DISK && t != metadv1.Tier_TIER_DISK {
		return nil, fail(badf("tier", "%s, want TIER_LOCAL_DISK or TIER_DISK", t), tenant, nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_EvictDiskReplica{EvictDiskReplica: &metadv1.EvictDiskReplica{
		Tenant: tenant, ClientId: client[:], Keys: req.GetKeys(), Tier: req.GetTier()}}}
	res, err := s.proposeChecked(ctx, cmd)
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	sts, err := statusesOf(&res, len(keys), tenant)
	if err != nil {
		return nil, err
	}
	return &metadv1.EvictDiskReplicaResponse{Results: sts}, nil
}
