package snapshot

import (
	"bytes"
	"errors"
	"io"
	"testing"

	metadv1 "metad/proto/metadv1"
)

func sample(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	seg := []byte("0123456789abcdef")
	w, err := NewWriter(&buf, &metadv1.SnapshotHeader{FormatVersion: 1, Index: 9, Term: 2, Tenants: 1, Segments: 1, Objects: 2, Groups: 1})
	if err != nil {
		t.Fatal(err)
	}
	recs := []*metadv1.Record{
		{Record: &metadv1.Record_Segment{Segment: &metadv1.SegmentRecord{Segment: &metadv1.SegmentDesc{Id: seg, Size: 1 << 20, Tier: metadv1.Tier_TIER_MEMORY}}}},
		{Record: &metadv1.Record_Tenant{Tenant: &metadv1.TenantRecord{Name: "default", InstanceId: 1}}},
		{Record: &metadv1.Record_Object{Object: &metadv1.ObjectRecord{Key: []byte("a"), Size: 100, GroupId: 1, Group: []byte("g"),
			Replicas: []*metadv1.ReplicaRecord{{SegmentIndex: 1, Tier: metadv1.Tier_TIER_MEMORY}}}}},
		{Record: &metadv1.Record_Object{Object: &metadv1.ObjectRecord{Key: []byte("b"), Size: 10,
			Replicas: []*metadv1.ReplicaRecord{{SegmentIndex: 1, Offset: 128, Tier: metadv1.Tier_TIER_NOF}}}}},
	}
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Size() != int64(buf.Len()) {
		t.Fatalf("Size %d, wrote %d", w.Size(), buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTripAndInspect(t *testing.T) {
	data := sample(t)
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().GetIndex() != 9 {
		t.Fatalf("header %v", r.Header())
	}
	n := 0
	var rec metadv1.Record
	for {
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("%d records", n)
	}
	info, err := Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tn := info.Tenants[0]
	if info.Checksum != "ok" || info.Objects != 2 || info.Groups != 1 || tn.Objects != 2 || tn.MemoryBytes != 128 || tn.NOFBytes != 64 ||
		info.Segments[0].Used != 192 || info.Bytes != int64(len(data)) {
		t.Fatalf("inspect %+v", info)
	}
}

func TestDamageIsNamed(t *testing.T) {
	data := sample(t)
	// A well-formed file whose header claims objects it does not hold.
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, &metadv1.SnapshotHeader{FormatVersion: 1, Objects: 5})
	_ = w.Close()
	countLie := buf.Bytes()
	newer := bytes.Clone(data)
	newer[11] = 2
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic only", data[:8], ErrTruncated},
		{"foreign", []byte("{\"not\": \"a snapshot\"}"), ErrBadMagic},
		{"future", newer, ErrFutureVersion},
		{"cut", data[:len(data)-5], ErrTruncated},
		{"checksum", append(bytes.Clone(data[:len(data)-1]), data[len(data)-1]^1), ErrChecksum},
		{"counts", countLie, ErrCorrupt},
		{"huge frame", append(bytes.Clone(data[:12]), 0xff, 0xff, 0xff, 0xff, 0x7f), ErrCorrupt},
	}
	for _, c := range cases {
		_, err := Inspect(bytes.NewReader(c.data))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
