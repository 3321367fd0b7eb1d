package client

import (
	"context"
	"errors"
	"io"
	"sync"

	"metad/proto/metadv1"
)

// RegisterTenant creates tenant name with a requested quota in bytes (0 = no quota) and returns the
// new instance id.
func (c *Client) RegisterTenant(ctx context.Context, name string, quotaBytes uint64) (uint64, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.RegisterTenant, &metadv1.RegisterTenantRequest{
		Name: name, QuotaBytes: quotaBytes,
	})
	return resp.GetInstanceId(), err
}

// UnregisterTenant removes tenant name; with force it also erases its objects and groups. The call
// is long (Long).
func (c *Client) UnregisterTenant(ctx context.Context, name string, force bool) (*metadv1.UnregisterTenantResponse, error) {
	return callAdmin(Long(ctx), c, metadv1.AdminClient.UnregisterTenant, &metadv1.UnregisterTenantRequest{Name: name, Force: force})
}

// ListTenants lists the registered tenants sorted by name, with their usage.
func (c *Client) ListTenants(ctx context.Context, opts ...ReadOption) ([]*metadv1.TenantInfo, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.ListTenants, &metadv1.ListTenantsRequest{Stale: readOpts(opts).stale})
	return resp.GetTenants(), err
}

// SetQuota sets a tenant's requested quota (0 = no quota) and returns the quota in force after.
func (c *Client) SetQuota(ctx context.Context, tenant string, quotaBytes uint64) (*metadv1.SetQuotaResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.SetQuota, &metadv1.SetQuotaRequest{Tenant: tenant, QuotaBytes: quotaBytes})
}

// GetQuota reports a tenant's quota and usage.
func (c *Client) GetQuota(ctx context.Context, tenant string, opts ...ReadOption) (*metadv1.GetQuotaResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.GetQuota, &metadv1.GetQuotaRequest{Tenant: tenant, Stale: readOpts(opts).stale})
}

// SegmentFilter selects segments in ListSegments; the zero value selects all.
type SegmentFilter struct {
	Tier   metadv1.Tier // TIER_UNSPECIFIED = every tier
	Client UUID         // zero = every client
}

// ListSegments lists the mounted segments that match f, sorted by id, with their usage.
func (c *Client) ListSegments(ctx context.Context, f SegmentFilter, opts ...ReadOption) ([]*metadv1.SegmentInfo, error) {
	req := &metadv1.ListSegmentsRequest{Stale: readOpts(opts).stale, Tier: f.Tier}
	if !f.Client.IsZero() {
		req.ClientId = f.Client.Bytes()
	}
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.ListSegments, req)
	return resp.GetSegments(), err
}

// ListMembers returns the cluster's Raft configuration.
func (c *Client) ListMembers(ctx context.Context) (*metadv1.ListMembersResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.ListMembers, &metadv1.ListMembersRequest{})
}

// AddMember adds a voter named name at Raft peer address peerAddr; it returns the configuration's
// log index. The call is long (Long).
func (c *Client) AddMember(ctx context.Context, name, peerAddr string) (uint64, error) {
	resp, err := callAdmin(Long(ctx), c, metadv1.AdminClient.AddMember, &metadv1.AddMemberRequest{Name: name, PeerAddress: peerAddr})
	return resp.GetIndex(), err
}

// AddLearner adds a learner named name at Raft peer address peerAddr: it catches up without
// voting until PromoteMember. The call is long (Long).
func (c *Client) AddLearner(ctx context.Context, name, peerAddr string) (uint64, error) {
	resp, err := callAdmin(Long(ctx), c, metadv1.AdminClient.AddMember, &metadv1.AddMemberRequest{Name: name, PeerAddress: peerAddr, Learner: true})
	return resp.GetIndex(), err
}

// PromoteMember makes the learner name a voter once it is within maxLag entries of the leader's
// commit index (0: the server's default); REASON_LEARNER_NOT_CAUGHT_UP while it is not. A voter
// is left as it is. The call is long (Long).
func (c *Client) PromoteMember(ctx context.Context, name string, maxLag uint64) (*metadv1.PromoteMemberResponse, error) {
	return callAdmin(Long(ctx), c, metadv1.AdminClient.PromoteMember, &metadv1.PromoteMemberRequest{Name: name, MaxLag: maxLag})
}

// RemoveMember removes member name; it returns the configuration's log index. The call is long
// (Long).
func (c *Client) RemoveMember(ctx context.Context, name string) (uint64, error) {
	resp, err := callAdmin(Long(ctx), c, metadv1.AdminClient.RemoveMember, &metadv1.RemoveMemberRequest{Name: name})
	return resp.GetIndex(), err
}

// TransferLeader hands leadership to member target ("" = the most up-to-date follower) and makes
// the new leader the endpoint later calls go to. The call is long (Long).
func (c *Client) TransferLeader(ctx context.Context, target string) (*metadv1.TransferLeaderResponse, error) {
	resp, err := callAdmin(Long(ctx), c, metadv1.AdminClient.TransferLeader, &metadv1.TransferLeaderRequest{Target: target})
	if err == nil && resp.GetLeaderAddress() != "" {
		_ = c.setLeader(resp.GetLeaderAddress())
	}
	return resp, err
}

// Status asks the node at endpoint (any address, known or not) for its own status. It is never
// retried or redirected: the answer is that node's view.
func (c *Client) Status(ctx context.Context, endpoint string) (*metadv1.StatusResponse, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	c.mu.Lock()
	ep := c.byAddr[endpoint]
	c.mu.Unlock()
	if ep != nil {
		return ep.admin.Status(ctx, &metadv1.StatusRequest{})
	}
	conn, err := c.dial(endpoint)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return metadv1.NewAdminClient(conn).Status(ctx, &metadv1.StatusRequest{})
}

// NodeStatus is one endpoint's answer to Status: Status or Err is set.
type NodeStatus struct {
	Endpoint string
	Status   *metadv1.StatusResponse
	Err      error
}

// StatusAll asks every known endpoint for its status, concurrently, and returns the answers in
// endpoint order. An unreachable node has Err set (bound the wait with ctx).
func (c *Client) StatusAll(ctx context.Context) []NodeStatus {
	eps := c.Endpoints()
	out := make([]NodeStatus, len(eps))
	var wg sync.WaitGroup
	for i, addr := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.Status(ctx, addr)
			out[i] = NodeStatus{Endpoint: addr, Status: st, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// SnapshotSave streams a snapshot of the cluster's state into w and returns the bytes written.
// allowStale lets a follower answer from its own state. The call is retried like any other until
// the first chunk arrives; after that an error ends it (w then holds a truncated file). The call
// is long (Long), and each chunk received is a sign of life of its node.
func (c *Client) SnapshotSave(ctx context.Context, w io.Writer, allowStale bool) (int64, error) {
	var n int64
	err := c.do(Long(ctx), func(ctx context.Context, ep *endpoint) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := ep.admin.SnapshotSave(ctx, &metadv1.SnapshotSaveRequest{AllowStale: allowStale})
		if err != nil {
			return err
		}
		for {
			chunk, err := stream.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				if n > 0 {
					return &noRetryError{err}
				}
				return err
			}
			alive(ctx)
			if chunk.GetOffset() != uint64(n) {
				return &noRetryError{errors.New("client: snapshot chunk out of order")}
			}
			m, err := w.Write(chunk.GetData())
			n += int64(m)
			if err != nil {
				return &noRetryError{err}
			}
		}
	})
	var nr *noRetryError
	if errors.As(err, &nr) {
		err = nr.err
	}
	return n, err
}

// noRetryError carries an error the retry loop must return as it is (the operation made progress
// that a retry would repeat).
type noRetryError struct{ err error }

func (e *noRetryError) Error() string { return e.err.Error() }

// SnapshotRestore replaces the cluster's state with the snapshot file read from r, streamed in
// chunks of at most 1 MiB. If r is an io.Seeker the call is retried like any other (r is rewound);
// otherwise it is attempted once. The call is long (Long), and each chunk sent is a sign of life
// of its node (gRPC's flow control holds the sends once the server stops reading).
func (c *Client) SnapshotRestore(ctx context.Context, r io.Reader) (*metadv1.SnapshotRestoreResponse, error) {
	seeker, canRetry := r.(io.Seeker)
	var resp *metadv1.SnapshotRestoreResponse
	first := true
	err := c.do(Long(ctx), func(ctx context.Context, ep *endpoint) error {
		if !first {
			if !canRetry {
				return &noRetryError{errors.New("client: snapshot restore cannot be retried from a stream that cannot seek")}
			}
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return &noRetryError{err}
			}
		}
		first = false
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := ep.admin.SnapshotRestore(ctx)
		if err != nil {
			return err
		}
		buf := make([]byte, 1<<20)
		var off uint64
		for {
			m, rerr := io.ReadFull(r, buf)
			if m > 0 {
				if err := stream.Send(&metadv1.SnapshotChunk{Data: buf[:m], Offset: off}); err != nil {
					break // the server ended the stream; CloseAndRecv reports why
				}
				off += uint64(m)
				alive(ctx)
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				return &noRetryError{rerr}
			}
		}
		resp, err = stream.CloseAndRecv()
		return err
	})
	var nr *noRetryError
	if errors.As(err, &nr) {
		err = nr.err
	}
	return resp, err
}
