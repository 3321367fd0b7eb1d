package snapshot

import (
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// Damaged reports whether err says that something is wrong with a snapshot file itself: it wraps
// ErrBadMagic, ErrFutureVersion, ErrTruncated, ErrCorrupt or ErrChecksum. A failure to read the
// source or to write the copy is not damage.
func Damaged(err error) bool {
	for _, kind := range []error{ErrBadMagic, ErrFutureVersion, ErrTruncated, ErrCorrupt, ErrChecksum} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// Rewrite copies the snapshot file read from r to w record by record, verifying it as it streams,
// with its member records replaced by members (written in the order given, after every other
// record), its header's state epoch set to epoch, its client sessions dropped and its next session
// id raised to at least nextSession. A restored state is another history: the sessions of the file
// describe clients of that history (another cluster's, or this one's past), and ids this cluster
// has handed out must not be handed out again. Every other header field and record is kept as it
// is, so the objects, tenants and segments the file describes are unchanged. It returns the
// header written and the bytes written. A file that fails verification gives the reader's error
// (Damaged reports true for it); a failed write gives an error that names the write.
func Rewrite(w io.Writer, r io.Reader, members []*metadv1.MemberRecord, epoch, nextSession uint64) (*metadv1.SnapshotHeader, int64, error) {
	sr, err := NewReader(r)
	if err != nil {
		return nil, 0, err
	}
	h := proto.CloneOf(sr.Header())
	h.StateEpoch = epoch
	h.NextSessionId = max(h.GetNextSessionId(), nextSession)
	sw, err := NewWriter(w, h)
	if err != nil {
		return nil, 0, fmt.Errorf("snapshot: write: %w", err)
	}
	rec := &metadv1.Record{}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		switch rec.Record.(type) {
		case *metadv1.Record_Member, *metadv1.Record_Session:
			continue
		}
		if err := sw.WriteRecord(rec); err != nil {
			return nil, 0, fmt.Errorf("snapshot: write: %w", err)
		}
	}
	for _, m := range members {
		if err := sw.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Member{Member: m}}); err != nil {
			return nil, 0, fmt.Errorf("snapshot: write: %w", err)
		}
	}
	if err := sw.Close(); err != nil {
		return nil, 0, fmt.Errorf("snapshot: write: %w", err)
	}
	return h, sw.Size(), nil
}
