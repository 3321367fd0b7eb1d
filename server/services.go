package server

import (
	"context"

	"google.golang.org/grpc"

	metadv1 "metad/proto/metadv1"
)

// metadataService is safe for concurrent use (it keeps no state of its own). It implements
// metadv1.MetadataServer: every call goes to the Service here, or to the leader (unary).
type metadataService struct {
	metadv1.UnimplementedMetadataServer
	s *Server
}

var _ metadv1.MetadataServer = (*metadataService)(nil)

// adminService is safe for concurrent use (it keeps no state of its own). It implements
// metadv1.AdminServer: the unary calls as metadataService does, the snapshot streams in
// snapshot.go.
type adminService struct {
	metadv1.UnimplementedAdminServer
	s *Server
}

var _ metadv1.AdminServer = (*adminService)(nil)

func (a *adminService) RegisterTenant(ctx context.Context, req *metadv1.RegisterTenantRequest) (*metadv1.RegisterTenantResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.RegisterTenant)
}

func (a *adminService) UnregisterTenant(ctx context.Context, req *metadv1.UnregisterTenantRequest) (*metadv1.UnregisterTenantResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.UnregisterTenant)
}

func (a *adminService) ListTenants(ctx context.Context, req *metadv1.ListTenantsRequest) (*metadv1.ListTenantsResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListTenants)
}

func (a *adminService) SetQuota(ctx context.Context, req *metadv1.SetQuotaRequest) (*metadv1.SetQuotaResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.SetQuota)
}

func (a *adminService) GetQuota(ctx context.Context, req *metadv1.GetQuotaRequest) (*metadv1.GetQuotaResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.GetQuota)
}

func (a *adminService) ListSegments(ctx context.Context, req *metadv1.ListSegmentsRequest) (*metadv1.ListSegmentsResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListSegments)
}

func (a *adminService) ListMembers(ctx context.Context, req *metadv1.ListMembersRequest) (*metadv1.ListMembersResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListMembers)
}

func (a *adminService) AddMember(ctx context.Context, req *metadv1.AddMemberRequest) (*metadv1.AddMemberResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.AddMember)
}

func (a *adminService) PromoteMember(ctx context.Context, req *metadv1.PromoteMemberRequest) (*metadv1.PromoteMemberResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.PromoteMember)
}

func (a *adminService) RemoveMember(ctx context.Context, req *metadv1.RemoveMemberRequest) (*metadv1.RemoveMemberResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.RemoveMember)
}

func (a *adminService) TransferLeader(ctx context.Context, req *metadv1.TransferLeaderRequest) (*metadv1.TransferLeaderResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.TransferLeader)
}

func (a *adminService) RecordMember(ctx context.Context, req *metadv1.RecordMemberRequest) (*metadv1.RecordMemberResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.RecordMember)
}

func (a *adminService) CreateKey(ctx context.Context, req *metadv1.CreateKeyRequest) (*metadv1.CreateKeyResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.CreateKey)
}

func (a *adminService) RevokeKey(ctx context.Context, req *metadv1.RevokeKeyRequest) (*metadv1.RevokeKeyResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.RevokeKey)
}

func (a *adminService) ListKeys(ctx context.Context, req *metadv1.ListKeysRequest) (*metadv1.ListKeysResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListKeys)
}

func (a *adminService) GrantRole(ctx context.Context, req *metadv1.GrantRoleRequest) (*metadv1.GrantRoleResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.GrantRole)
}

func (a *adminService) RevokeRole(ctx context.Context, req *metadv1.RevokeRoleRequest) (*metadv1.RevokeRoleResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.RevokeRole)
}

func (a *adminService) ListRoles(ctx context.Context, req *metadv1.ListRolesRequest) (*metadv1.ListRolesResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListRoles)
}

func (a *adminService) StartDrain(ctx context.Context, req *metadv1.StartDrainRequest) (*metadv1.StartDrainResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.StartDrain)
}

func (a *adminService) DrainStatus(ctx context.Context, req *metadv1.DrainStatusRequest) (*metadv1.DrainStatusResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.DrainStatus)
}

func (a *adminService) CancelDrain(ctx context.Context, req *metadv1.CancelDrainRequest) (*metadv1.CancelDrainResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.CancelDrain)
}

func (a *adminService) SetLimit(ctx context.Context, req *metadv1.SetLimitRequest) (*metadv1.SetLimitResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.SetLimit)
}

func (a *adminService) ListLimits(ctx context.Context, req *metadv1.ListLimitsRequest) (*metadv1.ListLimitsResponse, error) {
	return unary(ctx, a.s, req, a.s.svc.ListLimits)
}

// Status describes the node that answers (never forwarded, unless its authentication was deferred
// to the leader).
func (a *adminService) Status(ctx context.Context, req *metadv1.StatusRequest) (*metadv1.StatusResponse, error) {
	if deferredAuth(ctx) {
		return unary(ctx, a.s, req, a.s.svc.Status)
	}
	resp, err := a.s.svc.Status(ctx, req)
	return resp, toStatus(err)
}

func (m *metadataService) PutStart(ctx context.Context, req *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.PutStart)
}

func (m *metadataService) PutEnd(ctx context.Context, req *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.PutEnd)
}

func (m *metadataService) PutRevoke(ctx context.Context, req *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.PutRevoke)
}

func (m *metadataService) UpsertStart(ctx context.Context, req *metadv1.UpsertStartRequest) (*metadv1.UpsertStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.UpsertStart)
}

func (m *metadataService) UpsertEnd(ctx context.Context, req *metadv1.UpsertEndRequest) (*metadv1.UpsertEndResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.UpsertEnd)
}

func (m *metadataService) UpsertRevoke(ctx context.Context, req *metadv1.UpsertRevokeRequest) (*metadv1.UpsertRevokeResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.UpsertRevoke)
}

func (m *metadataService) BatchPutStart(ctx context.Context, req *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchPutStart)
}

func (m *metadataService) BatchPutEnd(ctx context.Context, req *metadv1.BatchPutEndRequest) (*metadv1.BatchPutEndResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchPutEnd)
}

func (m *metadataService) BatchPutRevoke(ctx context.Context, req *metadv1.BatchPutRevokeRequest) (*metadv1.BatchPutRevokeResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchPutRevoke)
}

func (m *metadataService) Get(ctx context.Context, req *metadv1.GetRequest) (*metadv1.GetResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.Get)
}

func (m *metadataService) Exist(ctx context.Context, req *metadv1.ExistRequest) (*metadv1.ExistResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.Exist)
}

func (m *metadataService) BatchGet(ctx context.Context, req *metadv1.BatchGetRequest) (*metadv1.BatchGetResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchGet)
}

func (m *metadataService) BatchExist(ctx context.Context, req *metadv1.BatchExistRequest) (*metadv1.BatchExistResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchExist)
}

func (m *metadataService) ListGroup(ctx context.Context, req *metadv1.ListGroupRequest) (*metadv1.ListGroupResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.ListGroup)
}

func (m *metadataService) Remove(ctx context.Context, req *metadv1.RemoveRequest) (*metadv1.RemoveResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.Remove)
}

func (m *metadataService) BatchRemove(ctx context.Context, req *metadv1.BatchRemoveRequest) (*metadv1.BatchRemoveResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchRemove)
}

func (m *metadataService) RemoveAll(ctx context.Context, req *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.RemoveAll)
}

func (m *metadataService) RemoveGroup(ctx context.Context, req *metadv1.RemoveGroupRequest) (*metadv1.RemoveGroupResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.RemoveGroup)
}

func (m *metadataService) MountSegment(ctx context.Context, req *metadv1.MountSegmentRequest) (*metadv1.MountSegmentResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MountSegment)
}

func (m *metadataService) UnmountSegment(ctx context.Context, req *metadv1.UnmountSegmentRequest) (*metadv1.UnmountSegmentResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.UnmountSegment)
}

func (m *metadataService) Ping(ctx context.Context, req *metadv1.PingRequest) (*metadv1.PingResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.Ping)
}

func (m *metadataService) OpenSession(ctx context.Context, req *metadv1.OpenSessionRequest) (*metadv1.OpenSessionResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.OpenSession)
}

func (m *metadataService) CloseSession(ctx context.Context, req *metadv1.CloseSessionRequest) (*metadv1.CloseSessionResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CloseSession)
}

// Watch streams this member's events (service.Watch); it is never forwarded. The stream
// interceptor authenticated the caller when the stream opened and authorized the request before
// the handler runs (admitStream); a caller whose key this member does not know yet was refused
// then.
func (m *metadataService) Watch(req *metadv1.WatchRequest, stream grpc.ServerStreamingServer[metadv1.WatchResponse]) error {
	ctx := stream.Context()
	w, err := m.s.svc.Watch(ctx, req)
	if err != nil {
		return toStatus(err)
	}
	defer w.Close()
	if err := stream.Send(w.Opened()); err != nil {
		return err
	}
	for {
		b, err := w.NextWire(ctx)
		if err != nil {
			return toStatus(err)
		}
		if err := stream.SendMsg(encodedMessage(b)); err != nil {
			return err
		}
	}
}

func (m *metadataService) ListObjectKeys(ctx context.Context, req *metadv1.ListObjectKeysRequest) (*metadv1.ListObjectKeysResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.ListObjectKeys)
}

func (m *metadataService) GetByRegex(ctx context.Context, req *metadv1.GetByRegexRequest) (*metadv1.GetByRegexResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.GetByRegex)
}

func (m *metadataService) RemoveByRegex(ctx context.Context, req *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.RemoveByRegex)
}

func (m *metadataService) MountLocalDisk(ctx context.Context, req *metadv1.MountLocalDiskRequest) (*metadv1.MountLocalDiskResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MountLocalDisk)
}

func (m *metadataService) UnmountLocalDisk(ctx context.Context, req *metadv1.UnmountLocalDiskRequest) (*metadv1.UnmountLocalDiskResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.UnmountLocalDisk)
}

func (m *metadataService) NotifyOffload(ctx context.Context, req *metadv1.NotifyOffloadRequest) (*metadv1.NotifyOffloadResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.NotifyOffload)
}

func (m *metadataService) EvictDiskReplica(ctx context.Context, req *metadv1.EvictDiskReplicaRequest) (*metadv1.EvictDiskReplicaResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.EvictDiskReplica)
}

func (m *metadataService) PromotionAllocStart(ctx context.Context, req *metadv1.PromotionAllocStartRequest) (*metadv1.PromotionAllocStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.PromotionAllocStart)
}

func (m *metadataService) NotifyPromotion(ctx context.Context, req *metadv1.NotifyPromotionRequest) (*metadv1.NotifyPromotionResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.NotifyPromotion)
}

func (m *metadataService) BatchReplicaClear(ctx context.Context, req *metadv1.BatchReplicaClearRequest) (*metadv1.BatchReplicaClearResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.BatchReplicaClear)
}

func (m *metadataService) CopyStart(ctx context.Context, req *metadv1.CopyStartRequest) (*metadv1.CopyStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CopyStart)
}

func (m *metadataService) CopyEnd(ctx context.Context, req *metadv1.CopyEndRequest) (*metadv1.CopyEndResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CopyEnd)
}

func (m *metadataService) CopyRevoke(ctx context.Context, req *metadv1.CopyRevokeRequest) (*metadv1.CopyRevokeResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CopyRevoke)
}

func (m *metadataService) MoveStart(ctx context.Context, req *metadv1.MoveStartRequest) (*metadv1.MoveStartResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MoveStart)
}

func (m *metadataService) MoveEnd(ctx context.Context, req *metadv1.MoveEndRequest) (*metadv1.MoveEndResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MoveEnd)
}

func (m *metadataService) MoveRevoke(ctx context.Context, req *metadv1.MoveRevokeRequest) (*metadv1.MoveRevokeResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MoveRevoke)
}

func (m *metadataService) CreateCopyTask(ctx context.Context, req *metadv1.CreateCopyTaskRequest) (*metadv1.CreateCopyTaskResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CreateCopyTask)
}

func (m *metadataService) CreateMoveTask(ctx context.Context, req *metadv1.CreateMoveTaskRequest) (*metadv1.CreateMoveTaskResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.CreateMoveTask)
}

func (m *metadataService) QueryTask(ctx context.Context, req *metadv1.QueryTaskRequest) (*metadv1.QueryTaskResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.QueryTask)
}

func (m *metadataService) FetchTasks(ctx context.Context, req *metadv1.FetchTasksRequest) (*metadv1.FetchTasksResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.FetchTasks)
}

func (m *metadataService) MarkTaskToComplete(ctx context.Context, req *metadv1.MarkTaskToCompleteRequest) (*metadv1.MarkTaskToCompleteResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.MarkTaskToComplete)
}

func (m *metadataService) ListTasks(ctx context.Context, req *metadv1.ListTasksRequest) (*metadv1.ListTasksResponse, error) {
	return unary(ctx, m.s, req, m.s.svc.ListTasks)
}
