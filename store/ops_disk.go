package store

import (
	"errors"
	"slices"

	"metad/store/alloc"
)

// The LOCAL_DISK tier (TIERS.md): a client's local SSD, registered as one segment of tier
// TierLocalDisk that the client owns (alloc.LocalDisk: its id follows from the client's). A
// LOCAL_DISK replica is a file on that SSD; its extent accounts the file's bytes against the
// registration's capacity (the offset means nothing to the owner, who names the file by key). No
// put, copy, move or arena places into such a segment: a replica is added only by its owner's
// offload report (OffloadDone) and dropped by the owner's own eviction (DropDiskReplicas), by
// Remove, by an upsert, or with the segment: UnmountSegment of its id or the client's expiry
// (UnmountClient) drop exactly that owner's LOCAL_DISK replicas and erase objects left with none,
// through the same path as a memory segment's unmount. LOCAL_DISK bytes are never charged to a
// tenant's quota (ObjectState.MemoryBytes counts MEMORY replicas only), and memory eviction
// neither counts nor drops them: an object whose memory replicas are evicted lives on while it
// has a LOCAL_DISK one.

// MountLocalDisk registers client's SSD of capacity bytes reachable at endpoint (the segment
// alloc.LocalDisk builds); offload: the client takes offload tasks. The same registration again is
// a no-op (created false); another capacity, endpoint or offload flag is INVALID_PARAMS (unmount
// first), as MountSegment refuses a conflicting remount. It returns the segment's id.
func (s *Store) MountLocalDisk(client alloc.ID, capacity uint64, endpoint string, offload bool) (alloc.ID, bool, error) {
	seg := alloc.LocalDisk(client, capacity, endpoint, offload)
	created, err := s.MountSegment(seg)
	return seg.ID, created, err
}

// CheckMountLocalDisk returns the rejection MountLocalDisk would return now, changing nothing.
func (s *Store) CheckMountLocalDisk(client alloc.ID, capacity uint64, endpoint string, offload bool) error {
	return s.CheckMountSegment(alloc.LocalDisk(client, capacity, endpoint, offload))
}

// OffloadResult is one of a worker's offload reports: the object under Key was (Success) or was
// not written to its SSD as a file of Size bytes.
type OffloadResult struct {
	Key     string
	Size    uint64
	Success bool
}

// localDisk returns client's LOCAL_DISK segment: SEGMENT_NOT_FOUND when it has no SSD registration.
func (s *Store) localDisk(client alloc.ID) (alloc.ID, error) {
	id := alloc.LocalDiskID(client)
	if info, ok := s.segs.Get(id); !ok || info.Owner != client || info.Tier != alloc.TierLocalDisk {
		return alloc.ID{}, errf(SegmentNotFound, "client %s has no local disk mounted", client)
	}
	return id, nil
}

// CheckOffloadDone returns the whole-command rejection of OffloadDone, changing nothing:
// TENANT_NOT_REGISTERED, or SEGMENT_NOT_FOUND when client has no SSD registration.
func (s *Store) CheckOffloadDone(tenant string, client alloc.ID) error {
	if err := s.CheckWritable(tenant); err != nil {
		return err
	}
	_, err := s.localDisk(client)
	return err
}

// OffloadDone records a worker's offload reports for objects of one tenant: each success adds a
// COMPLETE LOCAL_DISK replica on client's SSD segment, an extent of the object's size rounded up,
// unless the object already has one there (a repeated report changes nothing, so an object never
// holds two LOCAL_DISK replicas of one owner). A failure records no replica. Either ends the
// key's offload task that client holds (SUCCESS for a success recorded, FAILED otherwise) and
// drops the object's offload pin by client (offload.go); a report with no task is the worker's
// own offload. It returns one error per result (nil = recorded): OBJECT_NOT_FOUND,
// REPLICA_IS_NOT_READY when the object has no COMPLETE replica (the write it copied was revoked or
// replaced), INVALID_PARAMS when Size is not the object's, NO_AVAILABLE_HANDLE when the SSD's
// capacity is used up. The whole call fails, with nothing changed, with TENANT_NOT_REGISTERED or
// SEGMENT_NOT_FOUND (no SSD registration). The outcome depends only on the replicated state, now
// (the entry's leader time) and the arguments.
func (s *Store) OffloadDone(now int64, tenant string, client alloc.ID, results []OffloadResult) ([]error, error) {
	tenant = NormalizeTenant(tenant)
	seg, err := s.localDisk(client)
	if err != nil {
		return nil, err
	}
	t, err := s.writable(tenant)
	if err != nil {
		return nil, err
	}
	defer t.release()
	errs := make([]error, len(results))
	for i, r := range results {
		msg := "the worker reported the offload failed"
		if r.Success {
			errs[i] = s.addDiskReplica(t, seg, client, r)
			msg = msgOf(errs[i])
		} else {
			s.unpinOffload(t, r.Key, client)
		}
		s.tasks.settleOffload(now, t.name, r.Key, client, r.Success && errs[i] == nil, msg)
	}
	return errs, nil
}

// msgOf is an item error's text for a task's message ("" for none).
func msgOf(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// unpinOffload drops key's offload pin by client, if it carries one.
func (s *Store) unpinOffload(t *TenantState, key string, client alloc.ID) {
	e := t.dir.lookup(key)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.State()
	if e.Life() != Active || st == nil || !offloadPinnedBy(st, client) {
		return
	}
	ns := st.next()
	ns.Task = nil
	s.setStateLocked(t, e, ns)
}

// addDiskReplica adds one LOCAL_DISK replica on seg, client's, for r (see OffloadDone), and drops
// client's offload pin of the object. The extent is allocated with no object lock held (the
// registry's lock is a leaf outside the store's order) and returned if the object changed meanwhile.
func (s *Store) addDiskReplica(t *TenantState, seg, client alloc.ID, r OffloadResult) error {
	e := t.dir.lookup(r.Key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, r.Key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	err := diskVerdict(t, e, st, seg, r)
	e.mu.Unlock()
	if err != nil {
		s.unpinOffload(t, r.Key, client)
		if errors.Is(err, errHasDiskReplica) {
			return nil
		}
		return err
	}
	x, aerr := s.segs.AllocIn(seg, st.Size)
	if aerr != nil {
		return objErr(NoAvailableHandle, t.name, r.Key, "local disk "+seg.String()+": "+aerr.Error())
	}
	e.mu.Lock()
	if e.Life() != Active || e.State() != st {
		e.mu.Unlock()
		s.freeReplicas(t, []Replica{{Extent: x, Tier: alloc.TierLocalDisk}}, st.Size, nil)
		return objErr(InvalidWrite, t.name, r.Key, "object changed while its local disk replica was placed")
	}
	ns := st.nextWith(1)
	ns.Replicas = append(ns.Replicas, Replica{ID: t.dir.nextReplicaID.Add(1), Extent: x, Tier: alloc.TierLocalDisk, Status: Complete})
	if offloadPinnedBy(st, client) {
		ns.Task = nil
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	return nil
}

// errHasDiskReplica is diskVerdict's "already recorded": the report is a repeat and changes nothing.
var errHasDiskReplica = errors.New("store: the object has a local disk replica on the segment")

// diskVerdict is OffloadDone's verdict on one report, under e.mu.
func diskVerdict(t *TenantState, e *ObjectEntry, st *ObjectState, seg alloc.ID, r OffloadResult) error {
	switch {
	case e.Life() != Active || st == nil:
		return objErr(ObjectNotFound, t.name, r.Key, "object not found")
	case !st.HasComplete():
		return objErr(ReplicaIsNotReady, t.name, r.Key, "no COMPLETE replica to have offloaded")
	case r.Size != st.Size:
		return objErr(InvalidParams, t.name, r.Key, "size "+itoa(r.Size)+", the object's is "+itoa(st.Size))
	case slices.ContainsFunc(st.Replicas, func(x Replica) bool { return x.Extent.Segment == seg }):
		return errHasDiskReplica
	}
	return nil
}

// DropDiskReplicas is EvictDiskReplica: files of keys of one tenant were removed, so each object's
// replicas in them go whatever their leases (the bytes are gone), and an object left with no
// replica is erased. With tier LOCAL_DISK the files are client's SSD files: the object's LOCAL_DISK
// replica of client goes. With tier DISK they are files of a shared root: the object's COMPLETE
// DISK replicas go, whoever reports it (a PROCESSING one is its writer's, still being written). It
// returns one error per key (nil = dropped): OBJECT_NOT_FOUND, or NO_REPLICA_ON_SEGMENT when the
// object has no such replica (the client's registration gone included). TENANT_NOT_REGISTERED
// fails the whole call; another tier is INVALID_PARAMS.
func (s *Store) DropDiskReplicas(tenant string, client alloc.ID, tier alloc.Tier, keys []string) ([]error, error) {
	var on func(r Replica) bool
	switch tier {
	case alloc.TierLocalDisk:
		seg := alloc.LocalDiskID(client)
		on = func(r Replica) bool { return r.Tier == alloc.TierLocalDisk && r.Extent.Segment == seg }
	case alloc.TierDisk:
		on = func(r Replica) bool { return r.Tier == alloc.TierDisk && r.Status == Complete }
	default:
		return nil, errf(InvalidParams, "tier: %s, want LOCAL_DISK or DISK", tier)
	}
	tenant = NormalizeTenant(tenant)
	t, err := s.writable(tenant)
	if err != nil {
		return nil, err
	}
	defer t.release()
	errs := make([]error, len(keys))
	for i, key := range keys {
		errs[i] = s.dropDiskReplica(t, key, tier, on)
	}
	return errs, nil
}

func (s *Store) dropDiskReplica(t *TenantState, key string, tier alloc.Tier, on func(Replica) bool) error {
	e := t.dir.lookup(key)
	if e == nil {
		return objErr(ObjectNotFound, t.name, key, "object not found")
	}
	e.mu.Lock()
	st := e.State()
	if e.Life() != Active || st == nil {
		e.mu.Unlock()
		return objErr(ObjectNotFound, t.name, key, "object not found")
	}
	if !anyReplica(st, on) {
		e.mu.Unlock()
		if tier == alloc.TierDisk {
			return objErr(NoReplicaOnSegment, t.name, key, "no COMPLETE DISK replica")
		}
		return objErr(NoReplicaOnSegment, t.name, key, "no LOCAL_DISK replica of the client")
	}
	ns, dropped := st.nextKeeping(func(r Replica) bool { return !on(r) })
	if len(ns.Replicas) == 0 {
		e.setLifeLocked(Removing)
		e.mu.Unlock()
		s.finishErase(t, e, st, nil)
		return nil
	}
	s.setStateLocked(t, e, ns)
	e.mu.Unlock()
	s.freeReplicas(t, dropped, st.Size, nil)
	return nil
}
