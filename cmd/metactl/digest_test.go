package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// digestFile is a chunked snapshot file of n objects of one tenant on one segment (every third
// with a second replica, every fifth written through proto in a non-canonical field order), and a
// member and a session, which the digest leaves out.
func digestFile(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	h := &metadv1.SnapshotHeader{Index: 7, Term: 2, Tenants: 1, Segments: 1, Objects: uint64(n), NextTenantInstanceId: 2,
		NextSessionId: 9}
	sw, err := snapshot.NewWriterVersion(&buf, h, snapshot.FileVersionChunked)
	if err != nil {
		tb.Fatal(err)
	}
	write := func(r *metadv1.Record) {
		if err := sw.WriteRecord(r); err != nil {
			tb.Fatal(err)
		}
	}
	write(&metadv1.Record{Record: &metadv1.Record_Segment{Segment: &metadv1.SegmentRecord{Segment: &metadv1.SegmentDesc{
		Id: bytes.Repeat([]byte{1}, 16), Name: "s", Base: 1 << 30, Size: 1 << 40, Endpoint: "127.0.0.1:1", Tier: metadv1.Tier_TIER_MEMORY,
		OwnerClientId: bytes.Repeat([]byte{2}, 16)}}}})
	write(&metadv1.Record{Record: &metadv1.Record_Tenant{Tenant: &metadv1.TenantRecord{Name: "default", InstanceId: 1,
		State: metadv1.TenantState_TENANT_STATE_OPEN, NextObjectId: uint64(n) + 1, NextReplicaId: uint64(2*n) + 1}}})
	for i := range n {
		o := &metadv1.ObjectRecord{Key: fmt.Appendf(nil, "%040x", i), ObjectId: uint64(i + 1), Version: 2, Size: 64,
			WriterClientId: bytes.Repeat([]byte{3}, 16), PutStartUnixNano: int64(i) * 1000,
			Replicas: []*metadv1.ReplicaRecord{{ReplicaId: uint64(2*i + 1), SegmentIndex: 1, Offset: uint64(i) * 128,
				Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE, Tier: metadv1.Tier_TIER_MEMORY}}}
		if i%3 == 0 {
			o.Replicas = append(o.Replicas, &metadv1.ReplicaRecord{ReplicaId: uint64(2*i + 2), SegmentIndex: 1,
				Offset: uint64(i)*128 + 64, Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE, Tier: metadv1.Tier_TIER_MEMORY})
		}
		rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: o}}
		if i%5 != 0 {
			write(rec)
			continue
		}
		// The same record with its size field moved to the end: proto reads it the same, and the
		// digest must not depend on it.
		b, err := proto.Marshal(rec)
		if err != nil {
			tb.Fatal(err)
		}
		body := b[2:] // the object field's tag and a one-byte length
		if int(b[1]) != len(body) {
			tb.Fatalf("record %d: %d-byte body behind a one-byte length %d", i, len(body), b[1])
		}
		sizeField := []byte{0x20, 64}
		at := bytes.Index(body, sizeField)
		moved := append(append(append([]byte{}, body[:at]...), body[at+2:]...), sizeField...)
		if err := sw.WriteRaw(append([]byte{b[0], byte(len(moved))}, moved...)); err != nil {
			tb.Fatal(err)
		}
	}
	write(&metadv1.Record{Record: &metadv1.Record_Member{Member: &metadv1.MemberRecord{Name: "n1", PeerAddress: "127.0.0.1:2"}}})
	write(&metadv1.Record{Record: &metadv1.Record_Session{Session: &metadv1.SessionRecord{Id: 8, TtlMs: 1000}}})
	if err := sw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sequentialDigest is the state digest's definition, one record after another through proto (the
// header's part is digestHeader's).
func sequentialDigest(r io.Reader) (string, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	b := digestHeader(nil, sr.Header())
	h.Write(b)
	rec := &metadv1.Record{}
	opts := proto.MarshalOptions{Deterministic: true}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		switch rec.Record.(type) {
		case *metadv1.Record_Member, *metadv1.Record_Session:
			continue
		}
		if b, err = opts.MarshalAppend(binary.AppendUvarint(b[:0], uint64(opts.Size(rec))), rec); err != nil {
			return "", err
		}
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// TestStateDigestIsItsDefinition: stateDigest equals the sequential definition, whatever the
// encoding of the records, and a damaged file fails it as it fails the definition.
func TestStateDigestIsItsDefinition(t *testing.T) {
	file := digestFile(t, 3*snapshot.ChunkRecords+17)
	want, err := sequentialDigest(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := stateDigest(bytes.NewReader(file))
	if err != nil || got != want {
		t.Fatalf("stateDigest = %s, %v; want %s", got, err, want)
	}
	other := digestFile(t, 3*snapshot.ChunkRecords+16)
	if d, _ := stateDigest(bytes.NewReader(other)); d == want {
		t.Fatal("files of other states share a digest")
	}
	bad := bytes.Clone(file)
	bad[len(bad)/2] ^= 0x40
	if _, err := stateDigest(bytes.NewReader(bad)); !errors.Is(err, snapshot.ErrChecksum) && !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("damaged file: %v", err)
	}
	if _, err := sequentialDigest(bytes.NewReader(bad)); err == nil {
		t.Fatal("the definition takes the damaged file")
	}
}

// BenchmarkStateDigest: the state digest of a file of 1M objects, against the sequential
// definition (baseline) in the same run.
func BenchmarkStateDigest(b *testing.B) {
	file := digestFile(b, 1_000_000)
	for _, v := range []struct {
		name string
		fn   func(io.Reader) (string, error)
	}{{"metad", stateDigest}, {"baseline", sequentialDigest}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.fn(bytes.NewReader(file)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
