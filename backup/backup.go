package backup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/ha"
	"metad/snapshot"
)

// Failures of a backup. A backup that fails also says which step failed; a file that does not
// verify wraps ha.ErrInvalidSnapshot and the snapshot package's error that names what is wrong.
var (
	ErrBusy           = errors.New("backup: a backup is running already")
	ErrLostLeadership = errors.New("backup: this member stopped leading")
	ErrNoneVerifies   = errors.New("backup: no backup in the directory verifies")
)

// Bounds of Config.
const (
	MinInterval = time.Second
	MaxRetain   = 10000
)

// Config is a plain value: where the loop writes backups, how often, and how many it keeps.
type Config struct {
	Dir      string        // the backup directory (created when missing)
	Interval time.Duration // between backups while this member leads. Default 1h, at least MinInterval
	Retain   int           // backups kept: the oldest beyond this many are deleted. Default 24, 1..MaxRetain
	// Now is the clock of the names and the schedule (nil: time.Now). Tests set it.
	Now func() time.Time
}

// DefaultConfig returns the defaults documented on Config, with no directory.
func DefaultConfig() Config {
	return Config{Interval: time.Hour, Retain: 24}
}

// Validate checks the config with messages that name the daemon's settings.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("backup-dir: must be set"))
	}
	if c.Interval < MinInterval {
		errs = append(errs, fmt.Errorf("backup-interval: at least %s, got %s", MinInterval, c.Interval))
	}
	if c.Retain < 1 || c.Retain > MaxRetain {
		errs = append(errs, fmt.Errorf("backup-retain: want 1 to %d, got %d", MaxRetain, c.Retain))
	}
	return errors.Join(errs...)
}

// Source is what the loop backs up: *ha.Node.
type Source interface {
	IsLeader() bool
	OpenSnapshot(ctx context.Context, allowStale bool) (*ha.SnapshotStream, error)
}

var _ Source = (*ha.Node)(nil)

// Result is a plain value: one backup written.
type Result struct {
	File    File   // the backup, under its final name
	Objects uint64 // as its header counts them
	Tenants int
	Deleted []File // older backups retention deleted
}

// Loop writes the scheduled backups of one member. Concurrency contract: Run is called once, on
// one goroutine; Backup is safe for concurrent use, and runs one backup at a time (a call that
// finds one running returns ErrBusy).
type Loop struct {
	cfg  Config
	src  Source
	log  *slog.Logger
	m    *metrics
	now  func() time.Time
	busy atomic.Bool // a backup is running
}

// New returns the loop of cfg over src, its metrics registered on reg (nil: not registered).
func New(cfg Config, src Source, reg prometheus.Registerer, log *slog.Logger) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("backup: nil source")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Loop{cfg: cfg, src: src, log: log.With("backup_dir", cfg.Dir), m: newMetrics(), now: cfg.Now}
	if l.now == nil {
		l.now = time.Now
	}
	if reg != nil {
		if err := l.m.register(reg); err != nil {
			return nil, fmt.Errorf("backup: register metrics: %w", err)
		}
	}
	return l, nil
}

// tick is how often Run looks at this member's leadership.
func (l *Loop) tick() time.Duration {
	return max(min(l.cfg.Interval/10, time.Second), 10*time.Millisecond)
}

// retryAfter is how long Run waits after a failed backup before it tries again.
func (l *Loop) retryAfter() time.Duration { return min(l.cfg.Interval, time.Minute) }

// Run writes a backup whenever one is due while this member leads (doc.go), until ctx ends. On a
// follower it only looks at its leadership each tick.
func (l *Loop) Run(ctx context.Context) {
	if files, err := List(l.cfg.Dir); err != nil {
		l.log.Warn("backup: cannot list the backup directory", "err", err)
	} else {
		l.m.files.Set(float64(len(files)))
		if len(files) > 0 {
			l.m.newest(files[0])
		}
	}
	t := time.NewTicker(l.tick())
	defer t.Stop()
	leading := false
	var due time.Time
	for {
		if !l.src.IsLeader() {
			leading = false
		} else {
			now := l.now()
			if !leading {
				leading = true
				due = l.firstDue(now)
			}
			if due.Sub(now) > l.cfg.Interval { // the clock went back: do not wait for it
				due = now.Add(l.cfg.Interval)
			}
			if !now.Before(due) {
				res, err := l.Backup(ctx)
				switch {
				case ctx.Err() != nil:
					return
				case err == nil:
					due = res.File.Time.Add(l.cfg.Interval)
				default:
					due = now.Add(l.retryAfter())
					l.log.Info("backup: trying again later", "in", l.retryAfter())
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// firstDue is when this member, which has just gained leadership, writes its first backup: an
// interval after the newest backup in the directory (at once when there is none). Temp files a
// former leader left are removed first.
func (l *Loop) firstDue(now time.Time) time.Time {
	if removed, err := removeTemps(l.cfg.Dir); err != nil {
		l.log.Warn("backup: cannot remove the temp files left in the backup directory", "err", err)
	} else if len(removed) > 0 {
		l.log.Info("backup: removed temp files left by an unfinished backup", "files", removed)
	}
	files, err := List(l.cfg.Dir)
	if err != nil || len(files) == 0 {
		return now
	}
	return files[0].Time.Add(l.cfg.Interval)
}

// Backup writes one backup now (doc.go, steps 1 to 5); this member must lead. A failure leaves no
// file, is logged and counted, unless ctx ended (the process is stopping).
func (l *Loop) Backup(ctx context.Context) (*Result, error) {
	if !l.busy.CompareAndSwap(false, true) {
		return nil, ErrBusy
	}
	defer l.busy.Store(false)
	start := time.Now()
	res, reason, err := l.write(ctx, l.now())
	if err != nil {
		if ctx.Err() != nil {
			l.log.Info("backup: abandoned: stopping", "err", err)
			return nil, err
		}
		l.m.failures.WithLabelValues(reason).Inc()
		l.log.Warn("backup failed; no file was left", "reason", reason, "err", err, "took", time.Since(start))
		return nil, err
	}
	l.log.Info("backup written", "file", res.File.Name, "index", res.File.Index, "term", res.File.Term,
		"bytes", res.File.Size, "objects", res.Objects, "tenants", res.Tenants, "took", time.Since(start))
	deleted, err := Prune(l.cfg.Dir, l.cfg.Retain)
	if err != nil {
		l.log.Warn("backup: retention could not delete every old backup", "err", err)
	}
	res.Deleted = deleted
	for _, f := range deleted {
		l.log.Info("backup: deleted an old backup (retention)", "file", f.Name, "retain", l.cfg.Retain)
	}
	l.m.duration.Observe(time.Since(start).Seconds())
	l.m.newest(res.File)
	if files, err := List(l.cfg.Dir); err == nil {
		l.m.files.Set(float64(len(files)))
	}
	return res, nil
}

// write takes, writes, verifies and renames one backup of the snapshot taken at t; on failure it
// says which step failed, and has removed its temp file.
func (l *Loop) write(ctx context.Context, t time.Time) (_ *Result, reason string, _ error) {
	if err := os.MkdirAll(l.cfg.Dir, 0o750); err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: directory: %w", err)
	}
	if !l.src.IsLeader() {
		return nil, reasonLeadership, ErrLostLeadership
	}
	s, err := l.src.OpenSnapshot(ctx, false)
	if err != nil {
		if errors.Is(err, ha.ErrNotLeader) {
			return nil, reasonLeadership, fmt.Errorf("%w: %w", ErrLostLeadership, err)
		}
		return nil, reasonSnapshot, fmt.Errorf("backup: take a snapshot: %w", err)
	}
	defer s.Close()
	// The name is the file's own index and term, as `metactl snapshot inspect` and `metad restore`
	// report them (the state machine's last entry; Raft's snapshot index may be past it, by
	// entries such as barriers that never reach the state machine): read from the header first.
	in := &guardedReader{ctx: ctx, r: s, leads: l.src.IsLeader}
	br := bufio.NewReaderSize(in, 1<<20)
	head, _ := br.Peek(maxHeader)
	sr, err := snapshot.NewReader(bytes.NewReader(head))
	switch {
	case in.err != nil:
		return readFailure(in.err)
	case err != nil:
		return nil, reasonVerify, fmt.Errorf("backup: the snapshot does not verify: %w: %w", ha.ErrInvalidSnapshot, err)
	}
	h := sr.Header()
	f := File{Name: Name(h.GetIndex(), h.GetTerm(), t), Index: h.GetIndex(), Term: h.GetTerm(), Time: t.UTC().Truncate(time.Millisecond)}
	f.Path = filepath.Join(l.cfg.Dir, f.Name)
	tmp := f.Path + TempSuffix
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: create %s: %w", tmp, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	// Through br's 1 MiB buffer alone, whatever the size of the state (the writer is wrapped so
	// that the file's ReadFrom does not take over with buffers of its own).
	n, err := br.WriteTo(struct{ io.Writer }{out})
	switch {
	case in.err != nil:
		return readFailure(in.err)
	case err != nil:
		return nil, reasonWrite, fmt.Errorf("backup: write %s: %w", tmp, err)
	}
	if err := out.Sync(); err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: fsync %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: close %s: %w", tmp, err)
	}
	if s.Size > 0 && n != s.Size {
		return nil, reasonVerify, fmt.Errorf("backup: %s: %w: streamed %d bytes of a %d-byte snapshot: %w",
			tmp, ha.ErrInvalidSnapshot, n, s.Size, snapshot.ErrTruncated)
	}
	info, reason, err := verify(tmp)
	if err != nil {
		return nil, reason, err
	}
	if !l.src.IsLeader() {
		return nil, reasonLeadership, ErrLostLeadership
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: rename %s: %w", tmp, err)
	}
	renamed = true
	if err := syncDir(l.cfg.Dir); err != nil {
		// The file is whole and verified under its name; only its directory entry may not be durable.
		l.log.Warn("backup: written, but the directory could not be fsynced", "file", f.Name, "err", err)
	}
	f.Size = n
	return &Result{File: f, Objects: info.Objects, Tenants: len(info.Tenants)}, "", nil
}

// maxHeader bounds the bytes read ahead for the file's header (its magic, version and header frame).
const maxHeader = 64 << 10

// readFailure is the reason and error of a snapshot stream that could not be read.
func readFailure(err error) (*Result, string, error) {
	if errors.Is(err, ErrLostLeadership) {
		return nil, reasonLeadership, err
	}
	return nil, reasonSnapshot, fmt.Errorf("backup: read the snapshot: %w", err)
}

// verify reads the whole file at path with snapshot.Inspect. A file that does not verify gives
// reasonVerify and an error wrapping ha.ErrInvalidSnapshot; one that cannot be read, reasonWrite.
func verify(path string) (*snapshot.Info, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, reasonWrite, fmt.Errorf("backup: read back %s: %w", path, err)
	}
	defer f.Close()
	info, err := snapshot.Inspect(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		if snapshot.Damaged(err) {
			return nil, reasonVerify, fmt.Errorf("backup: %s does not verify: %w: %w", path, ha.ErrInvalidSnapshot, err)
		}
		return nil, reasonWrite, fmt.Errorf("backup: read back %s: %w", path, err)
	}
	return info, "", nil
}

// guardedReader is not safe for concurrent use. It reads r while ctx lasts and leads reports
// true, and keeps the first error of its own or of r (io.EOF is no error).
type guardedReader struct {
	ctx   context.Context
	r     io.Reader
	leads func() bool
	err   error
}

func (g *guardedReader) Read(p []byte) (int, error) {
	if g.err == nil {
		switch {
		case g.ctx.Err() != nil:
			g.err = g.ctx.Err()
		case !g.leads():
			g.err = ErrLostLeadership
		}
	}
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		g.err = err
	}
	return n, err
}
