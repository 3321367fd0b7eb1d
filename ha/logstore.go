package ha

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The Raft log and stable store of a data dir (docs/design.md, "The Raft log"). A data dir holds
// one of two kinds, chosen when it is created and kept for its life:
//
//   - raft-wal (LogStoreWAL, the default for a new data dir): <data-dir>/wal/, segment files the
//     log is appended to with one fsync per append, and wal-meta.db (bbolt) for the stable store
//     (term, vote) and the segment list, written only on a vote, a segment rotation or a
//     truncation;
//   - raft-boltdb (LogStoreBolt): <data-dir>/raft.db, one bbolt file for both, two fsyncs per
//     append (its pages, then its meta page). Data dirs created by releases before raft-wal hold it
//     and keep working.
//
// A data dir is never converted in place: a member moves from one kind to the other by leaving
// the cluster and joining again with an empty data dir, and catches up from the leader's snapshot
// (docs/operations.md, "Moving a member to another log store").

// Log store kinds (Config.LogStore).
const (
	// LogStoreAuto opens what the data dir holds, and creates raft-wal in an empty one.
	LogStoreAuto = ""
	// LogStoreWAL is hashicorp/raft-wal in <data-dir>/wal.
	LogStoreWAL = "wal"
	// LogStoreBolt is hashicorp/raft-boltdb/v2 in <data-dir>/raft.db.
	LogStoreBolt = "boltdb"
)

// LogStoreInmem is the kind of InmemLogStores: not a kind a data dir holds, nor one
// Config.LogStore names.
const LogStoreInmem = "inmem"

// WALDir is the raft-wal directory inside a data dir.
const WALDir = "wal"

// walLockFile, inside WALDir, is held (flock) by the process that has the WAL open: raft-wal's
// meta store would otherwise wait forever for a second process's bbolt lock.
const walLockFile = "LOCK"

// Errors of opening a data dir's log store.
var (
	// ErrLogStoreKind: the data dir holds another kind of log store than the one asked for.
	ErrLogStoreKind = errors.New("ha: the data dir holds another kind of Raft log store")
	// ErrDataDirInUse: another process has the data dir's log store open.
	ErrDataDirInUse = errors.New("ha: the data dir is in use by another process")
)

// ValidLogStore reports whether kind names a log store (or LogStoreAuto).
func ValidLogStore(kind string) bool {
	return kind == LogStoreAuto || kind == LogStoreWAL || kind == LogStoreBolt
}

// LogStoreOf reports the kind of log store dataDir holds, LogStoreAuto when it holds none. A data
// dir that holds both is refused: it was assembled by hand.
func LogStoreOf(dataDir string) (string, error) {
	bolt, err := exists(filepath.Join(dataDir, RaftDBFile))
	if err != nil {
		return "", err
	}
	w, err := exists(filepath.Join(dataDir, WALDir))
	if err != nil {
		return "", err
	}
	switch {
	case bolt && w:
		return "", fmt.Errorf("%w: %s holds both %s and %s/; keep one", ErrLogStoreKind, dataDir, RaftDBFile, WALDir)
	case bolt:
		return LogStoreBolt, nil
	case w:
		return LogStoreWAL, nil
	}
	return LogStoreAuto, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("ha: %w", err)
}

// LogStores is one data dir's Raft log and stable store (or, from InmemLogStores, a test's). Its stores are safe for concurrent use as
// raft.LogStore and raft.StableStore are; Close after Raft has stopped using them.
type LogStores struct {
	// Kind is LogStoreWAL, LogStoreBolt or LogStoreInmem.
	Kind   string
	Log    raft.LogStore
	Stable raft.StableStore

	bolt  *raftboltdb.BoltStore // LogStoreBolt
	wal   *wal.WAL              // LogStoreWAL
	flock *os.File              // LogStoreWAL: walLockFile, locked

	closeOnce sync.Once
	closeErr  error
}

// OpenLogStores opens (or, in an empty data dir, creates) dataDir's log store. want is the kind
// asked for: LogStoreAuto takes what the data dir holds (raft-wal for a new one); another kind must
// match what it holds (ErrLogStoreKind). A store another process holds is ErrDataDirInUse.
func OpenLogStores(dataDir, want string, log hclog.Logger) (*LogStores, error) {
	if !ValidLogStore(want) {
		return nil, fmt.Errorf("ha: log store %q: want %q or %q", want, LogStoreWAL, LogStoreBolt)
	}
	have, err := LogStoreOf(dataDir)
	if err != nil {
		return nil, err
	}
	kind := have
	switch {
	case have == LogStoreAuto && want == LogStoreAuto:
		kind = LogStoreWAL
	case have == LogStoreAuto:
		kind = want
	case want != LogStoreAuto && want != have:
		return nil, fmt.Errorf("%w: %s holds a %s log, not %s; a data dir keeps the kind it was created with: "+
			"to move this member, remove it from the cluster, empty its data dir and add it again (docs/operations.md)",
			ErrLogStoreKind, dataDir, have, want)
	}
	if kind == LogStoreBolt {
		path := filepath.Join(dataDir, RaftDBFile)
		b, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: lockWait}})
		if err != nil {
			if errors.Is(err, bolterrors.ErrTimeout) {
				return nil, fmt.Errorf("%w: %s is locked", ErrDataDirInUse, path)
			}
			return nil, fmt.Errorf("ha: open %s: %w", path, err)
		}
		return &LogStores{Kind: kind, Log: b, Stable: b, bolt: b}, nil
	}
	dir := filepath.Join(dataDir, WALDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("ha: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, walLockFile))
	if err != nil {
		return nil, err
	}
	w, err := wal.Open(dir, wal.WithLogger(log.Named("wal")))
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("ha: open the raft-wal log in %s: %w", dir, err)
	}
	return &LogStores{Kind: kind, Log: w, Stable: w, wal: w, flock: lock}, nil
}

// InmemLogStores is a log and stable store in memory (raft.InmemStore), for Config.LogStores:
// tests that run members without a log on disk, and the commit-round benchmark's floor of what is
// not the disk. It keeps everything appended until the value is dropped; Close does nothing.
func InmemLogStores() *LogStores {
	m := raft.NewInmemStore()
	return &LogStores{Kind: LogStoreInmem, Log: m, Stable: m}
}

// lockWait is how long opening a raft-boltdb store waits for another process's lock.
const lockWait = 2 * time.Second

// lockFile creates path if need be and takes an exclusive flock on it without waiting.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ha: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked", ErrDataDirInUse, path)
		}
		return nil, fmt.Errorf("ha: lock %s: %w", path, err)
	}
	return f, nil
}

// BoltStats returns the raft-boltdb store's counters (free and pending pages, the freelist's
// size, transactions); ok is false for raft-wal, which keeps no freelist.
func (s *LogStores) BoltStats() (st bbolt.Stats, ok bool) {
	if s.bolt == nil {
		return bbolt.Stats{}, false
	}
	return s.bolt.Stats(), true
}

// Close closes the stores (and lets another process open them); later calls return the first
// call's error.
func (s *LogStores) Close() error {
	s.closeOnce.Do(func() {
		if s.bolt != nil {
			s.closeErr = s.bolt.Close()
		}
		if s.wal != nil {
			s.closeErr = s.wal.Close()
		}
		if s.flock != nil {
			_ = s.flock.Close() // releases the flock
		}
	})
	return s.closeErr
}
