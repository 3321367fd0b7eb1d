package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

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
	newer[11] = byte(FormatVersion + 1)
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

// many writes a file of n objects of one tenant in the given file version.
func many(t *testing.T, version uint32, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterVersion(&buf, &metadv1.SnapshotHeader{FormatVersion: 1, Tenants: 1, Objects: uint64(n)}, version)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Tenant{Tenant: &metadv1.TenantRecord{Name: "default", InstanceId: 1}}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Object{Object: &metadv1.ObjectRecord{
			Key: fmt.Appendf(nil, "key-%07d", i), Size: uint64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads every record of data, returning the object keys and the reader.
func readAll(data []byte) ([]string, *Reader, error) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	var rec metadv1.Record
	for {
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			return keys, r, nil
		}
		if err != nil {
			return keys, r, err
		}
		if o := rec.GetObject(); o != nil {
			keys = append(keys, string(o.GetKey()))
		}
	}
}

// TestChunkedAndWholeHoldTheSameRecords: a file of either version gives back the records written,
// in order; a chunked one cuts them every ChunkRecords records, and its reader reports the version
// and the chunks.
func TestChunkedAndWholeHoldTheSameRecords(t *testing.T) {
	const n = 2*ChunkRecords + 17 // two full chunks (the tenant record counts) and a short one
	whole, chunked := many(t, FileVersionWhole, n), many(t, FileVersionChunked, n)
	wk, wr, err := readAll(whole)
	if err != nil {
		t.Fatal(err)
	}
	ck, cr, err := readAll(chunked)
	if err != nil {
		t.Fatal(err)
	}
	if len(wk) != n || !slices.Equal(wk, ck) {
		t.Fatalf("whole gave %d keys, chunked %d (equal: %v)", len(wk), len(ck), slices.Equal(wk, ck))
	}
	if wr.FileVersion() != FileVersionWhole || wr.Chunks() != 0 || cr.FileVersion() != FileVersionChunked || cr.Chunks() != 3 {
		t.Fatalf("whole: version %d, %d chunks; chunked: version %d, %d chunks; want 1/0 and 2/3",
			wr.FileVersion(), wr.Chunks(), cr.FileVersion(), cr.Chunks())
	}
	if again := many(t, FileVersionChunked, n); !bytes.Equal(again, chunked) {
		t.Fatal("the same records gave other bytes")
	}
	if _, err := NewWriterVersion(io.Discard, &metadv1.SnapshotHeader{}, FormatVersion+1); err == nil {
		t.Fatal("a writer of a version this binary does not know was made")
	}
}

// TestDamagedChunkIsNamed: a flipped byte in the middle of the second chunk is refused as a
// checksum mismatch naming that chunk, before any of its records is returned; a file cut inside a
// chunk is truncated; a chunk whose count lies is corrupt.
func TestDamagedChunkIsNamed(t *testing.T) {
	const n = 3 * ChunkRecords
	data := many(t, FileVersionChunked, n)
	// The second chunk starts after the first; find it by reading the first.
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var rec metadv1.Record
	for range ChunkRecords {
		if err := r.Next(&rec); err != nil {
			t.Fatal(err)
		}
	}
	second := r.BytesRead()
	bad := bytes.Clone(data)
	bad[second+1000] ^= 0x40
	keys, _, err := readAll(bad)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "chunk 1 (record 4096 on") {
		t.Fatalf("a damaged second chunk: %v, want a checksum mismatch naming chunk 1", err)
	}
	if len(keys) != ChunkRecords-1 { // the tenant record and the first chunk's objects
		t.Fatalf("%d records returned before the damaged chunk, want %d", len(keys), ChunkRecords-1)
	}
	if _, _, err := readAll(data[:second+1000]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a file cut inside a chunk: %v, want truncated", err)
	}
	lie := bytes.Clone(data)
	lie[second] ^= 0x01 // the second chunk's count (4096 = 0x80 0x20): one more or less
	if _, _, err := readAll(lie); !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a chunk whose count changed: %v, want it refused", err)
	}
}

// TestEachIsNext: Each with several workers passes the records Next returns, in order, for either
// file version; stops at fn's error; and on a damaged chunk passes exactly the records before it
// and returns Next's error, leaving no goroutine behind (main_test's goleak).
func TestEachIsNext(t *testing.T) {
	const n = 5*ChunkRecords + 3
	for _, version := range []uint32{FileVersionWhole, FileVersionChunked} {
		data := many(t, version, n)
		want, _, err := readAll(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{1, 2, 4} {
			r, err := NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := r.Each(workers, func(rec *metadv1.Record) error {
				if o := rec.GetObject(); o != nil {
					got = append(got, string(o.GetKey()))
				}
				return nil
			}); err != nil || !slices.Equal(got, want) {
				t.Fatalf("version %d, %d workers: %v, %d keys (want %d, equal %v)", version, workers, err, len(got), len(want), slices.Equal(got, want))
			}
			// fn's error ends it at once.
			r, _ = NewReader(bytes.NewReader(data))
			calls := 0
			stopErr := errors.New("enough")
			if err := r.Each(workers, func(*metadv1.Record) error {
				calls++
				if calls == ChunkRecords+5 {
					return stopErr
				}
				return nil
			}); !errors.Is(err, stopErr) || calls != ChunkRecords+5 {
				t.Fatalf("version %d, %d workers: fn's error gave %v after %d calls", version, workers, err, calls)
			}
		}
	}
	data := many(t, FileVersionChunked, n)
	r, _ := NewReader(bytes.NewReader(data))
	var rec metadv1.Record
	for range 2 * ChunkRecords {
		if err := r.Next(&rec); err != nil {
			t.Fatal(err)
		}
	}
	third := r.BytesRead()
	bad := bytes.Clone(data)
	bad[third+500] ^= 0x10
	wantKeys, _, wantErr := readAll(bad)
	for _, workers := range []int{2, 8} {
		r, _ := NewReader(bytes.NewReader(bad))
		var got []string
		err := r.Each(workers, func(rec *metadv1.Record) error {
			if o := rec.GetObject(); o != nil {
				got = append(got, string(o.GetKey()))
			}
			return nil
		})
		if !errors.Is(err, ErrChecksum) || err.Error() != wantErr.Error() || !slices.Equal(got, wantKeys) {
			t.Fatalf("%d workers on a damaged third chunk: %v after %d keys; Next gives %v after %d", workers, err, len(got), wantErr, len(wantKeys))
		}
	}
}

// TestEachDecodedGivesKindToTheDecoder: EachDecoded hands every record of its kind to the decoder
// (on both paths: the calling goroutine's and the chunk workers'), passes what it decodes to fn in
// file order and decodes what it declines with proto; a decoder's error fails the read as a
// damaged record and names it.
func TestEachDecodedGivesKindToTheDecoder(t *testing.T) {
	const n = 3*ChunkRecords + 7
	for _, version := range []uint32{FileVersionWhole, FileVersionChunked} {
		data := many(t, version, n)
		want, _, err := readAll(data)
		if err != nil {
			t.Fatal(err)
		}
		// Declines every third object record; decodes the rest as their keys.
		dec := func(raw []byte) (any, bool, error) {
			rec := &metadv1.Record{}
			if err := proto.Unmarshal(raw, rec); err != nil {
				return nil, false, err
			}
			key := string(rec.GetObject().GetKey())
			if rec.GetObject().GetSize()%3 == 0 {
				return nil, false, nil
			}
			return key, true, nil
		}
		for _, workers := range []int{1, 2, 4} {
			r, _ := NewReader(bytes.NewReader(data))
			var got []string
			decoded, tenants := 0, 0
			err := r.EachDecoded(workers, KindObject, dec, func(rec *metadv1.Record, v any) error {
				switch {
				case v != nil:
					got, decoded = append(got, v.(string)), decoded+1
				case rec.GetObject() != nil:
					got = append(got, string(rec.GetObject().GetKey()))
				case rec.GetTenant() != nil:
					tenants++
				}
				return nil
			})
			if err != nil || !slices.Equal(got, want) || decoded != n-n/3 || tenants != 1 {
				t.Fatalf("version %d, %d workers: %v; %d keys in order %v, %d decoded (want %d), %d tenants",
					version, workers, err, len(got), slices.Equal(got, want), decoded, n-n/3, tenants)
			}

			r, _ = NewReader(bytes.NewReader(data))
			bad := errors.New("no such object")
			err = r.EachDecoded(workers, KindObject, func(raw []byte) (any, bool, error) {
				k, ok, err := dec(raw)
				if k == "key-0005001" {
					return nil, false, bad
				}
				return k, ok, err
			}, func(*metadv1.Record, any) error { return nil })
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "record 5002 ") || !strings.Contains(err.Error(), bad.Error()) {
				t.Fatalf("version %d, %d workers: a decoder's error gave %v", version, workers, err)
			}
		}
	}
}
