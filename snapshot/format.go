package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// Magic opens every snapshot file.
const Magic = "METADSNP"

// FormatVersion is the file format version this package writes and the newest it reads.
const FormatVersion uint32 = 1

// MaxFrame bounds one frame, so garbage cannot make the reader allocate without limit.
const MaxFrame = 64 << 20

var (
	ErrBadMagic      = errors.New("not a metad snapshot (bad magic)")
	ErrFutureVersion = errors.New("snapshot format version is newer than this binary reads")
	ErrTruncated     = errors.New("snapshot is truncated")
	ErrCorrupt       = errors.New("snapshot is corrupt")
	ErrChecksum      = errors.New("snapshot checksum mismatch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var marshal = proto.MarshalOptions{Deterministic: true}

// Writer writes one snapshot file. Not safe for concurrent use. Close writes the end marker and the
// checksum; a Writer that is not closed leaves a file every reader refuses as truncated.
type Writer struct {
	w       *bufio.Writer
	crc     uint32
	buf     []byte
	n       int64
	records int64
	err     error
}

// NewWriter writes the magic, the format version and the header to w.
func NewWriter(w io.Writer, h *metadv1.SnapshotHeader) (*Writer, error) {
	sw := &Writer{w: bufio.NewWriterSize(w, 1<<20)}
	var pre [12]byte
	copy(pre[:], Magic)
	binary.BigEndian.PutUint32(pre[8:], FormatVersion)
	sw.write(pre[:])
	sw.frame(h)
	return sw, sw.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, b)
	_, w.err = w.w.Write(b)
	w.n += int64(len(b))
}

func (w *Writer) frame(m proto.Message) {
	if w.err != nil {
		return
	}
	var err error
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(marshal.Size(m)))
	hdr := len(w.buf)
	w.buf, err = marshal.MarshalAppend(w.buf, m)
	if err != nil {
		w.err = fmt.Errorf("snapshot: encode: %w", err)
		return
	}
	if len(w.buf)-hdr > MaxFrame {
		w.err = fmt.Errorf("snapshot: record of %d bytes over the %d limit", len(w.buf)-hdr, MaxFrame)
		return
	}
	w.write(w.buf)
}

// WriteRecord appends one record.
func (w *Writer) WriteRecord(r *metadv1.Record) error {
	w.frame(r)
	w.records++
	return w.err
}

// Close writes the end marker and checksum and flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.write([]byte{0})
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], w.crc)
	if w.err == nil {
		_, w.err = w.w.Write(sum[:])
		w.n += 4
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Size returns the bytes written so far.
func (w *Writer) Size() int64 { return w.n }

// Reader reads one snapshot file, verifying as it goes. Not safe for concurrent use.
type Reader struct {
	r      *bufio.Reader
	crc    uint32
	header *metadv1.SnapshotHeader
	buf    []byte
	n      int64
	done   bool
	counts struct{ tenants, segments, objects, keys, roles, tasks, drains, arenas, limits uint64 }
}

// NewReader reads and checks the magic, the format version and the header.
func NewReader(r io.Reader) (*Reader, error) {
	sr := &Reader{r: bufio.NewReaderSize(r, 64<<10)}
	var pre [12]byte
	if err := sr.read(pre[:8]); err != nil {
		return nil, err
	}
	if string(pre[:8]) != Magic {
		return nil, fmt.Errorf("snapshot: first bytes %q: %w", pre[:8], ErrBadMagic)
	}
	if err := sr.read(pre[8:]); err != nil {
		return nil, err
	}
	if v := binary.BigEndian.Uint32(pre[8:]); v != FormatVersion {
		if v > FormatVersion {
			return nil, fmt.Errorf("snapshot: format version %d, this binary reads up to %d: %w", v, FormatVersion, ErrFutureVersion)
		}
		return nil, fmt.Errorf("snapshot: format version %d unknown: %w", v, ErrCorrupt)
	}
	b, err := sr.frame()
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("snapshot: no header: %w", ErrCorrupt)
	}
	h := &metadv1.SnapshotHeader{}
	if err := proto.Unmarshal(b, h); err != nil {
		return nil, fmt.Errorf("snapshot: header: %v: %w", err, ErrCorrupt)
	}
	if h.FormatVersion > metadv1.SnapshotFormatVersion {
		return nil, fmt.Errorf("snapshot: record format version %d, this binary reads up to %d: %w",
			h.FormatVersion, metadv1.SnapshotFormatVersion, ErrFutureVersion)
	}
	sr.header = h
	return sr, nil
}

// Header returns the snapshot header.
func (r *Reader) Header() *metadv1.SnapshotHeader { return r.header }

// BytesRead returns the bytes consumed so far.
func (r *Reader) BytesRead() int64 { return r.n }

func (r *Reader) read(b []byte) error {
	if _, err := io.ReadFull(r.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("snapshot: at byte %d: %w", r.n, ErrTruncated)
		}
		return fmt.Errorf("snapshot: read at byte %d: %w", r.n, err)
	}
	r.crc = crc32.Update(r.crc, castagnoli, b)
	r.n += int64(len(b))
	return nil
}

// frame reads one frame; nil (and no error) is the end marker.
func (r *Reader) frame() ([]byte, error) {
	var n uint64
	for shift := uint(0); ; shift += 7 {
		var c [1]byte
		if err := r.read(c[:]); err != nil {
			return nil, err
		}
		if shift > 35 {
			return nil, fmt.Errorf("snapshot: frame length at byte %d too long: %w", r.n, ErrCorrupt)
		}
		n |= uint64(c[0]&0x7f) << shift
		if c[0] < 0x80 {
			break
		}
	}
	if n == 0 {
		return nil, nil
	}
	if n > MaxFrame {
		return nil, fmt.Errorf("snapshot: frame of %d bytes at byte %d over the %d limit: %w", n, r.n, MaxFrame, ErrCorrupt)
	}
	// Grow the buffer as bytes arrive, so a garbage length on a short input allocates little.
	r.buf = r.buf[:0]
	for rem := n; rem > 0; {
		chunk := min(rem, 1<<20)
		start := len(r.buf)
		r.buf = append(r.buf, make([]byte, chunk)...)
		if err := r.read(r.buf[start:]); err != nil {
			return nil, err
		}
		rem -= chunk
	}
	return r.buf, nil
}

// Next reads the next record into rec. After the last record it checks the end marker, the counts
// in the header, the checksum and that nothing follows, and returns io.EOF only if all of them hold.
func (r *Reader) Next(rec *metadv1.Record) error {
	if r.done {
		return io.EOF
	}
	b, err := r.frame()
	if err != nil {
		return err
	}
	if b == nil {
		return r.finish()
	}
	proto.Reset(rec)
	if err := proto.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("snapshot: record ending at byte %d: %v: %w", r.n, err, ErrCorrupt)
	}
	switch rec.Record.(type) {
	case *metadv1.Record_Tenant:
		r.counts.tenants++
	case *metadv1.Record_Segment:
		r.counts.segments++
	case *metadv1.Record_Object:
		r.counts.objects++
	case *metadv1.Record_Key:
		r.counts.keys++
	case *metadv1.Record_Role:
		r.counts.roles++
	case *metadv1.Record_Task:
		r.counts.tasks++
	case *metadv1.Record_Drain:
		r.counts.drains++
	case *metadv1.Record_Arena:
		r.counts.arenas++
	case *metadv1.Record_Limit:
		r.counts.limits++
	case *metadv1.Record_Member, *metadv1.Record_Session:
	default:
		return fmt.Errorf("snapshot: record ending at byte %d has no known kind: %w", r.n, ErrCorrupt)
	}
	return nil
}

func (r *Reader) finish() error {
	want := r.crc
	var sum [4]byte
	if _, err := io.ReadFull(r.r, sum[:]); err != nil {
		return fmt.Errorf("snapshot: checksum at byte %d: %w", r.n, ErrTruncated)
	}
	r.n += 4
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("snapshot: stored %08x, computed %08x: %w", got, want, ErrChecksum)
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("snapshot: bytes after the checksum at byte %d: %w", r.n, ErrCorrupt)
	}
	h := r.header
	if h.Tenants != r.counts.tenants || h.Segments != r.counts.segments || h.Objects != r.counts.objects {
		return fmt.Errorf("snapshot: header counts %d tenants %d segments %d objects, file has %d/%d/%d: %w",
			h.Tenants, h.Segments, h.Objects, r.counts.tenants, r.counts.segments, r.counts.objects, ErrCorrupt)
	}
	if h.Keys != r.counts.keys || h.RoleBindings != r.counts.roles {
		return fmt.Errorf("snapshot: header counts %d keys %d role bindings, file has %d/%d: %w",
			h.Keys, h.RoleBindings, r.counts.keys, r.counts.roles, ErrCorrupt)
	}
	if h.Tasks != r.counts.tasks || h.Drains != r.counts.drains {
		return fmt.Errorf("snapshot: header counts %d tasks %d drain jobs, file has %d/%d: %w", h.Tasks, h.Drains,
			r.counts.tasks, r.counts.drains, ErrCorrupt)
	}
	if h.Arenas != r.counts.arenas {
		return fmt.Errorf("snapshot: header counts %d arenas, file has %d: %w", h.Arenas, r.counts.arenas, ErrCorrupt)
	}
	if h.Limits != r.counts.limits {
		return fmt.Errorf("snapshot: header counts %d limit records, file has %d: %w", h.Limits, r.counts.limits, ErrCorrupt)
	}
	r.done = true
	return io.EOF
}
