package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
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
	start := len(buf)
	buf, obj := beginMessage(buf, 3) // Record.object
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
		var r int
		buf, r = beginMessage(buf, 7)
		buf = appendVarint(buf, 1, rep.ID)
		buf = appendVarint(buf, 2, uint64(idx))
		buf = appendVarint(buf, 3, rep.Extent.Offset)
		buf = appendVarint(buf, 4, enumValue(int32(StatusTo(rep.Status))))
		buf = appendVarint(buf, 5, enumValue(int32(TierTo(rep.Tier))))
		buf = appendVarint(buf, 6, size)
		buf = endMessage(buf, r)
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
		buf = appendTask(buf, TaskKindTo(t.Kind), t.Client[:], t.Started, t.Source, t.Targets)
	}
	return endMessage(buf, obj), nil
}

// AppendObjectFields appends to buf the encoding of the record f holds (as snapshot.ParseObject
// read it): the bytes a deterministic proto.Marshal gives of the metadv1.Record that proto.Unmarshal
// reads from any encoding ParseObject takes, which a parity test holds equal. So it puts a record
// in the one form proto writes, without building the message.
func AppendObjectFields(buf []byte, f *snapshot.ObjectFields) []byte {
	buf, obj := beginMessage(buf, 3) // Record.object
	buf = appendRaw(buf, 1, f.Key)
	buf = appendVarint(buf, 2, f.ObjectID)
	buf = appendVarint(buf, 3, f.Version)
	buf = appendVarint(buf, 4, f.Size)
	buf = appendRaw(buf, 5, f.Writer)
	buf = appendFixed(buf, 6, f.PutStart)
	for i := range f.Replicas {
		rep := &f.Replicas[i]
		var r int
		buf, r = beginMessage(buf, 7)
		buf = appendVarint(buf, 1, rep.ID)
		buf = appendVarint(buf, 2, uint64(rep.SegmentIndex))
		buf = appendVarint(buf, 3, rep.Offset)
		buf = appendVarint(buf, 4, enumValue(int32(rep.Status)))
		buf = appendVarint(buf, 5, enumValue(int32(rep.Tier)))
		buf = appendVarint(buf, 6, rep.Size)
		buf = endMessage(buf, r)
	}
	buf = appendVarint(buf, 8, f.Charged)
	buf = appendRaw(buf, 9, f.Group)
	buf = appendVarint(buf, 10, f.GroupID)
	buf = appendVarint(buf, 11, uint64(f.DataType))
	if f.HardPin {
		buf = appendVarint(buf, 12, 1)
	}
	buf = appendVarint(buf, 13, f.SoftPinTTLMs)
	buf = appendFixed(buf, 14, f.SoftPinDeadline)
	if t := &f.Task; f.HasTask {
		buf = appendTask(buf, t.Kind, t.Client, t.Started, t.Source, t.Targets)
	}
	return endMessage(buf, obj)
}

// appendTask appends an ObjectRecord's task field (a ReplicaTaskRecord, field 100).
func appendTask(buf []byte, kind metadv1.TaskKind, client []byte, started int64, source uint64, targets []uint64) []byte {
	buf, task := beginMessage(buf, 100)
	buf = appendVarint(buf, 1, enumValue(int32(kind)))
	buf = appendRaw(buf, 2, client)
	buf = appendFixed(buf, 3, started)
	buf = appendVarint(buf, 4, source)
	if len(targets) > 0 { // packed
		var ids int
		buf, ids = beginMessage(buf, 5)
		for _, id := range targets {
			buf = protowire.AppendVarint(buf, id)
		}
		buf = endMessage(buf, ids)
	}
	return endMessage(buf, task)
}

// beginMessage appends the tag of field num (length-delimited) and room for the longest length,
// and returns where the length goes; endMessage writes there the length of what was appended
// since and moves those bytes up against it. Each field is thus written once, with no size pass.
func beginMessage(buf []byte, num protowire.Number) ([]byte, int) {
	buf = protowire.AppendTag(buf, num, protowire.BytesType)
	at := len(buf)
	return append(buf, make([]byte, binaryMaxVarint)...), at
}

// endMessage ends the field beginMessage began at at.
func endMessage(buf []byte, at int) []byte {
	body := at + binaryMaxVarint
	var head [binaryMaxVarint]byte
	n := copy(buf[at:], protowire.AppendVarint(head[:0], uint64(len(buf)-body)))
	return append(buf[:at+n], buf[body:]...)
}

// binaryMaxVarint is the longest varint (a length's room in beginMessage).
const binaryMaxVarint = 10

// enumValue is an enum's encoding: a negative value takes ten bytes, as proto writes it.
func enumValue(v int32) uint64 { return uint64(int64(v)) }

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

func appendRaw(buf []byte, num protowire.Number, b []byte) []byte {
	if len(b) == 0 {
		return buf
	}
	return protowire.AppendBytes(protowire.AppendTag(buf, num, protowire.BytesType), b)
}
