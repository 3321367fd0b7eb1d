package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/store/alloc"
)

// TestAppendRecordIsProtoMarshal: for any object state (replicas of every tier and status, with
// and without a recorded size, a task with and without targets), AppendRecord appends the bytes a
// deterministic proto.Marshal of the record Encode fills gives, after whatever buf held. Objects
// of explicit groups are covered by the golden snapshot files, whose bytes the writer must
// reproduce.
func TestAppendRecordIsProtoMarshal(t *testing.T) {
	segs := []alloc.ID{{1}, {2}, {3}}
	enc := &RecordEncoder{SegIndex: map[alloc.ID]uint32{segs[0]: 1, segs[1]: 2, segs[2]: 300}}
	rapid.Check(t, func(t *rapid.T) {
		big := rapid.Uint64()
		st := &store.ObjectState{ID: big.Draw(t, "id"), Version: big.Draw(t, "version"), Size: rapid.Uint64Range(0, 1<<40).Draw(t, "size"),
			PutStart: rapid.Int64().Draw(t, "putStart"), SoftPinTTL: rapid.Int64Range(0, 1<<50).Draw(t, "ttl"),
			SoftPinDeadline: rapid.Int64().Draw(t, "deadline"), DataType: rapid.Uint32().Draw(t, "dataType"), HardPin: rapid.Bool().Draw(t, "hardPin")}
		if rapid.Bool().Draw(t, "writer") {
			st.Writer = alloc.ID{byte(rapid.IntRange(0, 255).Draw(t, "w")), 7}
		}
		for range rapid.IntRange(0, 4).Draw(t, "replicas") {
			size := alloc.RoundUp(st.Size)
			if rapid.Bool().Draw(t, "odd") {
				size = big.Draw(t, "rsize")
			}
			st.Replicas = append(st.Replicas, store.Replica{ID: big.Draw(t, "rid"),
				Extent: alloc.Extent{Segment: rapid.SampledFrom(segs).Draw(t, "seg"), Offset: big.Draw(t, "offset"), Size: size},
				Tier:   alloc.Tier(rapid.IntRange(0, 6).Draw(t, "tier")), Status: store.ReplicaStatus(rapid.IntRange(0, 4).Draw(t, "status"))})
		}
		if rapid.Bool().Draw(t, "task") {
			st.Task = &store.ReplicaTask{Kind: store.TaskKind(rapid.IntRange(0, 4).Draw(t, "kind")), Started: rapid.Int64().Draw(t, "started"),
				Source: big.Draw(t, "source"), Targets: rapid.SliceOfN(big, 0, 3).Draw(t, "targets")}
			if rapid.Bool().Draw(t, "client") {
				st.Task.Client = alloc.ID{9}
			}
		}
		o := &store.CapturedObject{Key: rapid.StringN(0, 40, 300).Draw(t, "key"), State: st}
		rec, err := enc.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&metadv1.Record{Record: &metadv1.Record_Object{Object: rec}})
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte("before")
		got, err := enc.AppendRecord(bytes.Clone(prefix), o)
		if err != nil || !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("AppendRecord: %v\n got %x\nwant %s%x", err, got, prefix, want)
		}
	})
}

// TestAppendObjectFieldsIsProtoMarshal: for any object record, in the writer's encoding or with its
// fields in another order, ParseObject then AppendObjectFields gives the bytes of a deterministic
// proto.Marshal of what proto.Unmarshal reads from that encoding.
func TestAppendObjectFieldsIsProtoMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: drawObjectRecord(t)}}
		opts := proto.MarshalOptions{Deterministic: true}
		want, err := opts.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b := want
		if rapid.Bool().Draw(t, "reorder") {
			b = reorderFields(t, want)
			got := &metadv1.Record{}
			if err := proto.Unmarshal(b, got); err != nil || !proto.Equal(got, rec) {
				t.Fatalf("the reordered encoding reads as %v (%v)", got, err)
			}
		}
		var f snapshot.ObjectFields
		if !snapshot.ParseObject(b, &f) {
			t.Fatalf("ParseObject declined %x", b)
		}
		if got := AppendObjectFields([]byte("x"), &f); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendObjectFields\n got %x\nwant x%x", got, want)
		}
	})
}

// reorderFields returns b, a Record holding an object, with the object's top-level fields in a
// drawn order (repeated replicas keep theirs among themselves: their order is their meaning).
func reorderFields(t *rapid.T, b []byte) []byte {
	_, _, n := protowire.ConsumeTag(b)
	body, _ := protowire.ConsumeBytes(b[n:])
	var fields [][]byte
	var replicas []byte
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		m := protowire.ConsumeFieldValue(num, typ, body[n:])
		if num == 7 {
			replicas = append(replicas, body[:n+m]...)
		} else {
			fields = append(fields, body[:n+m])
		}
		body = body[n+m:]
	}
	if len(replicas) > 0 {
		fields = append(fields, replicas)
	}
	perm := rapid.Permutation(fields).Draw(t, "order")
	var out []byte
	for _, f := range perm {
		out = append(out, f...)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), out)
}
