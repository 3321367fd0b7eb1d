package snapshot

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
)

// TestParseObjectKnowsEveryField: the fields ParseObject reads are every field of ObjectRecord,
// ReplicaRecord and ReplicaTaskRecord. A field added to one of them must be added to ParseObject
// (which would otherwise decline every record that sets it, and so be slow) and to the decoders
// built on it (wire.DecodeObjectRecord, whose parity test could not see the field otherwise).
func TestParseObjectKnowsEveryField(t *testing.T) {
	want := map[protoreflect.FullName][]protowire.Number{
		"metad.v1.ObjectRecord":      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 100},
		"metad.v1.ReplicaRecord":     {1, 2, 3, 4, 5, 6},
		"metad.v1.ReplicaTaskRecord": {1, 2, 3, 4, 5},
	}
	for _, m := range []proto.Message{&metadv1.ObjectRecord{}, &metadv1.ReplicaRecord{}, &metadv1.ReplicaTaskRecord{}} {
		d := m.ProtoReflect().Descriptor()
		var got []protowire.Number
		for i := range d.Fields().Len() {
			got = append(got, d.Fields().Get(i).Number())
		}
		slices.Sort(got)
		if !slices.Equal(got, want[d.FullName()]) {
			t.Errorf("%s has fields %v; ParseObject reads %v", d.FullName(), got, want[d.FullName()])
		}
	}
}

// TestInspectIsTheSameThroughProto: Inspect of a file with groups, several tiers, recorded
// replica sizes, a task and records the parser declines (an unknown field) summarizes it as
// Inspect through protobuf messages alone does.
func TestInspectIsTheSameThroughProto(t *testing.T) {
	var buf bytes.Buffer
	const n = 3*ChunkRecords + 11
	w, err := NewWriter(&buf, &metadv1.SnapshotHeader{FormatVersion: 8, Tenants: 2, Segments: 2, Objects: 2 * n, Groups: 2 * 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Segment{Segment: &metadv1.SegmentRecord{
			Segment: &metadv1.SegmentDesc{Id: bytes.Repeat([]byte{byte(i + 1)}, 16), Size: 1 << 40, Tier: metadv1.Tier(1 + 2*i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	tiers := []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_NOF, metadv1.Tier_TIER_LOCAL_DISK, metadv1.Tier_TIER_DFS}
	for tn := range 2 {
		if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Tenant{Tenant: &metadv1.TenantRecord{Name: fmt.Sprint("t", tn), InstanceId: uint64(tn + 1)}}}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			o := &metadv1.ObjectRecord{Key: fmt.Appendf(nil, "k%07d", i), Size: uint64(i*37 + 1), ObjectId: uint64(i + 1)}
			if i%5 == 0 {
				o.GroupId, o.Group = uint64(i%7+1), fmt.Appendf(nil, "g%d", i%7)
			}
			for r := range i % 3 {
				o.Replicas = append(o.Replicas, &metadv1.ReplicaRecord{ReplicaId: uint64(r + 1), SegmentIndex: uint32(1 + r%2),
					Tier: tiers[(i+r)%len(tiers)], Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE})
				if i%4 == 0 {
					o.Replicas[r].Size = 1 << 20
				}
			}
			if i%11 == 0 && len(o.Replicas) > 0 {
				o.Task = &metadv1.ReplicaTaskRecord{Kind: metadv1.TaskKind_TASK_KIND_COPY, SourceReplicaId: 1, TargetReplicaIds: []uint64{9}}
			}
			rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: o}}
			if i%13 == 0 { // a field this binary does not know: the parser declines it
				o.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 1))
			}
			if err := w.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fast, err := Inspect(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	inspectDecoder = nil
	slow, err := Inspect(bytes.NewReader(buf.Bytes()))
	inspectDecoder = inspectObject
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("Inspect %+v\nthrough proto %+v", fast, slow)
	}
	if fast.Objects != 2*n || fast.Tenants[0].NOFBytes == 0 || fast.Tenants[1].DiskBytes == 0 || fast.Tenants[0].MemoryBytes == 0 {
		t.Fatalf("Inspect: %+v", fast)
	}
}

// BenchmarkInspect1M: Inspect of a file of 1M objects (40-byte keys, one MEMORY replica each), and
// the same Inspect through protobuf messages alone, its baseline in the same run.
func BenchmarkInspect1M(b *testing.B) {
	var buf bytes.Buffer
	const n = 1_000_000
	w, err := NewWriter(&buf, &metadv1.SnapshotHeader{FormatVersion: 8, Tenants: 1, Segments: 1, Objects: n})
	if err != nil {
		b.Fatal(err)
	}
	recs := []*metadv1.Record{
		{Record: &metadv1.Record_Segment{Segment: &metadv1.SegmentRecord{Segment: &metadv1.SegmentDesc{Id: bytes.Repeat([]byte{1}, 16), Size: 1 << 40, Tier: metadv1.Tier_TIER_MEMORY}}}},
		{Record: &metadv1.Record_Tenant{Tenant: &metadv1.TenantRecord{Name: "t", InstanceId: 1}}},
	}
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			b.Fatal(err)
		}
	}
	o := &metadv1.ObjectRecord{Replicas: []*metadv1.ReplicaRecord{{SegmentIndex: 1, Tier: metadv1.Tier_TIER_MEMORY,
		Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE}}, WriterClientId: bytes.Repeat([]byte{2}, 16)}
	rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: o}}
	for i := range n {
		o.Key, o.ObjectId, o.Size, o.Replicas[0].ReplicaId = fmt.Appendf(o.Key[:0], "tenant-prefix/object-%020d", i), uint64(i+1), 4096, uint64(i+1)
		o.Replicas[0].Offset = uint64(i) * 4096
		if err := w.WriteRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	var fast, slow float64
	for b.Loop() {
		for _, dec := range []Decoder{inspectObject, nil} {
			inspectDecoder = dec
			start := time.Now()
			if _, err := Inspect(bytes.NewReader(buf.Bytes())); err != nil {
				b.Fatal(err)
			}
			if dec != nil {
				fast += time.Since(start).Seconds()
			} else {
				slow += time.Since(start).Seconds()
			}
		}
		inspectDecoder = inspectObject
	}
	b.ReportMetric(fast*1e3/float64(b.N), "inspect-ms")
	b.ReportMetric(slow*1e3/float64(b.N), "inspect-proto-ms")
	b.ReportMetric(fast/slow, "inspect-vs-proto")
}
