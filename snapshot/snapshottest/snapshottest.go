// Package snapshottest provides snapshot files for tests of the code that reads them: files that
// pass every format check but describe a state the verifying reader must refuse.
package snapshottest

import (
	"bytes"
	"errors"
	"io"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// Overlapping rewrites a good snapshot so that it passes every format check (snapshot.Inspect
// accepts it) but describes an impossible state: the second object with a replica on the first
// one's segment sits on the first one's extent. Only a full verification (building the state)
// refuses it.
func Overlapping(tb testing.TB, good []byte) []byte {
	tb.Helper()
	sr, err := snapshot.NewReader(bytes.NewReader(good))
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	sw, err := snapshot.NewWriterVersion(&out, sr.Header(), sr.FileVersion())
	if err != nil {
		tb.Fatal(err)
	}
	var first *metadv1.ReplicaRecord
	done := false
	rec := &metadv1.Record{}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if o, ok := rec.Record.(*metadv1.Record_Object); ok && !done && len(o.Object.GetReplicas()) > 0 {
			r := o.Object.GetReplicas()[0]
			switch {
			case first == nil:
				first = r
			case r.GetSegmentIndex() == first.GetSegmentIndex() && r.GetOffset() != first.GetOffset():
				r.Offset = first.GetOffset()
				done = true
			}
		}
		if err := sw.WriteRecord(rec); err != nil {
			tb.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		tb.Fatal(err)
	}
	if !done {
		tb.Fatal("snapshottest: the snapshot has no two replicas on one segment to overlap")
	}
	if _, err := snapshot.Inspect(bytes.NewReader(out.Bytes())); err != nil {
		tb.Fatalf("snapshottest: the overlapping snapshot should pass Inspect: %v", err)
	}
	return out.Bytes()
}
