package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

var _ raft.FSMSnapshot = (*fsmSnapshot)(nil)

// fsmSnapshot is a captured state waiting to be persisted. Persist runs on Raft's snapshot goroutine
// while apply continues: it only reads immutable object states.
type fsmSnapshot struct {
	fsm       *FSM
	capture   *store.Capture
	members   []Member
	nextSess  uint64
	sessions  []sessionCopy
	auth      *auth.State
	index     uint64
	term      uint64
	createdAt int64
	log       *slog.Logger
}

// Persist streams the snapshot into the sink and closes it (cancels it on error).
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	n, err := writeState(sink, s.capture, s.members, s.nextSess, s.sessions, s.auth, s.index, s.term, s.createdAt)
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot at index %d: %w", s.index, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("fsm: close snapshot at index %d: %w", s.index, err)
	}
	s.log.Info("persisted snapshot", "index", s.index, "term", s.term, "objects", s.capture.Objects(),
		"bytes", n, "took", time.Since(start))
	return nil
}

// Capture returns the captured state (for digests in tests).
func (s *fsmSnapshot) Capture() *store.Capture { return s.capture }

// Release recycles the capture's storage for the next snapshot.
func (s *fsmSnapshot) Release() {
	if s.capture != nil && s.fsm != nil {
		s.fsm.spare.Store(s.capture.Recycle())
	}
	s.capture = nil
}

func sortedMembers(m map[string]Member) []Member {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// WriteCapture writes a capture and the cluster members as a snapshot file with no client sessions
// and no auth state (segments by id, each tenant and its objects by key, members by name) and
// returns the bytes written. The same state always gives the same bytes.
func WriteCapture(w io.Writer, c *store.Capture, members []Member, index, term uint64, createdAt int64) (int64, error) {
	return writeState(w, c, members, 1, nil, auth.Empty, index, term, createdAt)
}

// fileVersion is the snapshot file format a state of these members is written in: chunked once
// every member records feature level levelLocalDisk or more (binaries of that level read it),
// else the whole-file form every release reads, so that the older members of a rolling upgrade
// can install the leader's snapshots and their metactl can read a saved one. A member that records
// no level counts as level 1; a state with no members (a test's capture) is written chunked.
func fileVersion(members []Member) uint32 {
	for _, m := range members {
		if m.Level < levelLocalDisk {
			return snapshot.FileVersionWhole
		}
	}
	return snapshot.FileVersionChunked
}

// writeState is WriteCapture with the client sessions (by id, after the members), the next
// session id, and the auth state (keys by id, then role bindings by principal, then limits, after the
// sessions; its revision in the header).
func writeState(w io.Writer, c *store.Capture, members []Member, nextSession uint64, sessions []sessionCopy, a *auth.State,
	index, term uint64, createdAt int64) (int64, error) {
	ar := a.Records()
	h := &metadv1.SnapshotHeader{
		FormatVersion: snapshotFormat(ar, c), Index: index, Term: term, CreatedAtUnixNano: createdAt,
		Tenants: uint64(len(c.Tenants)), Segments: uint64(len(c.Segments)), Objects: uint64(c.Objects()),
		Groups: uint64(c.Groups()), NextTenantInstanceId: c.NextInstance, StateEpoch: c.Epoch, NextSessionId: nextSession,
		AuthRevision: ar.Revision, Keys: uint64(len(ar.Keys)), RoleBindings: uint64(len(ar.Roles)), Limits: uint64(len(ar.Limits)),
		LastTaskId: c.LastTask, Tasks: uint64(len(c.Tasks)), LastDrainId: c.LastDrain, Drains: uint64(len(c.Drains)),
		LastArenaId: c.LastArena, Arenas: uint64(len(c.Arenas)),
	}
	d := c.Digest()
	h.StoreDigest = d[:]
	sw, err := snapshot.NewWriterVersion(w, h, fileVersion(members))
	if err != nil {
		return 0, err
	}
	enc := &wire.RecordEncoder{SegIndex: make(map[alloc.ID]uint32, len(c.Segments))}
	for i, seg := range c.Segments {
		enc.SegIndex[seg.ID] = uint32(i + 1)
		if err := sw.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Segment{Segment: &metadv1.SegmentRecord{Segment: wire.SegmentTo(seg.Segment),
			Closing: seg.Closing, UnmountAtUnixNano: seg.UnmountAt}}}); err != nil {
			return sw.Size(), err
		}
	}
	tenantRec := &metadv1.Record_Tenant{}
	var raw []byte // an object record's encoding (wire.RecordEncoder.AppendRecord)
	rec := &metadv1.Record{}
	for _, t := range c.Tenants {
		tenantRec.Tenant = &metadv1.TenantRecord{Name: t.Name, InstanceId: t.Instance, RequestedQuotaBytes: t.Requested,
			State: metadv1.TenantState_TENANT_STATE_OPEN, NextObjectId: t.NextObjectID, NextGroupId: t.NextGroupID,
			NextReplicaId: t.NextReplicaID}
		rec.Record = tenantRec
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
		for _, i := range t.KeyOrder() {
			var err error
			if protoObjects {
				var or *metadv1.ObjectRecord
				if or, err = enc.Encode(&t.Objects[i]); err == nil {
					rec.Record = &metadv1.Record_Object{Object: or}
					err = sw.WriteRecord(rec)
				}
			} else if raw, err = enc.AppendRecord(raw[:0], &t.Objects[i]); err == nil {
				err = sw.WriteRaw(raw)
			}
			if err != nil {
				return sw.Size(), fmt.Errorf("tenant %q: %w", t.Name, err)
			}
		}
	}
	for _, m := range members {
		rec.Record = &metadv1.Record_Member{Member: m.record()}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for _, ss := range sessions {
		sr := &metadv1.SessionRecord{Id: ss.id, TtlMs: uint64(ss.ttl / int64(time.Millisecond)), Window: uint32(ss.window),
			LastActiveUnixNano: ss.lastActive, Floor: ss.floor, Results: make([]*metadv1.CachedResult, len(ss.seqs)),
			Principal: ss.owner.principal, Owned: ss.owner.known}
		for i, seq := range ss.seqs {
			rec := &metadv1.ResultRecord{}
			if err := proto.Unmarshal(ss.results[i], rec); err != nil {
				return sw.Size(), fmt.Errorf("session %d seq %d: %w", ss.id, seq, err)
			}
			sr.Results[i] = &metadv1.CachedResult{Seq: seq, Result: rec}
		}
		rec.Record = &metadv1.Record_Session{Session: sr}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for _, k := range ar.Keys {
		rec.Record = &metadv1.Record_Key{Key: k}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for _, r := range ar.Roles {
		rec.Record = &metadv1.Record_Role{Role: r}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for _, l := range ar.Limits {
		rec.Record = &metadv1.Record_Limit{Limit: l}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for i := range c.Tasks {
		rec.Record = &metadv1.Record_Task{Task: wire.TaskTo(&c.Tasks[i])}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for i := range c.Drains {
		rec.Record = &metadv1.Record_Drain{Drain: wire.DrainTo(&c.Drains[i])}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	for i := range c.Arenas {
		rec.Record = &metadv1.Record_Arena{Arena: wire.ArenaTo(&c.Arenas[i], enc.SegIndex)}
		if err := sw.WriteRecord(rec); err != nil {
			return sw.Size(), err
		}
	}
	if err := sw.Close(); err != nil {
		return sw.Size(), err
	}
	return sw.Size(), nil
}

// ReadSnapshot reads a whole snapshot into a new store and member map and verifies it: the file
// (magic, version, frames, counts, checksum) and the state it describes (store.Builder). Nothing is
// returned unless everything holds.
func ReadSnapshot(cfg store.Config, r io.Reader) (*store.Store, map[string]Member, *metadv1.SnapshotHeader, error) {
	st, err := readState(cfg, r, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return st.state.store, st.state.Members(), st.header, nil
}

// readResult is a whole state read from a snapshot, with the file's size and checksum.
type readResult struct {
	state  *State
	header *metadv1.SnapshotHeader
	size   int64
	sum    uint32
}

// readState is ReadSnapshot that also reads the client sessions into a new table (expired counts
// its later expiries) and the auth state (none in a file of format version 1 or 2).
func readState(cfg store.Config, r io.Reader, expired *atomic.Uint64) (*readResult, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return nil, err
	}
	return readStateFrom(cfg, sr, expired)
}

// readStateFrom is readState from a reader that has read the file's header.
func readStateFrom(cfg store.Config, sr *snapshot.Reader, expired *atomic.Uint64) (*readResult, error) {
	s, members, sessions, a, h, err := readRecords(cfg, sr, expired)
	if err != nil {
		return nil, err
	}
	return &readResult{state: newState(s, members, sessions, a), header: h, size: sr.BytesRead(), sum: sr.Checksum()}, nil
}

// sameFile reads the rest of the file sr reads, whose header is v's, without decoding its records
// (framing, chunk and file checksums and counts verified) and reports whether it is the file v was
// read from: the same size and checksum. A damaged file is an error.
func sameFile(sr *snapshot.Reader, v *readResult) (bool, error) {
	for {
		_, _, err := sr.NextRaw()
		if errors.Is(err, io.EOF) {
			return sr.BytesRead() == v.size && sr.Checksum() == v.sum, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// decodeWorkers is how many goroutines decode a chunked snapshot's records while a restore builds
// its state: half the processors, leaving the rest to the member's other work (a follower
// installing a snapshot still answers heartbeats and reads); under 2 the records are decoded by
// the restore itself.
func decodeWorkers() int { return runtime.GOMAXPROCS(0) / 2 }

// protoObjects makes writeState encode object records through protobuf messages (Encode, then
// proto): only in the benchmark that measures what AppendRecord saves, whose bytes are the same.
var protoObjects = false

// objectDecoder is what readRecords decodes object records with: decodeObject; nil (proto
// messages, then wire.ObjectFrom) only in the benchmark that measures the difference.
var objectDecoder snapshot.Decoder = decodeObject

// decodeObject is readRecords' snapshot.Decoder of object records (wire.DecodeObjectRecord; a
// declined record's nil *DecodedObject must not reach fn as a non-nil any).
func decodeObject(raw []byte) (any, bool, error) {
	d, ok, err := wire.DecodeObjectRecord(raw)
	if !ok || err != nil {
		return nil, ok, err
	}
	return d, true, nil
}

func readRecords(cfg store.Config, sr *snapshot.Reader, expired *atomic.Uint64) (*store.Store, map[string]Member, *sessionTable, *auth.State, *metadv1.SnapshotHeader, error) {
	members := map[string]Member{}
	h := sr.Header()
	if expired == nil {
		expired = new(atomic.Uint64)
	}
	sessions := newSessionTable(h.GetNextSessionId(), expired)
	ab := auth.NewBuilder(h.GetAuthRevision())
	b, err := store.NewBuilder(cfg, h.GetNextTenantInstanceId(), h.GetStateEpoch())
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	var segs []alloc.ID
	var tasks []store.Task
	var drains []store.DrainJob
	var arenas []store.Arena
	groups := uint64(0)
	seenGroups := map[uint64]struct{}{}
	// The records in file order; a chunked file's chunks are decoded by decodeWorkers goroutines
	// while this one builds the state, the object records straight into object states.
	err = sr.EachDecoded(decodeWorkers(), snapshot.KindObject, objectDecoder, func(rec *metadv1.Record, v any) error {
		if d, ok := v.(*wire.DecodedObject); ok {
			err := d.Resolve(segs)
			if err == nil {
				err = b.AddObject(d.Key, d.Group, d.GroupID, d.State)
			}
			if err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
			if d.GroupID != 0 {
				seenGroups[d.GroupID] = struct{}{}
			}
			return nil
		}
		switch x := rec.Record.(type) {
		case *metadv1.Record_Segment:
			seg := wire.SegmentFrom(x.Segment.GetSegment())
			if err := b.AddSegment(seg); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
			if err := b.CloseSegment(seg.ID, x.Segment.GetClosing(), x.Segment.GetUnmountAtUnixNano()); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
			segs = append(segs, seg.ID)
		case *metadv1.Record_Tenant:
			t := x.Tenant
			groups += uint64(len(seenGroups))
			seenGroups = map[uint64]struct{}{}
			if err := b.AddTenant(store.TenantCapture{Name: t.GetName(), Instance: t.GetInstanceId(),
				Requested: t.GetRequestedQuotaBytes(), NextObjectID: t.GetNextObjectId(), NextGroupID: t.GetNextGroupId(),
				NextReplicaID: t.GetNextReplicaId()}); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
		case *metadv1.Record_Object:
			o := x.Object
			st, err := wire.ObjectFrom(o, segs)
			if err == nil {
				err = b.AddObject(string(o.GetKey()), string(o.GetGroup()), o.GetGroupId(), st)
			}
			if err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
			if o.GetGroupId() != 0 {
				seenGroups[o.GetGroupId()] = struct{}{}
			}
		case *metadv1.Record_Session:
			if err := addSession(sessions, x.Session); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
		case *metadv1.Record_Key:
			if err := ab.AddKey(x.Key); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
		case *metadv1.Record_Role:
			if err := ab.AddRoles(x.Role); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
		case *metadv1.Record_Limit:
			if err := ab.AddLimit(x.Limit); err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
		case *metadv1.Record_Task:
			tasks = append(tasks, wire.TaskFrom(x.Task))
		case *metadv1.Record_Drain:
			drains = append(drains, wire.DrainFrom(x.Drain))
		case *metadv1.Record_Arena:
			a, err := wire.ArenaFrom(x.Arena, segs)
			if err != nil {
				return fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
			}
			arenas = append(arenas, a)
		case *metadv1.Record_Member:
			m := x.Member
			if m.GetName() == "" {
				return fmt.Errorf("%w: member record without a name", snapshot.ErrCorrupt)
			}
			members[m.GetName()] = Member{Name: m.GetName(), PeerAddr: m.GetPeerAddress(), ClientAddr: m.GetClientAddress(), Level: m.GetFeatureLevel()}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	groups += uint64(len(seenGroups))
	if groups != h.GetGroups() {
		return nil, nil, nil, nil, nil, fmt.Errorf("%w: header says %d groups, objects name %d", snapshot.ErrCorrupt, h.GetGroups(), groups)
	}
	s, err := b.Finish()
	if err == nil {
		err = s.Tasks().Restore(tasks, h.GetLastTaskId())
	}
	if err == nil {
		err = s.Drains().Restore(drains, h.GetLastDrainId())
	}
	if err == nil {
		err = s.Arenas().Restore(arenas, h.GetLastArenaId())
	}
	if err == nil {
		err = checkBuilt(s, h)
	}
	if err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
	}
	return s, members, sessions, ab.State(), h, nil
}

// checkBuilt compares the store built from a file with the header's object count and store
// digest (a file of a binary before feature level 5 has no digest: only the count is checked). The
// reader has checked every byte against the checksums by then; this finds what decoding or
// building lost or changed.
func checkBuilt(s *store.Store, h *metadv1.SnapshotHeader) error {
	c := s.Capture()
	if n := uint64(c.Objects()); n != h.GetObjects() {
		return fmt.Errorf("the state built from the file holds %d objects, the header says %d", n, h.GetObjects())
	}
	want := h.GetStoreDigest()
	if len(want) == 0 {
		return nil
	}
	if got := c.Digest(); !bytes.Equal(got[:], want) {
		return fmt.Errorf("the state built from the file has store digest %x, the header says %x", got[:], want)
	}
	return nil
}

// addSession installs a session record into t. A record of format 5 or older has no owner fields:
// it reads as a session of no known owner.
func addSession(t *sessionTable, r *metadv1.SessionRecord) error {
	if !r.GetOwned() && r.GetPrincipal() != "" {
		return fmt.Errorf("session %d: principal %q without an owner", r.GetId(), r.GetPrincipal())
	}
	c := sessionCopy{id: r.GetId(), floor: r.GetFloor(), window: uint64(r.GetWindow()), owner: owner{principal: r.GetPrincipal(), known: r.GetOwned()},
		ttl: int64(min(r.GetTtlMs(), 1<<40)) * int64(time.Millisecond), lastActive: r.GetLastActiveUnixNano()}
	last := uint64(0)
	for _, cr := range r.GetResults() {
		if cr.GetSeq() <= last {
			return fmt.Errorf("session %d: kept answers not in ascending order at seq %d", c.id, cr.GetSeq())
		}
		last = cr.GetSeq()
		res, err := wire.ResultFrom(cr.GetResult())
		if err != nil {
			return fmt.Errorf("session %d seq %d: %v", c.id, cr.GetSeq(), err)
		}
		c.seqs, c.results = append(c.seqs, cr.GetSeq()), append(c.results, encodeResult(res))
	}
	return t.add(c)
}

// snapshotFormat is the record format a state's file is written in: the lowest that holds the
// state, so that a member of the release before (v0.3.0 reads up to 6) can install a leader's
// snapshot during a rolling upgrade. Only a state with a LOCAL_DISK, DISK or DFS segment (the
// segments that are not Addressed) needs 8, and only one with rate limits 7; each exists only once
// every member runs a binary that knows it (MountLocalDisk and a MountSegment of DISK or DFS are at
// feature level 5, SetLimit at 4).
func snapshotFormat(a *snapshot.Auth, c *store.Capture) uint32 {
	for _, seg := range c.Segments {
		if !seg.Tier.Addressed() {
			return 8
		}
	}
	if len(a.Limits) > 0 {
		return 7
	}
	return 6
}
