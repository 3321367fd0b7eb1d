package ha

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"metad/fsm"
	"metad/store"
)

var updateBoltFixture = flag.Bool("update-boltdb-fixture", false, "rewrite "+boltFixture+" from a fresh raft-boltdb node")

// boltFixture is a data dir that a single-node cluster of raft-boltdb wrote (raft.db, snapshots/):
// a segment mounted and objects f-0..f-9 put, through the log.
const boltFixture = "testdata/boltdb-datadir.tar.gz"

// TestBoltDataDirStillOpens: a data dir of raft-boltdb, as releases before raft-wal created, opens
// as what it is when no kind is asked for (and refuses to open as raft-wal), keeps its state, takes
// writes and keeps them across a restart.
func TestBoltDataDirStillOpens(t *testing.T) {
	if *updateBoltFixture {
		writeBoltFixture(t)
	}
	dir := t.TempDir()
	untarGz(t, boltFixture, dir)
	if kind, err := LogStoreOf(dir); err != nil || kind != LogStoreBolt {
		t.Fatalf("LogStoreOf the fixture: %q, %v", kind, err)
	}
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := testConfig("n1", dir)
	wrong.LogStore = LogStoreWAL
	if n, err := NewNode(wrong, f, nil); !errors.Is(err, ErrLogStoreKind) || !strings.Contains(err.Error(), "holds a boltdb log") {
		if n != nil {
			_ = n.Shutdown()
		}
		t.Fatalf("a raft-boltdb data dir opened as raft-wal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, WALDir)); err == nil {
		t.Fatal("the refused open left a wal/ in the data dir")
	}

	c := &testCluster{t: t, nodes: map[string]*Node{}, cfgs: map[string]Config{"n1": testConfig("n1", dir)}}
	t.Cleanup(c.stopAll)
	n := c.start("n1")
	if k := n.LogStoreKind(); k != LogStoreBolt {
		t.Fatalf("log store %q, want %q", k, LogStoreBolt)
	}
	if _, ok := n.LogStoreStats(); !ok {
		t.Fatal("no bolt stats from a raft-boltdb node")
	}
	c.waitLeader()
	for i := range 10 {
		if !c.readable(n, fmt.Sprintf("f-%d", i)) {
			t.Fatalf("f-%d of the fixture not readable", i)
		}
	}
	c.put("after")
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, "n1")
	n = c.start("n1")
	c.waitLeader()
	if !c.readable(n, "after") || !c.readable(n, "f-9") {
		t.Fatal("a write to the raft-boltdb data dir did not survive a restart")
	}
}

// TestWALIsTheDefaultAndKept: a new data dir gets raft-wal, a restart reopens it with its log, and
// asking for raft-boltdb on it is refused.
func TestWALIsTheDefaultAndKept(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	n := c.nodes["n1"]
	if k := n.LogStoreKind(); k != LogStoreWAL {
		t.Fatalf("a new data dir's log store: %q, want %q", k, LogStoreWAL)
	}
	c.propose(mountCmd())
	c.put("k")
	dir := c.cfgs["n1"].DataDir
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, "n1")
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := c.cfgs["n1"]
	wrong.LogStore = LogStoreBolt
	if n, err := NewNode(wrong, f, nil); !errors.Is(err, ErrLogStoreKind) {
		if n != nil {
			_ = n.Shutdown()
		}
		t.Fatalf("a raft-wal data dir opened as raft-boltdb: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, RaftDBFile)); err == nil {
		t.Fatal("the refused open left a raft.db in the data dir")
	}
	n = c.start("n1")
	c.waitLeader()
	if !c.readable(n, "k") {
		t.Fatal("a write to the raft-wal data dir did not survive a restart")
	}
	// A second process (here: a second open) is refused at once, not left waiting.
	if _, err := OpenLogStores(dir, LogStoreAuto, NewRaftLogger(nil)); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("a second open of a data dir in use: %v, want ErrDataDirInUse", err)
	}
}

// writeBoltFixture writes boltFixture from a fresh single-node raft-boltdb cluster.
func writeBoltFixture(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.LogStore = LogStoreBolt })
	c.propose(mountCmd())
	for i := range 10 {
		c.put(fmt.Sprintf("f-%d", i))
	}
	dir := c.cfgs["n1"].DataDir
	if err := c.nodes["n1"].Shutdown(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, "n1")
	out, err := os.Create(boltFixture)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	tw := tar.NewWriter(zw)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), hdr.ModTime.Truncate(1e9)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = errors.Join(tw.Close(), zw.Close(), out.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// untarGz unpacks the gzipped tar file into dir.
func untarGz(t *testing.T, file, dir string) {
	t.Helper()
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q outside the data dir", file, hdr.Name)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWALSuffixTruncationSurvivesReopen: a follower whose uncommitted entries a new leader
// overwrites deletes the suffix of its log (DeleteRange up to the last index); its log must open
// again after that, with the entries below the cut and room to append after it. raft-wal v0.4.0
// marked the tail segment sealed without its index block, and every read of it after a reopen
// failed ("sealed segment has no index block").
func TestWALSuffixTruncationSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	hlog := NewRaftLogger(nil)
	entries := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
		}
		return out
	}
	s, err := OpenLogStores(dir, LogStoreWAL, hlog)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Log.StoreLogs(entries(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Log.DeleteRange(7, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Log.StoreLogs(entries(7, 8)); err != nil { // the new leader's entries
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenLogStores(dir, LogStoreAuto, hlog)
	if err != nil {
		t.Fatalf("reopen after a suffix truncation: %v", err)
	}
	defer s.Close()
	if last, err := s.Log.LastIndex(); err != nil || last != 8 {
		t.Fatalf("last index %d, %v; want 8", last, err)
	}
	for i := uint64(1); i <= 8; i++ {
		var l raft.Log
		if err := s.Log.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("entry %d", i) {
			t.Fatalf("entry %d after the reopen: %q, %v", i, l.Data, err)
		}
	}
	if err := s.Log.StoreLogs(entries(9, 9)); err != nil {
		t.Fatalf("append after the reopen: %v", err)
	}
}
