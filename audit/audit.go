// Package audit writes the audit log of one member: a JSON line for every call that changes the
// cluster's state and for every call refused for who made it, in a size-bounded, rotated file.
//
// A call pays for encoding its line and handing it to the writer (a bounded queue), never for
// the disk: the writer goroutine appends the lines through a buffer and hands them to the
// operating system whenever the queue is empty (so a crash of the process loses none written
// before it; the file is synced at each rotation and at Close). A full queue (a disk slower than
// the calls for long) drops the line and counts it in metad_audit_dropped_total; the call is
// never held back. Lines reach the file in the order their calls ended on this member.
package audit

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Record is one audited call, as its line says it (JSON field names in the tags; empty fields
// are left out).
type Record struct {
	// Time is when the call ended (RFC 3339, UTC).
	Time time.Time `json:"time"`
	// Member is the member that served the call (wrote the line).
	Member string `json:"member"`
	// Principal is who made the call ("" when the member runs without authentication, or the
	// call was refused before the caller was known); KeyID the API key it authenticated with,
	// CertSerial the serial number (hex) of its client certificate; CallerMember a cluster member
	// that called as itself.
	Principal    string `json:"principal,omitempty"`
	KeyID        string `json:"key_id,omitempty"`
	CertSerial   string `json:"cert_serial,omitempty"`
	CallerMember string `json:"caller_member,omitempty"`
	// Peer is the address the call came from.
	Peer string `json:"peer,omitempty"`
	// Method is the gRPC method ("Metadata/PutEnd").
	Method string `json:"method"`
	// Tenant, Key and Count are what the request names: its tenant, its one key (as text when it
	// is printable UTF-8, else base64 with a "b64:" prefix), the items of a batch.
	Tenant string `json:"tenant,omitempty"`
	Key    string `json:"key,omitempty"`
	Count  int    `json:"count,omitempty"`
	// Code is the call's gRPC status code ("OK"), Reason metad's reason for a refusal
	// ("REASON_PERMISSION_DENIED"), if any.
	Code   string `json:"code"`
	Reason string `json:"reason,omitempty"`
	// LatencyUS is how long the call took on this member, microseconds.
	LatencyUS int64 `json:"latency_us"`
	// ForwardedTo names the leader this member forwarded the call to; ForwardedBy the member
	// that forwarded it here. Such a call has a line on both members.
	ForwardedTo string `json:"forwarded_to,omitempty"`
	ForwardedBy string `json:"forwarded_by,omitempty"`
}

// Config bounds the log. Path is the file written (its directory must exist); when it reaches
// MaxBytes it is renamed Path.1 (Path.1 to Path.2, and so on), and the oldest beyond MaxFiles
// rotated files is deleted.
type Config struct {
	Path     string
	MaxBytes int64
	MaxFiles int
	// Member names this member in every line.
	Member string
	// Queue is how many lines may wait for the writer (0: DefaultQueue).
	Queue int
}

// Defaults.
const (
	DefaultMaxBytes = 100 << 20
	DefaultMaxFiles = 10
	DefaultQueue    = 65536
	minMaxBytes     = 4096
)

// Validate checks cfg; the messages name the settings as the daemon's flags do.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return errors.New("audit-log: a path is needed")
	case c.MaxBytes < minMaxBytes:
		return fmt.Errorf("audit-log-max-bytes: %d bytes is below the least, %d", c.MaxBytes, minMaxBytes)
	case c.MaxFiles < 1:
		return fmt.Errorf("audit-log-max-files: %d: keep at least one rotated file", c.MaxFiles)
	case c.Queue < 0:
		return fmt.Errorf("audit: queue %d is negative", c.Queue)
	}
	return nil
}

// Log is safe for concurrent use: one member's audit log.
type Log struct {
	cfg     Config
	q       chan []byte
	done    chan struct{}
	closeMu sync.RWMutex // Write holds it shared while it sends; Close exclusively, to close q
	closed  bool

	f    *os.File // the writer goroutine's
	size int64    // the writer goroutine's: bytes in f
	err  error    // the writer goroutine's first write error, reported by Close

	lines, dropped, failed prometheus.Counter
}

// Open opens (appends to) cfg.Path and starts the writer. reg receives the log's metrics (nil:
// not registered).
func Open(cfg Config, reg prometheus.Registerer) (*Log, error) {
	if cfg.Queue == 0 {
		cfg.Queue = DefaultQueue
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg, q: make(chan []byte, cfg.Queue), done: make(chan struct{}),
		lines: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_audit_lines_total",
			Help: "Lines written to this member's audit log."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_audit_dropped_total",
			Help: "Audit lines dropped because the writer's queue was full (the disk slower than the calls)."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_audit_write_errors_total",
			Help: "Failed writes, rotations or syncs of the audit log."}),
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.lines, l.dropped, l.failed} {
			if err := reg.Register(c); err != nil {
				_ = l.f.Close()
				return nil, fmt.Errorf("audit: metrics: %w", err)
			}
		}
	}
	go l.run()
	return l, nil
}

// open opens the current file for appending.
func (l *Log) open() error {
	f, err := os.OpenFile(l.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", l.cfg.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("audit: %s: %w", l.cfg.Path, err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write encodes r as a line (its Member this member's when empty) and queues it; it drops the
// line (counted) when the queue is full or the log is closed.
func (l *Log) Write(r *Record) {
	if r.Member == "" {
		r.Member = l.cfg.Member
	}
	line, err := json.Marshal(r)
	if err != nil { // only plain fields: cannot happen
		l.failed.Inc()
		return
	}
	line = append(line, '\n')
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		l.dropped.Inc()
		return
	}
	select {
	case l.q <- line:
	default:
		l.dropped.Inc()
	}
}

// Close writes the queued lines, syncs and closes the file. It returns the first write error the
// log met, if any.
func (l *Log) Close() error {
	l.closeMu.Lock()
	if l.closed {
		l.closeMu.Unlock()
		return nil
	}
	l.closed = true
	close(l.q)
	l.closeMu.Unlock()
	<-l.done
	return l.err
}

// run is the writer goroutine: lines to the file through a buffer, flushed whenever the queue is
// empty, rotated when the file would pass MaxBytes.
func (l *Log) run() {
	defer close(l.done)
	w := bufio.NewWriterSize(l.f, 64<<10)
	for line := range l.q {
		for ok := true; ok; {
			if l.size+int64(len(line)) > l.cfg.MaxBytes && l.size > 0 {
				l.check(w.Flush())
				l.check(l.rotate(w))
			}
			if _, err := w.Write(line); l.check(err) {
				l.size += int64(len(line))
				l.lines.Inc()
			}
			select {
			case line, ok = <-l.q:
			default:
				ok = false
			}
		}
		l.check(w.Flush())
	}
	l.check(w.Flush())
	l.check(l.f.Sync())
	l.check(l.f.Close())
}

// check counts and keeps a failure; it reports whether err is nil.
func (l *Log) check(err error) bool {
	if err == nil {
		return true
	}
	l.failed.Inc()
	if l.err == nil {
		l.err = err
	}
	return false
}

// rotate closes the current file, shifts the rotated ones (Path.N to Path.N+1, the oldest beyond
// MaxFiles removed), renames the current one Path.1 and opens a new one that w writes to.
func (l *Log) rotate(w *bufio.Writer) error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		return err
	}
	p := l.cfg.Path
	if err := os.Remove(fmt.Sprintf("%s.%d", p, l.cfg.MaxFiles)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := l.cfg.MaxFiles - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", p, i), fmt.Sprintf("%s.%d", p, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		return err
	}
	if err := l.open(); err != nil {
		return err
	}
	w.Reset(l.f)
	syncDir(filepath.Dir(p))
	return nil
}

// syncDir makes the renames in dir durable, as far as the platform allows.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// KeyText is a key as a line shows it: the key itself when it is printable UTF-8, else "b64:"
// and its standard base64.
func KeyText(k []byte) string {
	printable := utf8.Valid(k)
	for _, r := range string(k) {
		printable = printable && unicode.IsPrint(r)
	}
	if printable {
		return string(k)
	}
	return "b64:" + base64.StdEncoding.EncodeToString(k)
}
