package snapshot

import (
	"google.golang.org/protobuf/encoding/protowire"

	metadv1 "metad/proto/metadv1"
)

// ObjectFields is an object record as ParseObject reads it from its encoding, without a protobuf
// message: what proto.Unmarshal would put in a metadv1.ObjectRecord, its bytes fields aliasing the
// encoding. A restore reads a million of these; one ObjectFields is reused for each.
type ObjectFields struct {
	Key, Writer, Group      []byte
	ObjectID, Version, Size uint64
	Charged, GroupID        uint64
	SoftPinTTLMs            uint64
	PutStart                int64
	SoftPinDeadline         int64
	DataType                uint32
	HardPin                 bool
	Replicas                []ReplicaFields
	HasTask                 bool
	Task                    TaskFields
}

// ReplicaFields is a metadv1.ReplicaRecord's fields.
type ReplicaFields struct {
	ID           uint64
	SegmentIndex uint32
	Offset       uint64
	Status       metadv1.ReplicaStatus
	Tier         metadv1.Tier
	Size         uint64
}

// TaskFields is a metadv1.ReplicaTaskRecord's fields.
type TaskFields struct {
	Kind    metadv1.TaskKind
	Client  []byte
	Started int64
	Source  uint64
	Targets []uint64
}

// Reset empties f, keeping the storage of its slices and dropping its references into an
// encoding (so that a kept ObjectFields does not keep a chunk alive).
func (f *ObjectFields) Reset() {
	*f = ObjectFields{Replicas: f.Replicas[:0], Task: TaskFields{Targets: f.Task.Targets[:0]}}
}

// ReplicaBytes is the replica's allocated size: its recorded size, or when that is 0 (the common
// case, left out to save bytes) the object size rounded up to 64 (as ReplicaSize).
func (f *ObjectFields) ReplicaBytes(r *ReplicaFields) uint64 { return replicaBytes(r.Size, f.Size) }

// ParseObject reads b, the encoding of a metadv1.Record that holds an ObjectRecord, into f
// (reusing f's slices). It takes the encoding this package's writer makes: every field at most
// once and of its declared wire type, target ids packed, no unknown field. For any other it
// returns false, f undefined, and the caller decodes b with proto, which accepts or refuses it;
// for those it takes, proto would read the same fields (a parity test holds them equal).
func ParseObject(b []byte, f *ObjectFields) bool {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != KindObject || typ != protowire.BytesType {
		return false
	}
	body, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return false
	}
	f.Reset()
	var seen uint32 // fields 1..14 seen, by bit
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 {
			return false
		}
		body = body[n:]
		if num >= 1 && num <= 14 {
			if num != 7 && seen&(1<<num) != 0 {
				return false
			}
			seen |= 1 << num
		}
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 5 || num == 7 || num == 9 || num == 100):
			v, n := protowire.ConsumeBytes(body)
			if n < 0 {
				return false
			}
			body = body[n:]
			switch num {
			case 1:
				f.Key = v
			case 5:
				f.Writer = v
			case 9:
				f.Group = v
			case 7:
				r, ok := parseReplica(v)
				if !ok {
					return false
				}
				f.Replicas = append(f.Replicas, r)
			case 100:
				if f.HasTask || !parseTask(v, &f.Task) {
					return false
				}
				f.HasTask = true
			}
		case typ == protowire.VarintType && (num >= 2 && num <= 4 || num == 8 || num >= 10 && num <= 13):
			v, n := protowire.ConsumeVarint(body)
			if n < 0 {
				return false
			}
			body = body[n:]
			switch num {
			case 2:
				f.ObjectID = v
			case 3:
				f.Version = v
			case 4:
				f.Size = v
			case 8:
				f.Charged = v
			case 10:
				f.GroupID = v
			case 11:
				f.DataType = uint32(v)
			case 12:
				f.HardPin = v != 0
			case 13:
				f.SoftPinTTLMs = v
			}
		case typ == protowire.Fixed64Type && (num == 6 || num == 14):
			v, n := protowire.ConsumeFixed64(body)
			if n < 0 {
				return false
			}
			body = body[n:]
			if num == 6 {
				f.PutStart = int64(v)
			} else {
				f.SoftPinDeadline = int64(v)
			}
		default:
			return false
		}
	}
	return true
}

// parseReplica reads a ReplicaRecord's encoding (every field a varint).
func parseReplica(b []byte) (r ReplicaFields, ok bool) {
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType || num < 1 || num > 6 || seen&(1<<num) != 0 {
			return r, false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return r, false
		}
		b = b[n+m:]
		switch num {
		case 1:
			r.ID = v
		case 2:
			r.SegmentIndex = uint32(v)
		case 3:
			r.Offset = v
		case 4:
			r.Status = metadv1.ReplicaStatus(int32(v))
		case 5:
			r.Tier = metadv1.Tier(int32(v))
		case 6:
			r.Size = v
		}
	}
	return r, true
}

// parseTask reads a ReplicaTaskRecord's encoding into t (its Targets reused).
func parseTask(b []byte, t *TaskFields) bool {
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 5 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			t.Client, b = v, b[m:]
		case num == 3 && typ == protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				return false
			}
			t.Started, b = int64(v), b[m:]
		case (num == 1 || num == 4) && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			if num == 1 {
				t.Kind = metadv1.TaskKind(int32(v))
			} else {
				t.Source = v
			}
			b = b[m:]
		case num == 5 && typ == protowire.BytesType: // packed
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			b = b[m:]
			for len(v) > 0 {
				id, k := protowire.ConsumeVarint(v)
				if k < 0 {
					return false
				}
				t.Targets, v = append(t.Targets, id), v[k:]
			}
		default:
			return false
		}
	}
	return true
}
