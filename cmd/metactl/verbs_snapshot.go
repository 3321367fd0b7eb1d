package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/wire"
)

// Snapshot verbs. save and restore stream files of any size, so --timeout does not bound them:
// they run until done or interrupted (SIGINT/SIGTERM). inspect needs no cluster.

// snapshotReasons names each kind of bad snapshot file in `error: <reason>: ...` lines.
var snapshotReasons = []struct {
	err    error
	reason string
}{
	{snapshot.ErrBadMagic, "SNAPSHOT_BAD_MAGIC"},
	{snapshot.ErrFutureVersion, "SNAPSHOT_FUTURE_VERSION"},
	{snapshot.ErrTruncated, "SNAPSHOT_TRUNCATED"},
	{snapshot.ErrCorrupt, "SNAPSHOT_CORRUPT"},
	{snapshot.ErrChecksum, "SNAPSHOT_CHECKSUM"},
}

// snapshotFileError says what is wrong with the snapshot file at path.
func snapshotFileError(path string, err error) error {
	for _, r := range snapshotReasons {
		if errors.Is(err, r.err) {
			return &cliError{reason: r.reason, msg: path + ": " + err.Error()}
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// inspectFile verifies and summarizes the snapshot file at path, with its state digest.
func inspectFile(path string) (*snapshot.Info, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	info, err := snapshot.Inspect(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, "", snapshotFileError(path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, "", err
	}
	digest, err := stateDigest(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, "", snapshotFileError(path, err)
	}
	return info, digest, nil
}

// stateDigest is a SHA-256 of the replicated state a snapshot file describes: the header's counts
// and id counter and every segment, tenant and object record, but not the position (index, term,
// created-at), the state epoch (which a restore advances), the member records (which describe the
// cluster it came from) nor the client sessions (which belong to that cluster's clients, and which
// a restore ends). Two clusters hold the same state exactly when snapshots saved from them have the
// same digest.
//
// The records are re-encoded (proto, deterministic), so that the digest is the state's whatever the
// encoding of the file; object records, nearly all of a file, on the reader's chunk workers
// (through snapshot.ParseObject and wire.AppendObjectFields, which give proto's bytes without a
// message, or through proto where ParseObject declines), the rest and the hashing in file order
// on the calling goroutine.
func stateDigest(r io.Reader) (string, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	b := digestHeader(nil, sr.Header())
	h.Write(b)
	opts := proto.MarshalOptions{Deterministic: true}
	frame := func(b []byte, rec *metadv1.Record) ([]byte, error) {
		return opts.MarshalAppend(binary.AppendUvarint(b, uint64(opts.Size(rec))), rec)
	}
	fields := sync.Pool{New: func() any { return &objectScratch{} }}
	object := func(raw []byte) (any, bool, error) {
		if x := fields.Get().(*objectScratch); snapshot.ParseObject(raw, &x.f) {
			x.b = wire.AppendObjectFields(x.b[:0], &x.f)
			out := append(binary.AppendUvarint(make([]byte, 0, len(x.b)+binary.MaxVarintLen64), uint64(len(x.b))), x.b...)
			x.f.Reset()
			fields.Put(x)
			return out, true, nil
		}
		rec := &metadv1.Record{}
		if err := proto.Unmarshal(raw, rec); err != nil {
			return nil, false, err
		}
		b, err := frame(nil, rec)
		return b, err == nil, err
	}
	err = sr.EachDecoded(runtime.GOMAXPROCS(0), snapshot.KindObject, object, func(rec *metadv1.Record, v any) error {
		if rec == nil {
			h.Write(v.([]byte))
			return nil
		}
		switch rec.Record.(type) {
		case *metadv1.Record_Member, *metadv1.Record_Session:
			return nil
		}
		var err error
		if b, err = frame(b[:0], rec); err != nil {
			return err
		}
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// digestHeader appends what the state digest hashes of a file's header: its format version,
// counts and tenant instance counter.
func digestHeader(b []byte, hd *metadv1.SnapshotHeader) []byte {
	for _, v := range []uint64{uint64(hd.GetFormatVersion()), hd.GetTenants(), hd.GetSegments(), hd.GetObjects(), hd.GetGroups(), hd.GetNextTenantInstanceId()} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// objectScratch is one chunk worker's reused decoding of an object record and its re-encoding.
type objectScratch struct {
	f snapshot.ObjectFields
	b []byte
}

// inspectView is a plain value: snapshot inspect's JSON document.
type inspectView struct {
	File string `json:"file"`
	*snapshot.Info
	CreatedAtText string `json:"created_at"`
	StateDigest   string `json:"state_digest"`
}

func createdAtText(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

func runSnapshotInspect(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	info, digest, err := inspectFile(pos[0])
	if err != nil {
		return err
	}
	view := inspectView{File: pos[0], Info: info, CreatedAtText: createdAtText(info.CreatedAt), StateDigest: digest}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "file", pos[0])
		row(tw, "format version", info.FormatVersion)
		row(tw, "file version", fmt.Sprintf("%d (%d chunks)", info.FileVersion, info.Chunks))
		row(tw, "index", info.Index)
		row(tw, "term", info.Term)
		row(tw, "created at", view.CreatedAtText)
		row(tw, "size", formatSize(uint64(info.Bytes)))
		row(tw, "checksum", info.Checksum)
		row(tw, "state digest", digest)
		row(tw, "store digest", orDash(info.StoreDigest))
		row(tw, "objects", info.Objects)
		row(tw, "groups", info.Groups)
		row(tw, "tenants", len(info.Tenants))
		row(tw, "segments", len(info.Segments))
		row(tw, "members", len(info.Members))
		fmt.Fprintln(tw)
		row(tw, "TENANT", "INSTANCE", "QUOTA", "OBJECTS", "GROUPS", "MEMORY", "NOF", "DISK")
		for _, t := range info.Tenants {
			row(tw, t.Name, t.Instance, quotaText(t.QuotaBytes), t.Objects, t.Groups, formatSize(t.MemoryBytes), formatSize(t.NOFBytes), formatSize(t.DiskBytes))
		}
		if len(info.Segments) > 0 {
			fmt.Fprintln(tw)
			row(tw, "SEGMENT", "NAME", "TIER", "SIZE", "USED", "OWNER", "ENDPOINT")
			for _, s := range info.Segments {
				row(tw, s.ID, orDash(s.Name), s.Tier, formatSize(s.Size), formatSize(s.Used), s.Owner, orDash(s.Endpoint))
			}
		}
		if len(info.Members) > 0 {
			fmt.Fprintln(tw)
			row(tw, "MEMBER", "PEER", "CLIENT")
			for _, m := range info.Members {
				row(tw, m.Name, m.PeerAddr, orDash(m.ClientAddr))
			}
		}
	})
}

// savedView is a plain value: snapshot save's JSON document.
type savedView struct {
	File        string `json:"file"`
	Index       uint64 `json:"index"`
	Term        uint64 `json:"term"`
	Bytes       int64  `json:"bytes"`
	Objects     uint64 `json:"objects"`
	Groups      uint64 `json:"groups"`
	Tenants     int    `json:"tenants"`
	Segments    int    `json:"segments"`
	StateDigest string `json:"state_digest"`
}

func runSnapshotSave(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	stale := fs.Bool("allow-stale", false, "let the node that answers save its own state, which may lag the leader's (with --endpoints naming one node: that node's)")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	path := pos[0]
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	kept := false
	defer func() {
		if !kept {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	var w io.Writer = bw
	prog := newProgress(a.stderr, "snapshot save")
	var feed *recordCounter
	if prog != nil {
		feed = newRecordCounter(prog)
		w = io.MultiWriter(bw, feed)
	}
	_, err = c.SnapshotSave(a.ctx, w, *stale)
	if feed != nil {
		feed.close()
	}
	prog.finish()
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Verify before the file takes its name: a bad save never replaces a good FILE.
	info, digest, err := inspectFile(tmp)
	if err != nil {
		return fmt.Errorf("the snapshot received does not verify: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	kept = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	view := savedView{File: path, Index: info.Index, Term: info.Term, Bytes: info.Bytes, Objects: info.Objects,
		Groups: info.Groups, Tenants: len(info.Tenants), Segments: len(info.Segments), StateDigest: digest}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "saved snapshot at index %d, term %d: %s, %s (%s in %s)\n", info.Index, info.Term,
			plural(int(info.Objects), "object"), plural(len(info.Tenants), "tenant"), formatSize(uint64(info.Bytes)), path)
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// restoredView is a plain value: snapshot restore's JSON document.
type restoredView struct {
	File          string `json:"file"`
	SnapshotIndex uint64 `json:"snapshot_index"` // the index the file was saved at
	SnapshotTerm  uint64 `json:"snapshot_term"`
	Index         uint64 `json:"index"` // the Raft index the cluster installed it at
	Term          uint64 `json:"term"`
	Tenants       uint64 `json:"tenants"`
	Segments      uint64 `json:"segments"`
	Objects       uint64 `json:"objects"`
	Groups        uint64 `json:"groups"`
	StateDigest   string `json:"state_digest"`
}

func runSnapshotRestore(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	path := pos[0]
	// The leader verifies the file again before it changes anything; checking here first gives
	// the answer without sending the file.
	info, digest, err := inspectFile(path)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	prog := newProgress(a.stderr, "snapshot restore")
	if prog != nil {
		prog.totalBytes.Store(info.Bytes)
	}
	resp, err := c.SnapshotRestore(a.ctx, &sendReader{f: f, prog: prog})
	prog.finish()
	if err != nil {
		return err
	}
	view := restoredView{File: path, SnapshotIndex: info.Index, SnapshotTerm: info.Term, Index: resp.GetIndex(), Term: resp.GetTerm(),
		Tenants: resp.GetTenants(), Segments: resp.GetSegments(), Objects: resp.GetObjects(), Groups: resp.GetGroups(), StateDigest: digest}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "restored snapshot of index %d, term %d: %s, %s, %s, %s; installed at index %d, term %d\n",
			info.Index, info.Term, plural(int(resp.GetObjects()), "object"), plural(int(resp.GetTenants()), "tenant"),
			plural(int(resp.GetSegments()), "segment"), plural(int(resp.GetGroups()), "group"), resp.GetIndex(), resp.GetTerm())
	})
}

// sendReader is not safe for concurrent use. It is the file being restored, counting what has been
// sent; it seeks, so the client may retry the call from the start.
type sendReader struct {
	f    *os.File
	prog *progress // nil: no display
}

func (r *sendReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if r.prog != nil {
		r.prog.bytes.Add(int64(n))
		if err == io.EOF {
			r.prog.phase.Store("sent; the leader is verifying and installing it")
		}
	}
	return n, err
}

func (r *sendReader) Seek(off int64, whence int) (int64, error) {
	n, err := r.f.Seek(off, whence)
	if r.prog != nil && err == nil {
		r.prog.bytes.Store(n)
	}
	return n, err
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress is safe for concurrent use: transfers update its counters, one goroutine (started by
// newProgress, stopped by finish) draws. It is a one-line progress display, redrawn in place on a
// terminal; newProgress returns nil when w is not a terminal, and finish on nil does nothing.
type progress struct {
	w            io.Writer
	label        string
	bytes        atomic.Int64
	totalBytes   atomic.Int64 // 0 = unknown
	objects      atomic.Int64
	totalObjects atomic.Int64 // 0 = unknown
	phase        atomic.Value // string shown after the counters, if any
	stop         chan struct{}
	done         chan struct{}
	once         sync.Once
}

func newProgress(w io.Writer, label string) *progress {
	if !isTerminal(w) {
		return nil
	}
	p := &progress{w: w, label: label, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *progress) run() {
	defer close(p.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\x1b[K")
			return
		case <-t.C:
			fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
		}
	}
}

func (p *progress) line() string {
	var b strings.Builder
	b.WriteString(p.label + ": " + formatSize(uint64(p.bytes.Load())))
	if tb := p.totalBytes.Load(); tb > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", formatSize(uint64(tb)), 100*p.bytes.Load()/tb)
	}
	if to := p.totalObjects.Load(); to > 0 {
		fmt.Fprintf(&b, ", %d of %d objects", p.objects.Load(), to)
	}
	if s, _ := p.phase.Load().(string); s != "" {
		b.WriteString(", " + s)
	}
	return b.String()
}

// finish stops the display and clears its line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop); <-p.done })
}

// recordCounter is used by one writer goroutine; its parser runs on a goroutine of its own, fed by
// a pipe that close closes. It is an io.Writer that parses the snapshot bytes written to it to show
// the objects received against the header's count. It never fails a write: a stream it cannot
// parse just stops the count (the saved file is verified afterwards).
type recordCounter struct {
	pw   *io.PipeWriter
	prog *progress
	done chan struct{}
}

func newRecordCounter(prog *progress) *recordCounter {
	pr, pw := io.Pipe()
	rc := &recordCounter{pw: pw, prog: prog, done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		defer io.Copy(io.Discard, pr) //nolint:errcheck // keeps the writer unblocked after a parse failure
		sr, err := snapshot.NewReader(pr)
		if err != nil {
			return
		}
		prog.totalObjects.Store(int64(sr.Header().GetObjects()))
		rec := &metadv1.Record{}
		for sr.Next(rec) == nil {
			if _, ok := rec.Record.(*metadv1.Record_Object); ok {
				prog.objects.Add(1)
			}
		}
	}()
	return rc
}

func (rc *recordCounter) Write(p []byte) (int, error) {
	rc.prog.bytes.Add(int64(len(p)))
	_, _ = rc.pw.Write(p)
	return len(p), nil
}

func (rc *recordCounter) close() {
	_ = rc.pw.Close()
	<-rc.done
}
