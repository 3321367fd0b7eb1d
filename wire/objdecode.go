package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// DecodedObject is a snapshot's object record decoded straight from its encoding
// (DecodeObjectRecord), without the protobuf message: what ObjectFrom returns, but for the
// replicas' segments, which the record names by position among the file's segment records and
// Resolve fills in once those are known (a decoder ahead of the file's reader may not know them).
type DecodedObject struct {
	Key, Group string
	GroupID    uint64
	State      *store.ObjectState
	segIdx     []uint32 // each replica's segment position, 1-based
	inline     [2]uint32
}

// Resolve sets each replica's segment from segs (the file's segment ids by position), as
// ObjectFrom does, and fails as it does on a position with no segment.
func (d *DecodedObject) Resolve(segs []alloc.ID) error {
	for i, p := range d.segIdx {
		idx := int(p) - 1
		if idx < 0 || idx >= len(segs) {
			return fmt.Errorf("object %q: replica on segment #%d of %d", d.Key, idx+1, len(segs))
		}
		d.State.Replicas[i].Extent.Segment = segs[idx]
	}
	return nil
}

// DecodeObjectRecord decodes b, the encoding of a metadv1.Record that holds an ObjectRecord,
// into the object as proto.Unmarshal and ObjectFrom would (then Resolve). It takes the encoding
// this package's snapshot writer makes: every field at most once and of its declared wire type,
// target ids packed, no unknown field. For any other (ok false, nothing decoded) the caller
// decodes b with proto, which gives the same object or its error; a parity test holds the two
// equal. An error is ObjectFrom's verdict on a well-formed record.
func DecodeObjectRecord(b []byte) (d *DecodedObject, ok bool, err error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 3 || typ != protowire.BytesType {
		return nil, false, nil
	}
	body, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return nil, false, nil
	}
	d = &DecodedObject{State: &store.ObjectState{}}
	st := d.State
	var seen uint32 // fields 1..14 seen, by bit
	var charged uint64
	var sizes []uint64 // each replica's recorded size (0: the rounded object size)
	var sizesInline [2]uint64
	sizes, d.segIdx = sizesInline[:0], d.inline[:0]
	var task *store.ReplicaTask
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 {
			return nil, false, nil
		}
		body = body[n:]
		if num >= 1 && num <= 14 {
			if num != 7 && seen&(1<<num) != 0 {
				return nil, false, nil
			}
			seen |= 1 << num
		}
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 5 || num == 9 || num == 7 || num == 100):
			v, n := protowire.ConsumeBytes(body)
			if n < 0 {
				return nil, false, nil
			}
			body = body[n:]
			switch num {
			case 1:
				d.Key = string(v)
			case 5:
				st.Writer = ID16(v)
			case 9:
				d.Group = string(v)
			case 7:
				idx, size, ok := decodeReplica(v, st)
				if !ok {
					return nil, false, nil
				}
				d.segIdx, sizes = append(d.segIdx, idx), append(sizes, size)
			case 100:
				if task != nil {
					return nil, false, nil
				}
				if task, ok = decodeTask(v); !ok {
					return nil, false, nil
				}
			}
		case typ == protowire.VarintType && (num >= 2 && num <= 4 || num >= 10 && num <= 13 || num == 8):
			v, n := protowire.ConsumeVarint(body)
			if n < 0 {
				return nil, false, nil
			}
			body = body[n:]
			switch num {
			case 2:
				st.ID = v
			case 3:
				st.Version = v
			case 4:
				st.Size = v
			case 8:
				charged = v
			case 10:
				d.GroupID = v
			case 11:
				st.DataType = uint32(v)
			case 12:
				st.HardPin = v != 0
			case 13:
				st.SoftPinTTL = int64(min(v, 1<<40)) * int64(time.Millisecond)
			}
		case typ == protowire.Fixed64Type && (num == 6 || num == 14):
			v, n := protowire.ConsumeFixed64(body)
			if n < 0 {
				return nil, false, nil
			}
			body = body[n:]
			if num == 6 {
				st.PutStart = int64(v)
			} else {
				st.SoftPinDeadline = int64(v)
			}
		default:
			return nil, false, nil
		}
	}
	rounded := alloc.RoundUp(st.Size)
	for i := range st.Replicas {
		if sizes[i] == 0 {
			st.Replicas[i].Extent.Size = rounded
		} else {
			st.Replicas[i].Extent.Size = sizes[i]
		}
	}
	if len(st.Replicas) == 0 {
		st.Replicas = []store.Replica{}
	}
	st.Task = task
	if st.MemoryBytes() != charged && charged != 0 {
		return nil, true, fmt.Errorf("object %q: charged %d bytes, replicas hold %d", d.Key, charged, st.MemoryBytes())
	}
	return d, true, nil
}

// decodeReplica appends the ReplicaRecord b encodes to st's replicas (segment and size left
// for the caller) and returns its segment position and recorded size.
func decodeReplica(b []byte, st *store.ObjectState) (segIdx uint32, size uint64, ok bool) {
	var r store.Replica
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType || num < 1 || num > 6 || seen&(1<<num) != 0 {
			return 0, 0, false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return 0, 0, false
		}
		b = b[n+m:]
		switch num {
		case 1:
			r.ID = v
		case 2:
			segIdx = uint32(v)
		case 3:
			r.Extent.Offset = v
		case 4:
			r.Status = StatusFrom(metadv1.ReplicaStatus(int32(v)))
		case 5:
			r.Tier = TierFrom(metadv1.Tier(int32(v)))
		case 6:
			size = v
		}
	}
	if seen&(1<<4) == 0 {
		r.Status = StatusFrom(0)
	}
	if seen&(1<<5) == 0 {
		r.Tier = TierFrom(0)
	}
	st.Replicas = append(st.Replicas, r)
	return segIdx, size, true
}

// decodeTask decodes a ReplicaTaskRecord.
func decodeTask(b []byte) (*store.ReplicaTask, bool) {
	var kind metadv1.TaskKind
	t := &store.ReplicaTask{}
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 5 || seen&(1<<num) != 0 {
			return nil, false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			t.Client, b = ID16(v), b[m:]
		case num == 3 && typ == protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				return nil, false
			}
			t.Started, b = int64(v), b[m:]
		case (num == 1 || num == 4) && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, false
			}
			if num == 1 {
				kind = metadv1.TaskKind(int32(v))
			} else {
				t.Source = v
			}
			b = b[m:]
		case num == 5 && typ == protowire.BytesType: // packed
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			b = b[m:]
			for len(v) > 0 {
				id, k := protowire.ConsumeVarint(v)
				if k < 0 {
					return nil, false
				}
				t.Targets, v = append(t.Targets, id), v[k:]
			}
		default:
			return nil, false
		}
	}
	t.Kind = TaskKindFrom(kind)
	return t, true
}
