package wire

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// protoObject decodes b the reference way: proto.Unmarshal, then ObjectFrom.
func protoObject(b []byte, segs []alloc.ID) (key, group string, gid uint64, st *store.ObjectState, err error) {
	rec := &metadv1.Record{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return "", "", 0, nil, err
	}
	o := rec.GetObject()
	st, err = ObjectFrom(o, segs)
	return string(o.GetKey()), string(o.GetGroup()), o.GetGroupId(), st, err
}

// sameState compares two decoded states, an empty target list equal to none.
func sameState(a, b *store.ObjectState) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	if x.Task != nil && y.Task != nil {
		tx, ty := *x.Task, *y.Task
		if len(tx.Targets) == 0 && len(ty.Targets) == 0 {
			tx.Targets, ty.Targets = nil, nil
		}
		x.Task, y.Task = &tx, &ty
	}
	return reflect.DeepEqual(x, y)
}

func drawObjectRecord(t *rapid.T) *metadv1.ObjectRecord {
	small := rapid.Uint64Range(0, 3)
	big := rapid.Uint64()
	r := &metadv1.ObjectRecord{
		Key: rapid.SliceOfN(rapid.Byte(), 0, 50).Draw(t, "key"), ObjectId: big.Draw(t, "id"), Version: big.Draw(t, "version"),
		Size: rapid.Uint64Range(0, 1<<40).Draw(t, "size"), WriterClientId: rapid.SliceOfN(rapid.Byte(), 0, 17).Draw(t, "writer"),
		PutStartUnixNano: rapid.Int64().Draw(t, "putStart"), GroupId: small.Draw(t, "gid"),
		DataType: rapid.Uint32().Draw(t, "dataType"), HardPin: rapid.Bool().Draw(t, "hardPin"),
		SoftPinTtlMs: big.Draw(t, "ttl"), SoftPinDeadlineUnixNano: rapid.Int64().Draw(t, "deadline"),
	}
	if rapid.Bool().Draw(t, "grouped") {
		r.Group = rapid.SliceOfN(rapid.Byte(), 1, 20).Draw(t, "group")
	}
	for i := range rapid.IntRange(0, 4).Draw(t, "replicas") {
		_ = i
		r.Replicas = append(r.Replicas, &metadv1.ReplicaRecord{ReplicaId: big.Draw(t, "rid"), SegmentIndex: uint32(small.Draw(t, "seg")),
			Offset: big.Draw(t, "offset"), Status: metadv1.ReplicaStatus(rapid.Int32Range(-1, 5).Draw(t, "status")),
			Tier: metadv1.Tier(rapid.Int32Range(-1, 7).Draw(t, "tier")), Size: rapid.SampledFrom([]uint64{0, 4096, 1 << 33}).Draw(t, "rsize")})
	}
	if rapid.Bool().Draw(t, "charged") {
		r.ChargedBytes = rapid.SampledFrom([]uint64{r.GetSize() * uint64(len(r.Replicas)), 1}).Draw(t, "chargedBytes")
	}
	if rapid.Bool().Draw(t, "task") {
		r.Task = &metadv1.ReplicaTaskRecord{Kind: metadv1.TaskKind(rapid.Int32Range(-1, 4).Draw(t, "kind")),
			ClientId: rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "client"), StartedUnixNano: rapid.Int64().Draw(t, "started"),
			SourceReplicaId: big.Draw(t, "source"), TargetReplicaIds: rapid.SliceOfN(big, 0, 3).Draw(t, "targets")}
	}
	return r
}

// TestDecodeObjectRecordMatchesProto: for any object record, and for its encoding with bytes
// changed, appended or cut, DecodeObjectRecord either declines (ok false) or gives what
// proto.Unmarshal and ObjectFrom give: the same key, group and state, or an error where they err.
// The writer's own encodings are never declined.
func TestDecodeObjectRecordMatchesProto(t *testing.T) {
	segs := []alloc.ID{{1}, {2}}
	rapid.Check(t, func(t *rapid.T) {
		rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: drawObjectRecord(t)}}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		canonical := true
		switch rapid.IntRange(0, 3).Draw(t, "damage") {
		case 1:
			if len(b) > 0 {
				b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] ^= rapid.ByteRange(1, 255).Draw(t, "xor")
				canonical = false
			}
		case 2:
			b = append(b, rapid.SliceOfN(rapid.Byte(), 1, 6).Draw(t, "tail")...)
			canonical = false
		case 3:
			b = b[:rapid.IntRange(0, len(b)).Draw(t, "cut")]
			canonical = false
		}
		d, ok, derr := DecodeObjectRecord(b)
		if !ok {
			if canonical {
				t.Fatalf("declined the writer's encoding %x", b)
			}
			return
		}
		key, group, gid, st, perr := protoObject(b, segs)
		if derr == nil {
			derr = d.Resolve(segs)
		}
		if (derr != nil) != (perr != nil) {
			t.Fatalf("hand decoder error %v, proto %v (record %x)", derr, perr, b)
		}
		if derr != nil {
			return
		}
		if d.Key != key || d.Group != group || d.GroupID != gid || !sameState(d.State, st) {
			t.Fatalf("hand decoder %q %q %d %+v (task %+v), proto %q %q %d %+v (task %+v)", d.Key, d.Group, d.GroupID, d.State, d.State.Task,
				key, group, gid, st, st.Task)
		}
	})
}
