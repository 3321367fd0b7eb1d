package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
)

// Magic opens every snapshot file.
const Magic = "METADSNP"

// The file format versions (the 4 bytes after the magic; see the package doc for both layouts).
const (
	// FileVersionWhole: the records as one run of frames, one checksum over the whole file.
	FileVersionWhole uint32 = 1
	// FileVersionChunked: the records in chunks of at most ChunkRecords, each with its own
	// checksum, and the whole file's checksum at the end.
	FileVersionChunked uint32 = 2
)

// FormatVersion is the newest file format version: what NewWriter writes, and the newest the
// reader reads (it reads every version from FileVersionWhole on).
const FormatVersion = FileVersionChunked

// MaxFrame bounds one frame, so garbage cannot make the reader allocate without limit.
const MaxFrame = 64 << 20

// ChunkRecords and ChunkBytes shape the chunks a writer of FileVersionChunked cuts: a chunk ends
// after ChunkRecords records, or after the record that takes it to ChunkBytes bytes or more.
const (
	ChunkRecords = 4096
	ChunkBytes   = 4 << 20
)

// maxChunkRecords and maxChunk bound what a reader accepts of one chunk (a writer stays well
// under both), so garbage cannot make it allocate without limit.
const (
	maxChunkRecords = 1 << 20
	maxChunk        = ChunkBytes + MaxFrame + 16
)

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
	version uint32
	crc     uint32
	buf     []byte
	chunk   []byte // FileVersionChunked: the frames of the chunk being filled
	inChunk int    // records in chunk
	n       int64
	records int64
	err     error
}

// NewWriter writes the magic, the newest file format version (FormatVersion) and the header to w.
func NewWriter(w io.Writer, h *metadv1.SnapshotHeader) (*Writer, error) {
	return NewWriterVersion(w, h, FormatVersion)
}

// NewWriterVersion is NewWriter for the given file format version: a file for readers that may
// be older than this binary (a rolling upgrade's members of the release before) is written in
// FileVersionWhole.
func NewWriterVersion(w io.Writer, h *metadv1.SnapshotHeader, version uint32) (*Writer, error) {
	if version < FileVersionWhole || version > FormatVersion {
		return nil, fmt.Errorf("snapshot: file format version %d: this binary writes %d to %d", version, FileVersionWhole, FormatVersion)
	}
	sw := &Writer{w: bufio.NewWriterSize(w, 1<<20), version: version}
	var pre [12]byte
	copy(pre[:], Magic)
	binary.BigEndian.PutUint32(pre[8:], version)
	sw.write(pre[:])
	sw.frame(h)
	if sw.err == nil {
		sw.write(sw.buf)
	}
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

// frame encodes m as one frame into w.buf.
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
	}
}

// WriteRecord appends one record.
func (w *Writer) WriteRecord(r *metadv1.Record) error {
	w.frame(r)
	return w.appendFrame()
}

// WriteRaw appends one record given as its encoding (as Reader.NextRaw returns it): the file holds
// the same bytes as WriteRecord of the decoded record when enc is this package's encoding of it.
func (w *Writer) WriteRaw(enc []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(enc) == 0 || len(enc) > MaxFrame {
		w.err = fmt.Errorf("snapshot: raw record of %d bytes (1 to %d)", len(enc), MaxFrame)
		return w.err
	}
	w.buf = append(binary.AppendUvarint(w.buf[:0], uint64(len(enc))), enc...)
	return w.appendFrame()
}

// appendFrame appends the frame in w.buf as the next record.
func (w *Writer) appendFrame() error {
	if w.err != nil {
		return w.err
	}
	w.records++
	if w.version == FileVersionWhole {
		w.write(w.buf)
		return w.err
	}
	w.chunk = append(w.chunk, w.buf...)
	w.inChunk++
	if w.inChunk == ChunkRecords || len(w.chunk) >= ChunkBytes {
		w.flushChunk()
	}
	return w.err
}

// flushChunk writes the chunk being filled, if it holds a record: its record count and length
// (uvarints), its frames and the CRC-32C of those three.
func (w *Writer) flushChunk() {
	if w.inChunk == 0 || w.err != nil {
		return
	}
	hdr := binary.AppendUvarint(w.buf[:0], uint64(w.inChunk))
	hdr = binary.AppendUvarint(hdr, uint64(len(w.chunk)))
	sum := crc32.Update(crc32.Update(0, castagnoli, hdr), castagnoli, w.chunk)
	hdr = binary.BigEndian.AppendUint32(hdr, sum) // the checksum goes after the frames
	w.write(hdr[:len(hdr)-4])
	w.write(w.chunk)
	w.write(hdr[len(hdr)-4:])
	w.buf = hdr
	w.chunk, w.inChunk = w.chunk[:0], 0
	if cap(w.chunk) > 2*ChunkBytes {
		w.chunk = nil // one huge record's chunk is not kept for the rest of the file
	}
}

// Close writes the end marker and checksum and flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.flushChunk()
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

// Reader reads one snapshot file of any version this binary knows, verifying as it goes. Not
// safe for concurrent use. A chunk of FileVersionChunked is read whole and its checksum verified
// before any of its records is returned, so a damaged chunk is refused, and named, as soon as it
// is met; memory is bounded by one chunk (one frame in FileVersionWhole).
type Reader struct {
	r       *bufio.Reader
	version uint32
	crc     uint32
	header  *metadv1.SnapshotHeader
	buf     []byte
	n       int64
	done    bool
	// FileVersionChunked: the chunk being read (its verified bytes, the read offset in them, the
	// records left in it), its index and where it began in the file.
	chunk      []byte
	chunkOff   int
	chunkLeft  uint64
	chunks     int64
	chunkStart int64
	records    uint64 // records returned so far
	sum        uint32 // the file's checksum, once verified
	counts     struct{ tenants, segments, objects, keys, roles, tasks, drains, arenas, limits uint64 }
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
	switch v := binary.BigEndian.Uint32(pre[8:]); {
	case v > FormatVersion:
		return nil, fmt.Errorf("snapshot: format version %d, this binary reads up to %d: %w", v, FormatVersion, ErrFutureVersion)
	case v < FileVersionWhole:
		return nil, fmt.Errorf("snapshot: format version %d unknown: %w", v, ErrCorrupt)
	default:
		sr.version = v
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

// FileVersion returns the file's format version (FileVersionWhole or FileVersionChunked).
func (r *Reader) FileVersion() uint32 { return r.version }

// Chunks returns the chunks read so far (0 in a file of FileVersionWhole).
func (r *Reader) Chunks() int64 { return r.chunks }

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

// uvarint reads one uvarint of at most 5 bytes, and appends its bytes to raw.
func (r *Reader) uvarint(raw []byte) (uint64, []byte, error) {
	var n uint64
	for shift := uint(0); ; shift += 7 {
		var c [1]byte
		if err := r.read(c[:]); err != nil {
			return 0, raw, err
		}
		raw = append(raw, c[0])
		if shift > 35 {
			return 0, raw, fmt.Errorf("snapshot: length at byte %d too long: %w", r.n, ErrCorrupt)
		}
		n |= uint64(c[0]&0x7f) << shift
		if c[0] < 0x80 {
			return n, raw, nil
		}
	}
}

// bytes reads n bytes into buf[:0], growing it as bytes arrive, so that a garbage length on a
// short input allocates little.
func (r *Reader) bytes(buf []byte, n uint64) ([]byte, error) {
	buf = buf[:0]
	for rem := n; rem > 0; {
		step := min(rem, 1<<20)
		start := len(buf)
		buf = append(buf, make([]byte, step)...)
		if err := r.read(buf[start:]); err != nil {
			return buf, err
		}
		rem -= step
	}
	return buf, nil
}

// frame reads one frame from the file; nil (and no error) is the end marker.
func (r *Reader) frame() ([]byte, error) {
	n, _, err := r.uvarint(nil)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	if n > MaxFrame {
		return nil, fmt.Errorf("snapshot: frame of %d bytes at byte %d over the %d limit: %w", n, r.n, MaxFrame, ErrCorrupt)
	}
	r.buf, err = r.bytes(r.buf, n)
	if err != nil {
		return nil, err
	}
	return r.buf, nil
}

// nextChunk reads the next chunk of a FileVersionChunked file and verifies its checksum; false
// (and no error) at the end marker.
func (r *Reader) nextChunk() (bool, error) {
	r.chunkStart = r.n
	var raw [20]byte
	count, hdr, err := r.uvarint(raw[:0])
	if err != nil || count == 0 {
		return false, err
	}
	name := func() string {
		return fmt.Sprintf("chunk %d (record %d on, at byte %d)", r.chunks, r.records, r.chunkStart)
	}
	length, hdr, err := r.uvarint(hdr)
	if err != nil {
		return false, err
	}
	if count > maxChunkRecords || length > maxChunk || length < count {
		return false, fmt.Errorf("snapshot: %s: %d records in %d bytes, over the bounds: %w", name(), count, length, ErrCorrupt)
	}
	if r.chunk, err = r.bytes(r.chunk, length); err != nil {
		return false, err
	}
	var sum [4]byte
	if err := r.read(sum[:]); err != nil {
		return false, err
	}
	want := crc32.Update(crc32.Update(0, castagnoli, hdr), castagnoli, r.chunk)
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return false, fmt.Errorf("snapshot: %s: stored %08x, computed %08x: %w", name(), got, want, ErrChecksum)
	}
	r.chunkOff, r.chunkLeft = 0, count
	r.chunks++
	return true, nil
}

// chunkFrame returns the next frame of the current chunk (whose checksum has been verified).
func (r *Reader) chunkFrame() ([]byte, error) {
	b := r.chunk[r.chunkOff:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("snapshot: chunk %d (at byte %d): frame %d of it is malformed: %w", r.chunks-1, r.chunkStart,
			r.records, ErrCorrupt)
	}
	r.chunkOff += k + int(n)
	r.chunkLeft--
	if r.chunkLeft == 0 && r.chunkOff != len(r.chunk) {
		return nil, fmt.Errorf("snapshot: chunk %d (at byte %d): %d bytes after its last record: %w", r.chunks-1, r.chunkStart,
			len(r.chunk)-r.chunkOff, ErrCorrupt)
	}
	return b[k : k+int(n)], nil
}

// record returns the next record's bytes; nil (and no error) after the last.
func (r *Reader) record() ([]byte, error) {
	if r.version == FileVersionWhole {
		return r.frame()
	}
	if r.chunkLeft == 0 {
		more, err := r.nextChunk()
		if err != nil || !more {
			return nil, err
		}
	}
	return r.chunkFrame()
}

// Kind is a record's kind: the field number of its Record.record oneof (KindTenant, ...).
type Kind = protowire.Number

// The record kinds, by their field numbers in Record.
var (
	KindTenant  = recordField("tenant")
	KindSegment = recordField("segment")
	KindObject  = recordField("object")
	KindMember  = recordField("member")
	KindSession = recordField("session")
	KindKey     = recordField("key")
	KindRole    = recordField("role")
	KindTask    = recordField("task")
	KindDrain   = recordField("drain")
	KindArena   = recordField("arena")
	KindLimit   = recordField("limit")
)

func recordField(name protoreflect.Name) Kind {
	f := (&metadv1.Record{}).ProtoReflect().Descriptor().Oneofs().ByName("record").Fields().ByName(name)
	if f == nil {
		panic("snapshot: Record has no field " + string(name))
	}
	return f.Number()
}

// NextRaw reads the next record without decoding it: its kind (the first field of its encoding,
// which a record of this package's writer has alone) and its encoding, valid until the next call.
// The end of the file is checked as Next checks it (io.EOF only when everything holds); the
// record's own encoding is not (Next decodes it; a consumer of NextRaw that copies records into
// another file leaves that to whoever reads the copy).
func (r *Reader) NextRaw() (Kind, []byte, error) {
	if r.done {
		return 0, nil, io.EOF
	}
	b, err := r.record()
	if err != nil {
		return 0, nil, err
	}
	if b == nil {
		return 0, nil, r.finish()
	}
	r.records++
	num, _, n := protowire.ConsumeTag(b)
	if n < 0 || !r.count(num) {
		return 0, nil, fmt.Errorf("snapshot: record %d (ending at byte %d) has no known kind: %w", r.records-1, r.n, ErrCorrupt)
	}
	return num, b, nil
}

// count counts a record of kind k against the header's counts; false for a kind it does not know.
func (r *Reader) count(k Kind) bool {
	switch k {
	case KindTenant:
		r.counts.tenants++
	case KindSegment:
		r.counts.segments++
	case KindObject:
		r.counts.objects++
	case KindKey:
		r.counts.keys++
	case KindRole:
		r.counts.roles++
	case KindTask:
		r.counts.tasks++
	case KindDrain:
		r.counts.drains++
	case KindArena:
		r.counts.arenas++
	case KindLimit:
		r.counts.limits++
	case KindMember, KindSession:
	default:
		return false
	}
	return true
}

// Next reads the next record into rec. After the last record it checks the end marker, the counts
// in the header, the checksum and that nothing follows, and returns io.EOF only if all of them hold.
func (r *Reader) Next(rec *metadv1.Record) error {
	_, b, err := r.NextRaw()
	if err != nil {
		return err
	}
	return r.unmarshal(b, rec)
}

// unmarshal decodes b, the record NextRaw just returned, into rec.
func (r *Reader) unmarshal(b []byte, rec *metadv1.Record) error {
	proto.Reset(rec)
	if err := proto.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("snapshot: record %d (ending at byte %d): %v: %w", r.records-1, r.n, err, ErrCorrupt)
	}
	if rec.Record == nil {
		return fmt.Errorf("snapshot: record %d (ending at byte %d) has no known kind: %w", r.records-1, r.n, ErrCorrupt)
	}
	return nil
}

// Checksum returns the CRC-32C of the whole file (its last 4 bytes), once Next or NextRaw has
// returned io.EOF; 0 before.
func (r *Reader) Checksum() uint32 { return r.sum }

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
	r.done, r.sum = true, want
	return io.EOF
}
