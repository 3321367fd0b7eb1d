package service

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// Request validation: SEMANTICS section 1, checked before anything is proposed or forwarded. Every
// failure is an INVALID_PARAMS *store.Error whose message starts with the request field it is about
// (in the proto's spelling: "tenant", "client_id", "key", "config.memory_replicas", "keys[3]"...).
// The store checks the same limits again on apply; these checks exist so that bad input costs no
// log entry and gets a message naming the field.

// maxSoftPinTTLms is 24 h in milliseconds.
const maxSoftPinTTLms = uint64(store.MaxSoftPinTTL / time.Millisecond)

func badf(field, format string, args ...any) error {
	return &store.Error{Reason: store.InvalidParams, Msg: field + ": " + fmt.Sprintf(format, args...)}
}

// within prefixes a validation error with the position of a batch item.
func within(field string, i int, err error) error {
	if err == nil {
		return nil
	}
	return badf(fmt.Sprintf("%s[%d]", field, i), "%s", msgOf(err))
}

// tenantOf normalizes ("" = default) and checks a tenant id.
func tenantOf(raw string) (string, error) {
	t := store.NormalizeTenant(raw)
	return t, store.ValidateTenant(t)
}

// tenantNamed checks a tenant name given in a field other than "tenant" (Admin's "name").
func tenantNamed(field, raw string) (string, error) {
	t := store.NormalizeTenant(raw)
	if err := store.ValidateTenant(t); err != nil {
		return "", badf(field, "%s", msgOf(err))
	}
	return t, nil
}

// memberOf checks a member name given in field (fsm.ValidateMemberName).
func memberOf(field, name string) error {
	if err := fsm.ValidateMemberName(name); err != nil {
		return badf(field, "%s", msgOf(err))
	}
	return nil
}

// addressOf checks a member address given in field (fsm.ValidateMemberAddress).
func addressOf(field, addr string) error {
	if err := fsm.ValidateMemberAddress(addr); err != nil {
		return badf(field, "%s", msgOf(err))
	}
	return nil
}

// clientOf parses a client id: 16 bytes, or the UUID's string form (36 characters with dashes, or
// 32 hex digits). The zero UUID is refused.
func clientOf(field string, raw []byte) (alloc.ID, error) {
	var id alloc.ID
	switch len(raw) {
	case len(id):
		copy(id[:], raw)
	case 32, 36:
		p, err := alloc.ParseID(string(raw))
		if err != nil {
			return alloc.ID{}, badf(field, "not a UUID: %v", err)
		}
		id = p
	default:
		return alloc.ID{}, badf(field, "%d bytes, want a 16-byte UUID (or its 36-character string form)", len(raw))
	}
	if id.IsZero() {
		return alloc.ID{}, badf(field, "must be a non-zero UUID")
	}
	return id, nil
}

// MaxUnmountGrace is the longest grace period of a graceful unmount (UnmountSegmentRequest.grace_ms).
const MaxUnmountGrace = 24 * time.Hour

// segmentIDOf checks a segment id: exactly 16 bytes, not zero.
func segmentIDOf(field string, raw []byte) (alloc.ID, error) {
	var id alloc.ID
	if len(raw) != len(id) {
		return id, badf(field, "%d bytes, want a 16-byte UUID", len(raw))
	}
	copy(id[:], raw)
	if id.IsZero() {
		return id, badf(field, "must be a non-zero UUID")
	}
	return id, nil
}

// keyOf checks an object key.
func keyOf(raw []byte) (string, error) {
	k := string(raw)
	return k, store.ValidateKey(k)
}

// keysOf checks a batch of keys: 1..4096 of them, each a valid key, no key twice.
func keysOf(field string, raw [][]byte) ([]string, error) {
	if err := batchOf(field, len(raw)); err != nil {
		return nil, err
	}
	keys := make([]string, len(raw))
	for i, r := range raw {
		k, err := keyOf(r)
		if err != nil {
			return nil, within(field, i, err)
		}
		keys[i] = k
	}
	if err := store.ValidateDistinct(field, len(keys), func(i int) string { return keys[i] }); err != nil {
		return nil, err
	}
	return keys, nil
}

// preferredHostOf checks a writer's host (config.preferred_host): 0..1024 bytes (a segment
// endpoint's limit), no byte below 0x20; empty means none.
func preferredHostOf(h string) error {
	if len(h) > alloc.MaxEndpointLen {
		return badf("config.preferred_host", "length %d over %d", len(h), alloc.MaxEndpointLen)
	}
	for i := 0; i < len(h); i++ {
		if h[i] < 0x20 {
			return badf("config.preferred_host", "control byte 0x%02x at %d", h[i], i)
		}
	}
	return nil
}

// readKeysOf checks the keys of a BatchGet or BatchExist: 1..65,536 of them (store.MaxReadBatch),
// each a valid key, no key twice. A key's string shares its bytes with the request (no copy per
// key): the request's key bytes are never changed after decoding, and the read paths keep no key.
func readKeysOf(field string, raw [][]byte) ([]string, error) {
	if err := store.ValidateReadBatch(field, len(raw)); err != nil {
		return nil, err
	}
	keys := make([]string, len(raw))
	for i, r := range raw {
		k := unsafe.String(unsafe.SliceData(r), len(r))
		if err := store.ValidateKey(k); err != nil {
			return nil, within(field, i, err)
		}
		keys[i] = k
	}
	if err := store.ValidateDistinct(field, len(keys), func(i int) string { return keys[i] }); err != nil {
		return nil, err
	}
	return keys, nil
}

// tenantReadKeysOf is tenantKeysOf for a BatchGet or BatchExist (readKeysOf's limit and sharing).
func tenantReadKeysOf(rawTenant string, rawKeys [][]byte) (string, []string, error) {
	tenant, err := tenantOf(rawTenant)
	if err != nil {
		return "", nil, fail(err, rawTenant, nil)
	}
	keys, err := readKeysOf("keys", rawKeys)
	if err != nil {
		return "", nil, fail(err, tenant, nil)
	}
	return tenant, keys, nil
}

// tenantKeysOf checks the tenant and the keys of a batch removal; its error carries the tenant for
// the caller's answer.
func tenantKeysOf(rawTenant string, rawKeys [][]byte) (string, []string, error) {
	tenant, err := tenantOf(rawTenant)
	if err != nil {
		return "", nil, fail(err, rawTenant, nil)
	}
	keys, err := keysOf("keys", rawKeys)
	if err != nil {
		return "", nil, fail(err, tenant, nil)
	}
	return tenant, keys, nil
}

// groupOf checks a group id; empty means a singleton.
func groupOf(raw []byte) (string, error) {
	g := string(raw)
	return g, store.ValidateGroup(g)
}

// namedGroupOf checks a group id that must name an explicit group (RemoveGroup, ListGroup).
func namedGroupOf(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", badf("group", "must not be empty")
	}
	return groupOf(raw)
}

// batchOf checks the number of items of a batch.
func batchOf(field string, n int) error { return store.ValidateBatch(field, n) }

// tierOf checks the tier filter of a write's end: TIER_UNSPECIFIED (every tier) or a tier a put
// places (MEMORY, NOF, DISK, DFS).
func tierOf(field string, t metadv1.Tier) error {
	switch t {
	case metadv1.Tier_TIER_UNSPECIFIED, metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_NOF, metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS:
		return nil
	}
	return badf(field, "unknown tier %d", int32(t))
}

// configOf checks a replica config and returns it normalized as the log command carries it:
// memory_replicas >= 1 (0 means 1), the soft pin ttl resolved (0 with ENABLE means 30 min).
func configOf(c *metadv1.ReplicaConfig) (*metadv1.ReplicaConfig, error) {
	mem := c.GetMemoryReplicas()
	if mem == 0 {
		mem = 1
	}
	if mem > store.MaxMemReplicas {
		return nil, badf("config.memory_replicas", "%d not in 1..%d", mem, store.MaxMemReplicas)
	}
	if n := c.GetNofReplicas(); n > store.MaxNOFReplicas {
		return nil, badf("config.nof_replicas", "%d not in 0..%d", n, store.MaxNOFReplicas)
	}
	if n := c.GetDfsReplicas(); n > store.MaxDFSReplicas {
		return nil, badf("config.dfs_replicas", "%d not in 0..%d", n, store.MaxDFSReplicas)
	}
	seen := make(map[alloc.ID]struct{}, len(c.GetPreferredSegmentIds()))
	for i, raw := range c.GetPreferredSegmentIds() {
		id, err := segmentIDOf(fmt.Sprintf("config.preferred_segment_ids[%d]", i), raw)
		if err != nil {
			return nil, err
		}
		if _, dup := seen[id]; dup {
			return nil, badf(fmt.Sprintf("config.preferred_segment_ids[%d]", i),
				"segment %s named twice (at most one replica of an object per segment)", id)
		}
		seen[id] = struct{}{}
	}
	if err := preferredHostOf(c.GetPreferredHost()); err != nil {
		return nil, err
	}
	ttl := c.GetSoftPinTtlMs()
	switch c.GetSoftPin() {
	case metadv1.SoftPinAction_SOFT_PIN_ACTION_NONE, metadv1.SoftPinAction_SOFT_PIN_ACTION_DISABLE:
		if ttl != 0 {
			return nil, badf("config.soft_pin_ttl_ms", "%d set without soft_pin SOFT_PIN_ACTION_ENABLE", ttl)
		}
	case metadv1.SoftPinAction_SOFT_PIN_ACTION_ENABLE:
		if ttl > maxSoftPinTTLms {
			return nil, badf("config.soft_pin_ttl_ms", "%d not in (0, %d] (24 h)", ttl, maxSoftPinTTLms)
		}
		if ttl == 0 {
			ttl = uint64(store.DefaultSoftPin / time.Millisecond)
		}
	default:
		return nil, badf("config.soft_pin", "unknown action %d", int32(c.GetSoftPin()))
	}
	out := &metadv1.ReplicaConfig{
		MemoryReplicas:      mem,
		NofReplicas:         c.GetNofReplicas(),
		DfsReplicas:         c.GetDfsReplicas(),
		PreferredSegmentIds: c.GetPreferredSegmentIds(),
		SoftPin:             c.GetSoftPin(),
		SoftPinTtlMs:        ttl,
		HardPin:             c.GetHardPin(),
		DataType:            c.GetDataType(),
	}
	// The store's own check, as a backstop: it must agree with the checks above.
	rc := wire.ReplicaConfigFrom(out)
	if err := rc.Validate(); err != nil {
		return nil, badf("config", "%s", msgOf(err))
	}
	return out, nil
}

// sizeOf checks an object size.
func sizeOf(n uint64) error { return store.ValidateSize(n) }

// segmentOf checks a segment to mount (alloc.ValidateSegment, the one definition of the limits of
// SEMANTICS section 1) and returns it with its owner set to client.
func segmentOf(client alloc.ID, d *metadv1.SegmentDesc) (*metadv1.SegmentDesc, error) {
	if d == nil {
		return nil, badf("segment", "missing")
	}
	if _, err := segmentIDOf("segment.id", d.GetId()); err != nil {
		return nil, err
	}
	switch d.GetTier() {
	case metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_NOF, metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS:
	default:
		return nil, badf("segment.tier", "%s, want TIER_MEMORY, TIER_NOF, TIER_DISK or TIER_DFS (a local SSD is mounted with MountLocalDisk)", d.GetTier())
	}
	if d.GetOffload() {
		return nil, badf("segment.offload", "set on a %s segment; only a local disk takes offload tasks (MountLocalDisk)", d.GetTier())
	}
	out := &metadv1.SegmentDesc{Id: d.GetId(), Name: d.GetName(), Base: d.GetBase(), Size: d.GetSize(),
		Endpoint: d.GetEndpoint(), Tier: d.GetTier(), OwnerClientId: client[:]}
	if err := alloc.ValidateSegment(wire.SegmentFrom(out)); err != nil {
		return nil, &store.Error{Reason: store.InvalidParams, Msg: err.Error()}
	}
	return out, nil
}

// msgOf is an error's message without its reason prefix.
func msgOf(err error) string {
	var se *store.Error
	if errors.As(err, &se) {
		return se.Msg
	}
	return err.Error()
}

// localDiskOf checks a MountLocalDisk request's registration as alloc.ValidateSegment checks the
// segment it becomes: capacity 1..2^48 bytes, endpoint 1..1024 bytes with no byte below 0x20.
func localDiskOf(client alloc.ID, capacity uint64, endpoint string, offload bool) error {
	if capacity == 0 {
		return badf("capacity_bytes", "zero")
	}
	if capacity > alloc.MaxSegmentSize {
		return badf("capacity_bytes", "%d over %d (2^48)", capacity, alloc.MaxSegmentSize)
	}
	if err := alloc.ValidateSegment(alloc.LocalDisk(client, capacity, endpoint, offload)); err != nil {
		var se *alloc.SegmentError
		if errors.As(err, &se) && se.Field == "segment.endpoint" {
			return badf("endpoint", "%s", se.Why)
		}
		return &store.Error{Reason: store.InvalidParams, Msg: err.Error()}
	}
	return nil
}

// offloadResultsOf checks a NotifyOffload request's reports: 1..4096, each key valid, keys
// distinct, a success's size a valid object size.
func offloadResultsOf(raw []*metadv1.OffloadResult) error {
	if err := batchOf("results", len(raw)); err != nil {
		return err
	}
	for i, r := range raw {
		if _, err := keyOf(r.GetKey()); err != nil {
			return within("results", i, err)
		}
		if r.GetSuccess() {
			if err := store.ValidateSize(r.GetSize()); err != nil {
				return within("results", i, err)
			}
		}
	}
	return store.ValidateDistinct("results", len(raw), func(i int) string { return string(raw[i].GetKey()) })
}
