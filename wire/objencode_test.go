package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	metadv1 "metad/proto/metadv1"
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
