package client

import (
	"context"
	"encoding/hex"
	"path"

	metadv1 "metad/proto/metadv1"
)

// FilePath is the file of an object in a directory of files by tenant and key: a DISK replica's
// file under its shared root (dir = the replica's segment endpoint), or a worker's LOCAL_DISK
// file: <dir>/<hex tenant>/<hex key>, where "" is the tenant "default". Hex, so that no key byte
// ('/', "..") means anything to a filesystem.
func FilePath(dir, tenant, key string) string {
	if tenant == "" {
		tenant = "default"
	}
	return path.Join(dir, hex.EncodeToString([]byte(tenant)), hex.EncodeToString([]byte(key)))
}

// The LOCAL_DISK tier: a worker registers its local SSD, reports what it offloaded to it and what
// it removed from it. Each call acts for this client (its id is the owner).

// OffloadResult is one object this worker copied to its SSD (Success, Size bytes written) or failed to.
type OffloadResult struct {
	Key     string
	Size    uint64
	Success bool
}

// MountLocalDisk registers this client's local SSD of capacity bytes, reachable at endpoint;
// offload: it takes offload tasks. It returns the registration's segment id (derived from the
// client id) and whether this call created it: mounting the same registration again is a no-op,
// and another capacity, endpoint or offload flag is refused (INVALID_PARAMS; unmount first).
func (c *Client) MountLocalDisk(ctx context.Context, capacity uint64, endpoint string, offload bool) (UUID, bool, error) {
	resp, err := call(ctx, c, metadv1.MetadataClient.MountLocalDisk, &metadv1.MountLocalDiskRequest{
		ClientId: c.idBytes, CapacityBytes: capacity, Endpoint: endpoint, Offload: offload,
	})
	if err != nil {
		return UUID{}, false, err
	}
	var id UUID
	copy(id[:], resp.GetSegmentId())
	return id, resp.GetCreated(), nil
}

// UnmountLocalDisk drops this client's SSD registration and exactly its LOCAL_DISK replicas;
// objects left with none are erased. With no registration it returns zero counts.
func (c *Client) UnmountLocalDisk(ctx context.Context) (*metadv1.UnmountLocalDiskResponse, error) {
	return call(ctx, c, metadv1.MetadataClient.UnmountLocalDisk, &metadv1.UnmountLocalDiskRequest{ClientId: c.idBytes})
}

// NotifyOffload reports objects of tenant that this worker offloaded to its SSD (a success records
// a COMPLETE LOCAL_DISK replica) or failed to. One status per result, in order; more than 4096
// results go in several calls, and keys must be distinct.
func (c *Client) NotifyOffload(ctx context.Context, tenant string, results []OffloadResult) ([]*metadv1.Status, error) {
	keys := make([]string, len(results))
	for i, r := range results {
		keys[i] = r.Key
	}
	at := 0
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		rs := make([]*metadv1.OffloadResult, len(ks))
		for i, k := range ks {
			r := results[at+i]
			rs[i] = &metadv1.OffloadResult{Key: k, Size: r.Size, Success: r.Success}
		}
		resp, err := call(ctx, c, metadv1.MetadataClient.NotifyOffload, &metadv1.NotifyOffloadRequest{
			Tenant: tenant, ClientId: c.idBytes, Results: rs,
		})
		if err == nil {
			at += len(ks)
		}
		return resp.GetResults(), err
	})
}

// EvictDiskReplica reports SSD files of tenant's keys that this worker removed: their LOCAL_DISK
// replicas go, and an object left with no replica is erased. One status per key, in order.
func (c *Client) EvictDiskReplica(ctx context.Context, tenant string, keys []string) ([]*metadv1.Status, error) {
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.EvictDiskReplica, &metadv1.EvictDiskReplicaRequest{
			Tenant: tenant, ClientId: c.idBytes, Keys: ks, Tier: metadv1.Tier_TIER_LOCAL_DISK,
		})
		return resp.GetResults(), err
	})
}

// EvictSharedFiles reports files of tenant's keys under a shared root (the DISK tier) that this
// client removed: their COMPLETE DISK replicas go, and an object left with no replica is erased.
// One status per key, in order (NO_REPLICA_ON_SEGMENT for an object with no COMPLETE DISK replica).
func (c *Client) EvictSharedFiles(ctx context.Context, tenant string, keys []string) ([]*metadv1.Status, error) {
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.EvictDiskReplica, &metadv1.EvictDiskReplicaRequest{
			Tenant: tenant, ClientId: c.idBytes, Keys: ks, Tier: metadv1.Tier_TIER_DISK,
		})
		return resp.GetResults(), err
	})
}

// PromotionAllocStart places the memory replica of the promotion this client holds for tenant's
// key (a PROMOTE task FetchTasks gave it), on the preferred segments first, and returns it with the
// object's size: copy the object's SSD file into it, then call NotifyPromotion.
func (c *Client) PromotionAllocStart(ctx context.Context, tenant, key string, preferred []UUID) (*metadv1.Replica, uint64, error) {
	var pref [][]byte
	for _, id := range preferred {
		pref = append(pref, id.Bytes())
	}
	resp, err := call(ctx, c, metadv1.MetadataClient.PromotionAllocStart, &metadv1.PromotionAllocStartRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), PreferredSegmentIds: pref,
	})
	if err != nil {
		return nil, 0, err
	}
	return resp.GetReplica(), resp.GetSize(), nil
}

// NotifyPromotion ends the promotion this client holds for tenant's key: success makes its memory
// replica COMPLETE, a failure drops it.
func (c *Client) NotifyPromotion(ctx context.Context, tenant, key string, success bool) error {
	_, err := call(ctx, c, metadv1.MetadataClient.NotifyPromotion, &metadv1.NotifyPromotionRequest{
		Tenant: tenant, ClientId: c.idBytes, Key: []byte(key), Success: success,
	})
	return err
}
