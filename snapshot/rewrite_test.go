package snapshot

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// records reads every record of a file.
func records(t *testing.T, data []byte) (*metadv1.SnapshotHeader, []*metadv1.Record) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []*metadv1.Record
	for {
		rec := &metadv1.Record{}
		err := r.Next(rec)
		if errors.Is(err, io.EOF) {
			return r.Header(), out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func member(name string) *metadv1.MemberRecord {
	return &metadv1.MemberRecord{Name: name, PeerAddress: name + ":1", ClientAddress: name + ":2"}
}

// TestRewriteReplacesMembersAndEpoch: the copy holds the same header and records but for the
// member records and the state epoch.
func TestRewriteReplacesMembersAndEpoch(t *testing.T) {
	var src bytes.Buffer
	if _, _, err := Rewrite(&src, bytes.NewReader(sample(t)), Carried{Members: []*metadv1.MemberRecord{member("old")}, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h, n, err := Rewrite(&out, bytes.NewReader(src.Bytes()), Carried{Members: []*metadv1.MemberRecord{member("a"), member("b")}, Epoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(out.Len()) || h.GetStateEpoch() != 7 {
		t.Fatalf("header %v, size %d of %d bytes", h, n, out.Len())
	}
	wantH, want := records(t, sample(t))
	gotH, got := records(t, out.Bytes())
	wantH.StateEpoch = 7
	if !proto.Equal(gotH, wantH) {
		t.Fatalf("header %v, want %v", gotH, wantH)
	}
	want = append(want, &metadv1.Record{Record: &metadv1.Record_Member{Member: member("a")}},
		&metadv1.Record{Record: &metadv1.Record_Member{Member: member("b")}})
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("record %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestRewriteDropsSessions: a restored state keeps none of the file's client sessions, and its next
// session id is at least the one given (ids this cluster handed out are not handed out again).
func TestRewriteDropsSessions(t *testing.T) {
	var src bytes.Buffer
	w, err := NewWriter(&src, &metadv1.SnapshotHeader{FormatVersion: 2, Index: 9, Term: 2, NextSessionId: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Session{Session: &metadv1.SessionRecord{Id: 4, TtlMs: 1000, Window: 1, Floor: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ next, want uint64 }{{9, 9}, {2, 5}} {
		var out bytes.Buffer
		if _, _, err := Rewrite(&out, bytes.NewReader(src.Bytes()), Carried{Epoch: 1, NextSession: tc.next}); err != nil {
			t.Fatal(err)
		}
		h, recs := records(t, out.Bytes())
		if len(recs) != 0 || h.GetNextSessionId() != tc.want {
			t.Fatalf("next %d: %d records, next session id %d, want none and %d", tc.next, len(recs), h.GetNextSessionId(), tc.want)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRewriteFailures: a damaged source is named as damage; a failed write is not.
func TestRewriteFailures(t *testing.T) {
	data := sample(t)
	if _, _, err := Rewrite(io.Discard, bytes.NewReader(data[:len(data)-5]), Carried{Epoch: 1}); !errors.Is(err, ErrTruncated) || !Damaged(err) {
		t.Errorf("truncated source: %v", err)
	}
	if _, _, err := Rewrite(failingWriter{}, bytes.NewReader(data), Carried{Epoch: 1}); err == nil || Damaged(err) {
		t.Errorf("failed write: %v", err)
	}
}

func keyRec(id, principal string) *metadv1.KeyRecord {
	return &metadv1.KeyRecord{Id: id, Principal: principal, Sha256: bytes.Repeat([]byte{1}, 32), CreatedMs: 1}
}

// TestRewriteAuth: given the cluster's auth state, the copy holds its keys and role bindings in
// place of the file's, at the larger of the two revisions (a restore never takes the revision
// back); without it, the file's are kept, after the members.
func TestRewriteAuth(t *testing.T) {
	var src bytes.Buffer
	w, err := NewWriter(&src, &metadv1.SnapshotHeader{FormatVersion: 3, Index: 9, Term: 2, AuthRevision: 5, Keys: 1, RoleBindings: 1})
	if err != nil {
		t.Fatal(err)
	}
	fileKey := &metadv1.Record{Record: &metadv1.Record_Key{Key: keyRec("00000000000000aa", "old")}}
	fileRole := &metadv1.Record{Record: &metadv1.Record_Role{Role: &metadv1.RoleRecord{Principal: "old", Roles: []string{"admin"}}}}
	for _, rec := range []*metadv1.Record{fileKey, fileRole} {
		if err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mine := &Auth{Revision: 3, Keys: []*metadv1.KeyRecord{keyRec("00000000000000bb", "op"), keyRec("00000000000000cc", "op")},
		Roles: []*metadv1.RoleRecord{{Principal: "op", Roles: []string{"admin"}}}}
	for _, tc := range []struct {
		name  string
		auth  *Auth
		rev   uint64
		want  []*metadv1.Record
		count [2]uint64
	}{
		{"the cluster's, file's revision higher", mine, 5, []*metadv1.Record{
			{Record: &metadv1.Record_Member{Member: member("a")}},
			{Record: &metadv1.Record_Key{Key: mine.Keys[0]}}, {Record: &metadv1.Record_Key{Key: mine.Keys[1]}},
			{Record: &metadv1.Record_Role{Role: mine.Roles[0]}}}, [2]uint64{2, 1}},
		{"the cluster's, cluster's revision higher", &Auth{Revision: 8}, 8, []*metadv1.Record{
			{Record: &metadv1.Record_Member{Member: member("a")}}}, [2]uint64{0, 0}},
		{"the file's", nil, 5, []*metadv1.Record{
			{Record: &metadv1.Record_Member{Member: member("a")}}, fileKey, fileRole}, [2]uint64{1, 1}},
	} {
		var out bytes.Buffer
		if _, _, err := Rewrite(&out, bytes.NewReader(src.Bytes()), Carried{Members: []*metadv1.MemberRecord{member("a")}, Epoch: 1, Auth: tc.auth}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		h, recs := records(t, out.Bytes())
		if h.GetAuthRevision() != tc.rev || h.GetKeys() != tc.count[0] || h.GetRoleBindings() != tc.count[1] {
			t.Errorf("%s: header revision %d keys %d bindings %d", tc.name, h.GetAuthRevision(), h.GetKeys(), h.GetRoleBindings())
		}
		if len(recs) != len(tc.want) {
			t.Fatalf("%s: %d records, want %d", tc.name, len(recs), len(tc.want))
		}
		for i := range recs {
			if !proto.Equal(recs[i], tc.want[i]) {
				t.Errorf("%s: record %d: %v, want %v", tc.name, i, recs[i], tc.want[i])
			}
		}
	}
}

// TestReaderChecksAuthCounts: the header's key and role binding counts must match the records.
func TestReaderChecksAuthCounts(t *testing.T) {
	var src bytes.Buffer
	w, err := NewWriter(&src, &metadv1.SnapshotHeader{FormatVersion: 3, Keys: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Key{Key: keyRec("00000000000000aa", "x")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(bytes.NewReader(src.Bytes())); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a file with 1 key whose header says 2: %v", err)
	}
}

// TestRewriteChangesTheFileVersion: a copy is written in Carried.FileVersion (the source's when
// 0), and holds the same records whichever it is.
func TestRewriteChangesTheFileVersion(t *testing.T) {
	src := many(t, FileVersionWhole, ChunkRecords+10)
	for _, tc := range []struct{ ask, want uint32 }{{0, FileVersionWhole}, {FileVersionChunked, FileVersionChunked}, {FileVersionWhole, FileVersionWhole}} {
		var out bytes.Buffer
		if _, _, err := Rewrite(&out, bytes.NewReader(src), Carried{Epoch: 3, FileVersion: tc.ask}); err != nil {
			t.Fatal(err)
		}
		keys, r, err := readAll(out.Bytes())
		if err != nil || r.FileVersion() != tc.want || r.Header().GetStateEpoch() != 3 {
			t.Fatalf("asked %d: version %d, epoch %d, %v; want version %d", tc.ask, r.FileVersion(), r.Header().GetStateEpoch(), err, tc.want)
		}
		want, _, _ := readAll(src)
		if !slices.Equal(keys, want) {
			t.Fatalf("asked %d: %d keys, the source has %d", tc.ask, len(keys), len(want))
		}
	}
}
