package client

import (
	"context"
	"fmt"
	"time"

	"metad/proto/metadv1"
)

// PutOptions are the optional parts of a put or upsert. A nil *PutOptions, like the zero value,
// asks for the defaults: the object is its own group, one memory replica, no NOF replica, no pins,
// data type 0.
type PutOptions struct {
	// Group is the explicit group the object joins; "" = its own group. Batch puts ignore it (each
	// item names its own group).
	Group string
	// MemoryReplicas wanted, 1..8; 0 = the default (1).
	MemoryReplicas uint32
	// NOFReplicas wanted, 0..8.
	NOFReplicas uint32
	// DFSReplicas wanted (extents of DFS pools), 0..8.
	DFSReplicas uint32
	// PreferredSegments are tried first, in order.
	PreferredSegments []UUID
	// Host is the writer's host, for local-first placement: memory replicas go to the MEMORY
	// segments whose endpoint names this host ("10.0.0.7", or "10.0.0.7:9000" for its host) after
	// PreferredSegments and before the usual order; when they are full the put places as usual.
	// "" = no host.
	Host string
	// SoftPin is what the put does to the object's soft pin.
	SoftPin metadv1.SoftPinAction
	// SoftPinTTL is the soft pin duration with SOFT_PIN_ACTION_ENABLE; 0 = the default (30 min).
	// Sent in whole milliseconds.
	SoftPinTTL time.Duration
	// HardPin protects the object from every eviction.
	HardPin bool
	// DataType is an opaque client tag returned by Get.
	DataType uint32
}

// group returns the group id of o, nil for none.
func (o *PutOptions) group() []byte {
	if o == nil || o.Group == "" {
		return nil
	}
	return []byte(o.Group)
}

// config returns the ReplicaConfig of o; nil (the defaults) when o asks for nothing special.
func (o *PutOptions) config() *metadv1.ReplicaConfig {
	if o == nil {
		return nil
	}
	cfg := &metadv1.ReplicaConfig{
		MemoryReplicas: o.MemoryReplicas,
		NofReplicas:    o.NOFReplicas,
		DfsReplicas:    o.DFSReplicas,
		SoftPin:        o.SoftPin,
		SoftPinTtlMs:   uint64(o.SoftPinTTL / time.Millisecond),
		HardPin:        o.HardPin,
		DataType:       o.DataType,
		PreferredHost:  o.Host,
	}
	for _, s := range o.PreferredSegments {
		cfg.PreferredSegmentIds = append(cfg.PreferredSegmentIds, s.Bytes())
	}
	if cfg.MemoryReplicas == 0 && cfg.NofReplicas == 0 && cfg.DfsReplicas == 0 && cfg.SoftPin == metadv1.SoftPinAction_SOFT_PIN_ACTION_NONE &&
		cfg.SoftPinTtlMs == 0 && !cfg.HardPin && cfg.DataType == 0 && len(cfg.PreferredSegmentIds) == 0 &&
		cfg.PreferredHost == "" {
		return nil
	}
	return cfg
}

// ReadOption modifies a read (Get, Exist, their batch forms, ListGroup and the Admin listings).
type ReadOption func(*readOptions)

type readOptions struct {
	stale bool
}

// Stale lets any node answer from its own state without a read barrier: faster and available
// without a leader, but possibly stale, and it grants no read lease.
func Stale() ReadOption { return func(o *readOptions) { o.stale = true } }

func readOpts(opts []ReadOption) readOptions {
	var o readOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// PutStart places a new object of size bytes: it charges the tenant's quota and returns the
// PROCESSING replicas to write. tenant "" means "default".
//
// Within a session (the default) a retry of a put that applied answers with its replicas. Without
// one, if the call had to be retried and the retry met OBJECT_ALREADY_EXISTS, the object may be this
// very put, committed by an attempt whose answer was lost. PutStart then revokes this client's
// PROCESSING replicas of key (which succeeds only if the pending write is this client's) and
// places the object again; otherwise it returns OBJECT_ALREADY_EXISTS. A client must therefore not
// have two puts of one key in progress at once, which SEMANTICS forbids anyway.
func (c *Client) PutStart(ctx context.Context, tenant, key string, size uint64, opts *PutOptions) ([]*metadv1.Replica, error) {
	req := &metadv1.PutStartRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Group: opts.group(), Size: size, Config: opts.config(),
	}
	resp, n, err := callCount(ctx, c, metadv1.MetadataClient.PutStart, req)
	if n > 1 && !c.sessions() && IsReason(err, metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS) {
		if c.PutRevoke(ctx, tenant, key, metadv1.Tier_TIER_UNSPECIFIED) == nil {
			resp, err = call(ctx, c, metadv1.MetadataClient.PutStart, req)
		}
	}
	return resp.GetReplicas(), err
}

// PutEnd commits this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every tier).
func (c *Client) PutEnd(ctx context.Context, tenant, key string, tier metadv1.Tier) error {
	_, err := call(ctx, c, metadv1.MetadataClient.PutEnd, &metadv1.PutEndRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Tier: tier,
	})
	return err
}

// PutRevoke drops this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every tier).
func (c *Client) PutRevoke(ctx context.Context, tenant, key string, tier metadv1.Tier) error {
	_, err := call(ctx, c, metadv1.MetadataClient.PutRevoke, &metadv1.PutRevokeRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Tier: tier,
	})
	return err
}

// Put is PutStart then PutEnd of every tier, for callers that write the bytes elsewhere or not at
// all (tools, tests, benchmarks). It returns the replicas as placed, marked COMPLETE. A PutEnd
// that answers RESERVATION_LOST (a leader change lost the PutStart's reservation; nothing was
// created) places the object again, at most PutPlacements times in all. If PutEnd fails otherwise,
// Put tries a PutRevoke under the same context (its error is ignored) so the key is not left
// half-written, and returns PutEnd's error.
func (c *Client) Put(ctx context.Context, tenant, key string, size uint64, opts *PutOptions) ([]*metadv1.Replica, error) {
	var reps []*metadv1.Replica
	for n := 1; ; n++ {
		var err error
		if reps, err = c.PutStart(ctx, tenant, key, size, opts); err != nil {
			return nil, err
		}
		err = c.PutEnd(ctx, tenant, key, metadv1.Tier_TIER_UNSPECIFIED)
		if err == nil {
			break
		}
		if IsReason(err, metadv1.Reason_REASON_RESERVATION_LOST) && n < PutPlacements {
			continue
		}
		_ = c.PutRevoke(ctx, tenant, key, metadv1.Tier_TIER_UNSPECIFIED)
		return nil, err
	}
	for _, r := range reps {
		r.Status = metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE
	}
	return reps, nil
}

// PutPlacements bounds how many times Put places an object whose reservation a leader change lost.
const PutPlacements = 3

// UpsertStart inserts or rewrites key with size bytes. It returns the PROCESSING replicas to
// write and whether the existing extents were reused (same size).
func (c *Client) UpsertStart(ctx context.Context, tenant, key string, size uint64, opts *PutOptions) ([]*metadv1.Replica, bool, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.UpsertStart, &metadv1.UpsertStartRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Group: opts.group(), Size: size, Config: opts.config(),
	})
	return resp.GetReplicas(), resp.GetReused(), err
}

// UpsertEnd commits an upsert of key in tier (TIER_UNSPECIFIED = every tier).
func (c *Client) UpsertEnd(ctx context.Context, tenant, key string, tier metadv1.Tier) error {
	_, err := call(ctx, c, metadv1.MetadataClient.UpsertEnd, &metadv1.UpsertEndRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Tier: tier,
	})
	return err
}

// UpsertRevoke abandons an upsert of key in tier (TIER_UNSPECIFIED = every tier).
func (c *Client) UpsertRevoke(ctx context.Context, tenant, key string, tier metadv1.Tier) error {
	_, err := call(ctx, c, metadv1.MetadataClient.UpsertRevoke, &metadv1.UpsertRevokeRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Tier: tier,
	})
	return err
}

// Get returns where to read key: its COMPLETE replicas, size, data type and the read lease
// granted (lease_ttl_ms; 0 for a stale read). A missing key is an OBJECT_NOT_FOUND error.
func (c *Client) Get(ctx context.Context, tenant, key string, opts ...ReadOption) (*metadv1.GetResponse, error) {
	return call(ctx, c, metadv1.MetadataClient.Get, &metadv1.GetRequest{
		Tenant: tenant, Key: []byte(key), Stale: readOpts(opts).stale,
	})
}

// Exist reports whether key has a COMPLETE replica (granting a read lease if so). A missing key
// is false, not an error.
func (c *Client) Exist(ctx context.Context, tenant, key string, opts ...ReadOption) (bool, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.Exist, &metadv1.ExistRequest{
		Tenant: tenant, Key: []byte(key), Stale: readOpts(opts).stale,
	})
	return resp.GetExists(), err
}

// Remove erases key; force removes it even under a read lease (never while it is being written).
func (c *Client) Remove(ctx context.Context, tenant, key string, force bool) error {
	_, err := call(ctx, c, metadv1.MetadataClient.Remove, &metadv1.RemoveRequest{
		Tenant: tenant, Key: []byte(key), Force: force,
	})
	return err
}

// RemoveAll erases every removable object of tenant and reports how many were erased and skipped.
// The call is long (Long).
func (c *Client) RemoveAll(ctx context.Context, tenant string, force bool) (*metadv1.RemoveAllResponse, error) {
	return call(Long(ctx), c, metadv1.MetadataClient.RemoveAll, &metadv1.RemoveAllRequest{Tenant: tenant, Force: force})
}

// RemoveGroup erases an explicit group and its members in one step; it returns the members erased.
func (c *Client) RemoveGroup(ctx context.Context, tenant, group string, force bool) (uint64, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.RemoveGroup, &metadv1.RemoveGroupRequest{
		Tenant: tenant, Group: []byte(group), Force: force,
	})
	return resp.GetRemoved(), err
}

// ListGroupPage returns one page of a group's member keys after startAfter ("" = from the start),
// at most limit keys (0 = the server's page size), and whether more follow.
func (c *Client) ListGroupPage(ctx context.Context, tenant, group, startAfter string, limit uint32, opts ...ReadOption) ([]string, bool, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.ListGroup, &metadv1.ListGroupRequest{
		Tenant: tenant, Group: []byte(group), Stale: readOpts(opts).stale, StartAfter: []byte(startAfter), Limit: limit,
	})
	if err != nil {
		return nil, false, err
	}
	keys := make([]string, len(resp.GetKeys()))
	for i, k := range resp.GetKeys() {
		keys[i] = string(k)
	}
	return keys, resp.GetTruncated(), nil
}

// ListGroup returns every member key of a group in byte order, fetching page after page. The pages
// are separate reads, so a group that changes meanwhile may be listed inconsistently.
func (c *Client) ListGroup(ctx context.Context, tenant, group string, opts ...ReadOption) ([]string, error) {
	var all []string
	after := ""
	for {
		keys, more, err := c.ListGroupPage(ctx, tenant, group, after, 0, opts...)
		if err != nil {
			return all, err
		}
		all = append(all, keys...)
		if !more || len(keys) == 0 {
			return all, nil
		}
		after = keys[len(keys)-1]
	}
}

// MountSegment mounts seg as a segment of this client (its owner_client_id is ignored).
// Mounting the same id again as the same client is a no-op.
func (c *Client) MountSegment(ctx context.Context, seg *metadv1.SegmentDesc) error {
	_, err := call(ctx, c, metadv1.MetadataClient.MountSegment, &metadv1.MountSegmentRequest{
		ClientId: c.idBytes, Segment: seg,
	})
	return err
}

// UnmountSegment unmounts a segment of this client, dropping every replica in it.
func (c *Client) UnmountSegment(ctx context.Context, id UUID) (*metadv1.UnmountSegmentResponse, error) {
	return c.UnmountSegmentAs(ctx, c.id, id)
}

// UnmountSegmentAs unmounts a segment on behalf of its owner (an operator tool's view: the server
// checks only that owner mounted it).
func (c *Client) UnmountSegmentAs(ctx context.Context, owner, id UUID) (*metadv1.UnmountSegmentResponse, error) {
	return call(ctx, c, metadv1.MetadataClient.UnmountSegment, &metadv1.UnmountSegmentRequest{
		ClientId: owner.Bytes(), SegmentId: id.Bytes(),
	})
}

// UnmountSegmentGraceful starts the graceful unmount of a segment on behalf of its owner: the
// segment takes no new allocation from now on, its replicas stay readable, and the leader unmounts
// it when grace has passed (or as soon as it holds no replica; one that holds none is unmounted at
// once). grace is rounded down to the millisecond; 0 unmounts now, as UnmountSegmentAs does. A
// repeated call keeps the earlier deadline. The response says whether the segment stays closing
// and until when (leader time).
func (c *Client) UnmountSegmentGraceful(ctx context.Context, owner, id UUID, grace time.Duration) (*metadv1.UnmountSegmentResponse, error) {
	if grace < 0 {
		return nil, fmt.Errorf("unmount segment %s: grace %s: %w", id, grace, ErrNegativeGrace)
	}
	return call(ctx, c, metadv1.MetadataClient.UnmountSegment, &metadv1.UnmountSegmentRequest{
		ClientId: owner.Bytes(), SegmentId: id.Bytes(), GraceMs: uint64(grace.Milliseconds()),
	})
}

// Ping keeps this client alive and returns the cluster's view of it: its mounted segments, the
// client ttl, the leader and the members. The leader named becomes the endpoint later calls go to.
func (c *Client) Ping(ctx context.Context) (*metadv1.PingResponse, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.Ping, &metadv1.PingRequest{ClientId: c.idBytes})
	if err == nil && resp.GetLeaderAddress() != "" {
		_ = c.setLeader(resp.GetLeaderAddress())
	}
	return resp, err
}
