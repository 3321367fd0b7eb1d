package snapshot

import (
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"sync"

	metadv1 "metad/proto/metadv1"
)

// Info is what Inspect reports about a snapshot file.
type Info struct {
	FormatVersion uint32 `json:"format_version"` // the records' (SnapshotHeader.format_version)
	FileVersion   uint32 `json:"file_version"`   // the file's layout (FileVersionWhole, FileVersionChunked)
	Chunks        int64  `json:"chunks"`         // chunks, each checksummed (0 in FileVersionWhole)
	Index         uint64 `json:"index"`
	Term          uint64 `json:"term"`
	CreatedAt     int64  `json:"created_at_unix_nano"`
	Bytes         int64  `json:"bytes"`
	Checksum      string `json:"checksum"` // "ok" (Inspect fails otherwise)
	// StoreDigest is the header's store digest in hex ("" in a file of a binary before feature
	// level 5); every restore compares it with the state it builds.
	StoreDigest  string        `json:"store_digest"`
	Objects      uint64        `json:"objects"`
	Groups       uint64        `json:"groups"`
	Tenants      []TenantInfo  `json:"tenants"`
	Segments     []SegmentInfo `json:"segments"`
	Members      []MemberInfo  `json:"members"`
	Sessions     int           `json:"sessions"`      // client sessions (format version 2)
	Keys         int           `json:"keys"`          // API keys (format version 3)
	RoleBindings int           `json:"role_bindings"` // principals with roles (format version 3)
	AuthRevision uint64        `json:"auth_revision"` // (format version 3)
	Tasks        int           `json:"tasks"`         // scheduled tasks kept (format version 4)
	Drains       int           `json:"drains"`        // drain jobs kept (format version 4)
	Arenas       int           `json:"arenas"`        // allocation arenas (format version 5)
	Limits       int           `json:"limits"`        // rate limit records (format version 7)
}

// MemberInfo is one recorded cluster member of a snapshot.
type MemberInfo struct {
	Name       string `json:"name"`
	PeerAddr   string `json:"peer_address"`
	ClientAddr string `json:"client_address"`
}

// TenantInfo is one tenant of a snapshot.
type TenantInfo struct {
	Name        string `json:"name"`
	Instance    uint64 `json:"instance"`
	QuotaBytes  uint64 `json:"quota_bytes"`
	Objects     uint64 `json:"objects"`
	Groups      uint64 `json:"groups"`
	MemoryBytes uint64 `json:"memory_bytes"` // allocated bytes of MEMORY replicas
	NOFBytes    uint64 `json:"nof_bytes"`    // allocated bytes of NOF replicas
	DiskBytes   uint64 `json:"disk_bytes"`   // allocated bytes of LOCAL_DISK, DISK and DFS replicas
}

// SegmentInfo is one segment of a snapshot.
type SegmentInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Tier     string `json:"tier"`
	Size     uint64 `json:"size"`
	Used     uint64 `json:"used"`
	Endpoint string `json:"endpoint"`
	Owner    string `json:"owner"`
	// Closing: the segment takes no new allocation; UnmountAtUnixNano is when its graceful unmount
	// ends (leader time), 0 when none is scheduled. Both absent from a file of record format 1..3.
	Closing           bool  `json:"closing,omitempty"`
	UnmountAtUnixNano int64 `json:"unmount_at_unix_nano,omitempty"`
}

// Inspect reads a whole snapshot, verifies it (checksum included) and summarizes it. It needs only
// the file: no store, no cluster.
func Inspect(r io.Reader) (*Info, error) {
	sr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	h := sr.Header()
	info := &Info{StoreDigest: hex.EncodeToString(h.GetStoreDigest()), FormatVersion: h.FormatVersion, Index: h.Index, Term: h.Term, CreatedAt: h.CreatedAtUnixNano,
		AuthRevision: h.AuthRevision}
	var cur *TenantInfo
	groups := map[uint64]struct{}{}
	closeTenant := func() {
		if cur != nil {
			cur.Groups = uint64(len(groups))
			info.Groups += cur.Groups
			info.Tenants = append(info.Tenants, *cur)
		}
	}
	// Every record in file order; a chunked file's chunks decoded by one goroutine per processor,
	// the object records to what the summary needs of them (inspectObject).
	err = sr.EachDecoded(runtime.GOMAXPROCS(0), KindObject, inspectDecoder, func(rec *metadv1.Record, v any) error {
		if o, ok := v.(*objectSummary); ok {
			if cur == nil {
				return fmt.Errorf("snapshot: object before any tenant: %w", ErrCorrupt)
			}
			cur.Objects++
			info.Objects++
			if o.groupID != 0 {
				groups[o.groupID] = struct{}{}
			}
			for _, rep := range o.replicas {
				i := int(rep.segment) - 1
				if i < 0 || i >= len(info.Segments) {
					return fmt.Errorf("snapshot: tenant %q object %q: replica on segment #%d of %d: %w",
						cur.Name, o.key, i+1, len(info.Segments), ErrCorrupt)
				}
				info.Segments[i].Used += rep.size
				cur.addReplica(rep.tier, rep.size)
			}
			return nil
		}
		switch x := rec.Record.(type) {
		case *metadv1.Record_Segment:
			s := x.Segment.GetSegment()
			info.Segments = append(info.Segments, SegmentInfo{ID: uuidString(s.GetId()), Name: s.GetName(),
				Tier: tierName(s.GetTier()), Size: s.GetSize(), Endpoint: s.GetEndpoint(), Owner: uuidString(s.GetOwnerClientId()),
				Closing: x.Segment.GetClosing(), UnmountAtUnixNano: x.Segment.GetUnmountAtUnixNano()})
		case *metadv1.Record_Session:
			info.Sessions++
		case *metadv1.Record_Key:
			info.Keys++
		case *metadv1.Record_Role:
			info.RoleBindings++
		case *metadv1.Record_Limit:
			info.Limits++
		case *metadv1.Record_Task:
			info.Tasks++
		case *metadv1.Record_Drain:
			info.Drains++
		case *metadv1.Record_Arena:
			info.Arenas++
			// An arena's free bytes are used in its segment, as the cluster counts them.
			if i := int(x.Arena.GetSegmentIndex()) - 1; i >= 0 && i < len(info.Segments) {
				for _, sp := range x.Arena.GetFree() {
					info.Segments[i].Used += sp.GetSize()
				}
			}
		case *metadv1.Record_Member:
			m := x.Member
			info.Members = append(info.Members, MemberInfo{Name: m.GetName(), PeerAddr: m.GetPeerAddress(), ClientAddr: m.GetClientAddress()})
		case *metadv1.Record_Tenant:
			closeTenant()
			t := x.Tenant
			cur = &TenantInfo{Name: t.GetName(), Instance: t.GetInstanceId(), QuotaBytes: t.GetRequestedQuotaBytes()}
			groups = map[uint64]struct{}{}
		case *metadv1.Record_Object:
			o := x.Object
			if cur == nil {
				return fmt.Errorf("snapshot: object before any tenant: %w", ErrCorrupt)
			}
			cur.Objects++
			info.Objects++
			if o.GetGroupId() != 0 {
				groups[o.GetGroupId()] = struct{}{}
			}
			for _, rep := range o.GetReplicas() {
				size := ReplicaSize(o, rep)
				i := int(rep.GetSegmentIndex()) - 1
				if i < 0 || i >= len(info.Segments) {
					return fmt.Errorf("snapshot: tenant %q object %q: replica on segment #%d of %d: %w",
						cur.Name, o.GetKey(), i+1, len(info.Segments), ErrCorrupt)
				}
				info.Segments[i].Used += size
				cur.addReplica(rep.GetTier(), size)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	closeTenant()
	if info.Groups != h.Groups {
		return nil, fmt.Errorf("snapshot: header says %d groups, objects name %d: %w", h.Groups, info.Groups, ErrCorrupt)
	}
	info.Bytes = sr.BytesRead()
	info.FileVersion, info.Chunks = sr.FileVersion(), sr.Chunks()
	info.Checksum = "ok"
	return info, nil
}

// addReplica counts a replica of size bytes on tier in the tenant's bytes by tier.
func (t *TenantInfo) addReplica(tier metadv1.Tier, size uint64) {
	switch tier {
	case metadv1.Tier_TIER_NOF:
		t.NOFBytes += size
	case metadv1.Tier_TIER_LOCAL_DISK, metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS:
		t.DiskBytes += size
	default:
		t.MemoryBytes += size
	}
}

// objectSummary is what Inspect needs of an object record: its key (for an error; it aliases
// the record's encoding, which stays valid while Inspect's fn runs for it), its group, and per
// replica its segment's position, tier and allocated size.
type objectSummary struct {
	key      []byte
	groupID  uint64
	replicas []replicaSummary
	inline   [2]replicaSummary
}

type replicaSummary struct {
	segment uint32
	tier    metadv1.Tier
	size    uint64
}

// inspectDecoder is what Inspect decodes object records with: inspectObject; nil (protobuf
// messages) only in the test that holds the two equal.
var inspectDecoder Decoder = inspectObject

// inspectObject is Inspect's Decoder of object records (ParseObject).
func inspectObject(raw []byte) (any, bool, error) {
	f := inspectFields.Get().(*ObjectFields)
	defer func() {
		f.Reset()
		inspectFields.Put(f)
	}()
	if !ParseObject(raw, f) {
		return nil, false, nil
	}
	o := &objectSummary{key: f.Key, groupID: f.GroupID}
	o.replicas = o.inline[:0]
	for i := range f.Replicas {
		r := &f.Replicas[i]
		o.replicas = append(o.replicas, replicaSummary{segment: r.SegmentIndex, tier: r.Tier, size: f.ReplicaBytes(r)})
	}
	return o, true, nil
}

// inspectFields holds inspectObject's scratch records (it runs on several goroutines).
var inspectFields = sync.Pool{New: func() any { return new(ObjectFields) }}

// ReplicaSize is a replica record's allocated size: its size field, or when that is 0 (the common
// case, left out to save bytes) the object size rounded up to 64.
func ReplicaSize(o *metadv1.ObjectRecord, r *metadv1.ReplicaRecord) uint64 {
	return replicaBytes(r.GetSize(), o.GetSize())
}

// replicaBytes is a replica's allocated size from its recorded size and its object's size.
func replicaBytes(recorded, objectSize uint64) uint64 {
	if recorded != 0 {
		return recorded
	}
	return (objectSize + 63) &^ 63
}

func tierName(t metadv1.Tier) string {
	switch t {
	case metadv1.Tier_TIER_MEMORY:
		return "MEMORY"
	case metadv1.Tier_TIER_NOF:
		return "NOF"
	case metadv1.Tier_TIER_LOCAL_DISK:
		return "LOCAL_DISK"
	case metadv1.Tier_TIER_DISK:
		return "DISK"
	case metadv1.Tier_TIER_DFS:
		return "DFS"
	}
	return t.String()
}

func uuidString(b []byte) string {
	if len(b) != 16 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
