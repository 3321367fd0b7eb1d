package wire

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"metad/snapshot"
	"metad/store"
	"metad/store/alloc"
)

// DecodedObject is a snapshot's object record decoded straight from its encoding
// (DecodeObjectRecord), without the protobuf message: what ObjectFrom returns, but for the
// replicas' segments, which the record names by position among the file's segment records and
// Resolve fills in once those are known (a decoder ahead of the file's reader may not know them).
type DecodedObject struct {
	Key, Group string
	GroupID    uint64
	State      *store.ObjectState
	segIdx     []uint32 // each replica's segment position, 1-based
	inline     [2]uint32
}

// Resolve sets each replica's segment from segs (the file's segment ids by position), as
// ObjectFrom does, and fails as it does on a position with no segment.
func (d *DecodedObject) Resolve(segs []alloc.ID) error {
	for i, p := range d.segIdx {
		idx := int(p) - 1
		if idx < 0 || idx >= len(segs) {
			return fmt.Errorf("object %q: replica on segment #%d of %d", d.Key, idx+1, len(segs))
		}
		d.State.Replicas[i].Extent.Segment = segs[idx]
	}
	return nil
}

// DecodeObjectRecord decodes b, the encoding of a metadv1.Record that holds an ObjectRecord,
// into the object as proto.Unmarshal and ObjectFrom would (then Resolve). It takes what
// snapshot.ParseObject takes (the writer's encoding); for any other (ok false, nothing decoded)
// the caller decodes b with proto, which gives the same object or its error; a parity test holds
// the two equal. An error is ObjectFrom's verdict on a well-formed record.
func DecodeObjectRecord(b []byte) (d *DecodedObject, ok bool, err error) {
	f := fieldsPool.Get().(*snapshot.ObjectFields)
	defer func() {
		f.Reset()
		fieldsPool.Put(f)
	}()
	if !snapshot.ParseObject(b, f) {
		return nil, false, nil
	}
	d = &DecodedObject{Key: string(f.Key), Group: string(f.Group), GroupID: f.GroupID}
	st := &store.ObjectState{
		ID: f.ObjectID, Version: f.Version, Size: f.Size, Writer: ID16(f.Writer), PutStart: f.PutStart,
		DataType: f.DataType, HardPin: f.HardPin, SoftPinDeadline: f.SoftPinDeadline,
		SoftPinTTL: int64(min(f.SoftPinTTLMs, 1<<40)) * int64(time.Millisecond),
		Replicas:   make([]store.Replica, len(f.Replicas)),
	}
	d.State = st
	if len(f.Replicas) <= len(d.inline) {
		d.segIdx = d.inline[:len(f.Replicas)]
	} else {
		d.segIdx = make([]uint32, len(f.Replicas))
	}
	rounded := alloc.RoundUp(st.Size)
	for i := range f.Replicas {
		r := &f.Replicas[i]
		size := r.Size
		if size == 0 {
			size = rounded
		}
		st.Replicas[i] = store.Replica{ID: r.ID, Tier: TierFrom(r.Tier), Status: StatusFrom(r.Status),
			Extent: alloc.Extent{Offset: r.Offset, Size: size}}
		d.segIdx[i] = r.SegmentIndex
	}
	if f.HasTask {
		t := &f.Task
		st.Task = &store.ReplicaTask{Kind: TaskKindFrom(t.Kind), Client: ID16(t.Client), Started: t.Started, Source: t.Source,
			Targets: slices.Clone(t.Targets)}
	}
	if st.MemoryBytes() != f.Charged && f.Charged != 0 {
		return nil, true, fmt.Errorf("object %q: charged %d bytes, replicas hold %d", d.Key, f.Charged, st.MemoryBytes())
	}
	return d, true, nil
}

// fieldsPool holds the scratch records of DecodeObjectRecord, which runs on several goroutines.
var fieldsPool = sync.Pool{New: func() any { return new(snapshot.ObjectFields) }}
