package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"metad/store"
	"metad/store/alloc"
)

// AppendRecord appends to buf the encoding of the snapshot record of o (a metadv1.Record holding
// Encode's ObjectRecord) without building the message: the bytes a deterministic proto.Marshal of
// it gives (fields in number order, zero values left out), which a parity test and the golden
// snapshot files hold equal.
func (x *RecordEncoder) AppendRecord(buf []byte, o *store.CapturedObject) ([]byte, error) {
	st := o.State
	group, gid := o.Group()
	// The object's fields go after room for the record's tag and length, filled in at the end.
	const room = 1 + binaryMaxVarint
	start := len(buf)
	buf = append(buf, make([]byte, room)...)
	body := len(buf)
	buf = appendBytes(buf, 1, o.Key)
	buf = appendVarint(buf, 2, st.ID)
	buf = appendVarint(buf, 3, st.Version)
	buf = appendVarint(buf, 4, st.Size)
	buf = protowire.AppendTag(buf, 5, protowire.BytesType)
	buf = protowire.AppendBytes(buf, st.Writer[:])
	buf = appendFixed(buf, 6, st.PutStart)
	rounded := alloc.RoundUp(st.Size)
	for i := range st.Replicas {
		rep := &st.Replicas[i]
		idx, ok := x.SegIndex[rep.Extent.Segment]
		if !ok {
			return buf[:start], fmt.Errorf("object %q: replica %d on segment %s that is not mounted", o.Key, rep.ID, rep.Extent.Segment)
		}
		size := uint64(0)
		if rep.Extent.Size != rounded {
			size = rep.Extent.Size
		}
		n := varintField(1, rep.ID) + varintField(2, uint64(idx)) + varintField(3, rep.Extent.Offset) +
			varintField(4, enumValue(int32(StatusTo(rep.Status)))) + varintField(5, enumValue(int32(TierTo(rep.Tier)))) + varintField(6, size)
		buf = protowire.AppendTag(buf, 7, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(n))
		buf = appendVarint(buf, 1, rep.ID)
		buf = appendVarint(buf, 2, uint64(idx))
		buf = appendVarint(buf, 3, rep.Extent.Offset)
		buf = appendVarint(buf, 4, enumValue(int32(StatusTo(rep.Status))))
		buf = appendVarint(buf, 5, enumValue(int32(TierTo(rep.Tier))))
		buf = appendVarint(buf, 6, size)
	}
	if group != "" {
		buf = appendBytes(buf, 9, group)
	}
	buf = appendVarint(buf, 10, gid)
	buf = appendVarint(buf, 11, uint64(st.DataType))
	if st.HardPin {
		buf = appendVarint(buf, 12, 1)
	}
	buf = appendVarint(buf, 13, uint64(st.SoftPinTTL/int64(time.Millisecond)))
	buf = appendFixed(buf, 14, st.SoftPinDeadline)
	if t := st.Task; t != nil {
		packed := 0
		for _, id := range t.Targets {
			packed += protowire.SizeVarint(id)
		}
		n := varintField(1, enumValue(int32(TaskKindTo(t.Kind)))) + 1 + 1 + len(t.Client) + fixedField(t.Started) + varintField(4, t.Source)
		if packed > 0 {
			n += 1 + protowire.SizeVarint(uint64(packed)) + packed
		}
		buf = protowire.AppendTag(buf, 100, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(n))
		buf = appendVarint(buf, 1, enumValue(int32(TaskKindTo(t.Kind))))
		buf = protowire.AppendTag(buf, 2, protowire.BytesType)
		buf = protowire.AppendBytes(buf, t.Client[:])
		buf = appendFixed(buf, 3, t.Started)
		buf = appendVarint(buf, 4, t.Source)
		if packed > 0 {
			buf = protowire.AppendTag(buf, 5, protowire.BytesType)
			buf = protowire.AppendVarint(buf, uint64(packed))
			for _, id := range t.Targets {
				buf = protowire.AppendVarint(buf, id)
			}
		}
	}
	// The record's tag (field 3, bytes) and the object's length, moved up against the object.
	var head [room]byte
	h := protowire.AppendVarint(protowire.AppendTag(head[:0], 3, protowire.BytesType), uint64(len(buf)-body))
	copy(buf[body-len(h):], h)
	return append(buf[:start], buf[body-len(h):]...), nil
}

const binaryMaxVarint = 10

// enumValue is an enum's encoding: a negative value takes ten bytes, as proto writes it.
func enumValue(v int32) uint64 { return uint64(int64(v)) }

// varintField is the size of a varint field of number num < 16 and value v, 0 for a zero value.
func varintField(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

// fixedField is the size of a sfixed64 field of number < 16, 0 for a zero value.
func fixedField(v int64) int {
	if v == 0 {
		return 0
	}
	return 9
}

func appendVarint(buf []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return buf
	}
	return protowire.AppendVarint(protowire.AppendTag(buf, num, protowire.VarintType), v)
}

func appendFixed(buf []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return buf
	}
	return protowire.AppendFixed64(protowire.AppendTag(buf, num, protowire.Fixed64Type), uint64(v))
}

func appendBytes(buf []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return buf
	}
	return protowire.AppendString(protowire.AppendTag(buf, num, protowire.BytesType), s)
}
