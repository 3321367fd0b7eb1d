package snapshot

import (
	"errors"
	"fmt"
	"io"
	"slices"

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

// Auth is the auth state a restored file is given: the restoring cluster's API keys (sorted by
// id), role bindings (sorted by principal), rate limits (principals' by name, then roles') and
// auth revision.
type Auth struct {
	Revision uint64
	Keys     []*metadv1.KeyRecord
	Roles    []*metadv1.RoleRecord
	Limits   []*metadv1.LimitRecord
}

// Carried is what a snapshot restore carries over from the cluster it restores into (Rewrite): its
// member records, the state epoch the restored state takes, the lowest next session id, and its
// auth state (nil: keep the file's).
type Carried struct {
	Members     []*metadv1.MemberRecord
	Epoch       uint64
	NextSession uint64
	Auth        *Auth
	// FileVersion is the file format the copy is written in (what every member of the restoring
	// cluster reads); 0: the source file's.
	FileVersion uint32
}

// Rewrite copies the snapshot file read from r to w record by record, verifying its framing,
// checksums and counts as it streams (the records' contents are copied as they are: whoever
// restores the copy decodes them, and ha verifies the copy with the state machine first),
// with its member records replaced by c.Members (written in the order given, after every other
// record), its header's state epoch set to c.Epoch, its client sessions dropped and its next
// session id raised to at least c.NextSession. A restored state is another history: the sessions of the file
// describe clients of that history (another cluster's, or this one's past), and ids this cluster
// has handed out must not be handed out again.
//
// With c.Auth, the file's API keys, role bindings and rate limits are replaced by c.Auth's
// (written after the members), and its auth revision becomes the larger of the two: a restore must not lock out the
// operator who runs it with the keys and roles of another time, and the revision never goes back,
// so a command authorized against the cluster's auth state before the restore is still measured
// against a revision at least as new. Without (a new cluster built from the file), the file's
// are kept.
//
// The copy is in c.FileVersion's file format (the source's when 0). Every other header field and
// record is kept as it is, so the objects, tenants and segments the
// file describes are unchanged. It returns the header written and the bytes written. A file that
// fails verification gives the reader's error (Damaged reports true for it); a failed write gives
// an error that names the write.
func Rewrite(w io.Writer, r io.Reader, c Carried) (*metadv1.SnapshotHeader, int64, error) {
	auth := c.Auth
	sr, err := NewReader(r)
	if err != nil {
		return nil, 0, err
	}
	h := proto.CloneOf(sr.Header())
	h.StateEpoch = c.Epoch
	h.NextSessionId = max(h.GetNextSessionId(), c.NextSession)
	if auth != nil {
		h.AuthRevision = max(h.GetAuthRevision(), auth.Revision)
		h.Keys, h.RoleBindings, h.Limits = uint64(len(auth.Keys)), uint64(len(auth.Roles)), uint64(len(auth.Limits))
		if h.FormatVersion < 3 {
			h.FormatVersion = 3 // the auth records need it
		}
		if len(auth.Limits) > 0 && h.FormatVersion < 7 {
			h.FormatVersion = 7 // the limit records need it
		}
	}
	version := c.FileVersion
	if version == 0 {
		version = sr.FileVersion()
	}
	sw, err := NewWriterVersion(w, h, version)
	if err != nil {
		return nil, 0, fmt.Errorf("snapshot: write: %w", err)
	}
	// The records are copied as their encodings, not decoded and encoded again: a restore of
	// millions of objects spends its time in its one decode (the state machine's), not here.
	var kept [][]byte // the file's key, role and limit records, when auth is nil
	for {
		kind, enc, err := sr.NextRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		switch kind {
		case KindMember, KindSession:
			continue
		case KindKey, KindRole, KindLimit:
			if auth == nil { // kept, after the members as a file has them
				kept = append(kept, slices.Clone(enc))
			}
			continue
		}
		if err := sw.WriteRaw(enc); err != nil {
			return nil, 0, fmt.Errorf("snapshot: write: %w", err)
		}
	}
	for _, m := range c.Members {
		if err := sw.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Member{Member: m}}); err != nil {
			return nil, 0, fmt.Errorf("snapshot: write: %w", err)
		}
	}
	for _, enc := range kept {
		if err := sw.WriteRaw(enc); err != nil {
			return nil, 0, fmt.Errorf("snapshot: write: %w", err)
		}
	}
	if auth != nil {
		var recs []*metadv1.Record
		for _, k := range auth.Keys {
			recs = append(recs, &metadv1.Record{Record: &metadv1.Record_Key{Key: k}})
		}
		for _, rr := range auth.Roles {
			recs = append(recs, &metadv1.Record{Record: &metadv1.Record_Role{Role: rr}})
		}
		for _, lr := range auth.Limits {
			recs = append(recs, &metadv1.Record{Record: &metadv1.Record_Limit{Limit: lr}})
		}
		for _, rec := range recs {
			if err := sw.WriteRecord(rec); err != nil {
				return nil, 0, fmt.Errorf("snapshot: write: %w", err)
			}
		}
	}
	if err := sw.Close(); err != nil {
		return nil, 0, fmt.Errorf("snapshot: write: %w", err)
	}
	return h, sw.Size(), nil
}
