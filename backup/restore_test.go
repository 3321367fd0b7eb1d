package backup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"metad/datadir"
	"metad/ha"
)

var alone = []ha.Peer{{Name: "n1", PeerAddr: "127.0.0.1:7101"}}

// backupDir writes the golden snapshot under the names of backups at each time (the newest last),
// and corrupt copies at the times of corrupt, and returns the directory.
func backupDir(t *testing.T, good []time.Time, corrupt []time.Time) string {
	t.Helper()
	data, info := goldenBytes(t)
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0x5a
	dir := t.TempDir()
	for _, at := range good {
		if err := os.WriteFile(filepath.Join(dir, Name(info.Index, info.Term, at)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range corrupt {
		if err := os.WriteFile(filepath.Join(dir, Name(info.Index+1, info.Term, at)), bad, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func restoreOptions(dir, dataDir string, peers []ha.Peer) RestoreOptions {
	return RestoreOptions{Dir: dir, Bootstrap: true, RestoreOptions: datadir.RestoreOptions{DataDir: dataDir, Name: "n1", Peers: peers}}
}

// TestRestoreOnEmptyTakesTheNewestThatVerifies: a newer backup that does not verify is passed over;
// the data dir gets the newest good one, as `metad restore` makes it.
func TestRestoreOnEmptyTakesTheNewestThatVerifies(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	dir := backupDir(t, []time.Time{t0, t0.Add(time.Hour)}, []time.Time{t0.Add(2 * time.Hour)})
	_, info := goldenBytes(t)
	dataDir := filepath.Join(t.TempDir(), "n1")
	out, err := RestoreOnEmpty(restoreOptions(dir, dataDir, alone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Restored == nil || !out.Restored.Time.Equal(t0.Add(time.Hour)) || out.Skipped != "" {
		t.Fatalf("outcome %+v, want the backup of %s", out, t0.Add(time.Hour))
	}
	if len(out.Refused) != 1 || !out.Refused[0].Time.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("passed over %v, want the corrupt newest", out.Refused)
	}
	if out.Header.GetObjects() != info.Objects || out.Header.GetIndex() != info.Index {
		t.Fatalf("header %v, want %d objects at index %d", out.Header, info.Objects, info.Index)
	}
	for _, p := range []string{ha.WALDir, ha.SnapshotsDir} {
		if _, err := os.Stat(filepath.Join(dataDir, p)); err != nil {
			t.Errorf("the restored data dir lacks %s: %v", p, err)
		}
	}
	// Restored once, the data dir is never touched again.
	before := names(t, dataDir)
	out, err = RestoreOnEmpty(restoreOptions(dir, dataDir, alone), nil)
	if err != nil || out.Restored != nil || !strings.Contains(out.Skipped, "the data dir holds") {
		t.Fatalf("a second start: %+v %v", out, err)
	}
	if after := names(t, dataDir); len(after) != len(before) {
		t.Fatalf("the data dir changed: %v -> %v", before, after)
	}
}

// TestRestoreOnEmptyOnlyWhenSafe: nothing is restored, and nothing written, into a data dir that
// holds anything, for a member that joins an existing cluster, for a member of a multi-member new
// cluster, or when there is no backup.
func TestRestoreOnEmptyOnlyWhenSafe(t *testing.T) {
	dir := backupDir(t, []time.Time{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, nil)
	three := []ha.Peer{alone[0], {Name: "n2", PeerAddr: "127.0.0.1:7102"}, {Name: "n3", PeerAddr: "127.0.0.1:7103"}}
	used := t.TempDir()
	writeFiles(t, used, "lost+found/")
	for _, tc := range []struct {
		name    string
		o       RestoreOptions
		skipped string
	}{
		{"a data dir that holds something", restoreOptions(dir, used, alone), "the data dir holds lost+found"},
		{"joining an existing cluster", func() RestoreOptions {
			o := restoreOptions(dir, filepath.Join(t.TempDir(), "n1"), alone)
			o.Bootstrap = false
			return o
		}(), "joins an existing cluster"},
		{"a member of a new three-member cluster", restoreOptions(dir, filepath.Join(t.TempDir(), "n1"), three), "the new cluster is not this member alone (--initial-cluster names 3)"},
		{"a cluster that does not name this member alone", restoreOptions(dir, filepath.Join(t.TempDir(), "n1"), three[1:2]), "names 1)"},
		{"no backup", restoreOptions(filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "n1"), alone), "holds no backup"},
	} {
		out, err := RestoreOnEmpty(tc.o, nil)
		if err != nil || out.Restored != nil || !strings.Contains(out.Skipped, tc.skipped) {
			t.Errorf("%s: %+v %v, want skipped: %q", tc.name, out, err, tc.skipped)
			continue
		}
		if tc.o.DataDir == used {
			if n := names(t, used); len(n) != 1 {
				t.Errorf("%s: the data dir changed: %v", tc.name, n)
			}
		} else if _, err := os.Stat(tc.o.DataDir); !os.IsNotExist(err) {
			t.Errorf("%s: the data dir was created (%v)", tc.name, err)
		}
	}
}

// TestRestoreOnEmptyRefusesWhenNoneVerifies: backups that all fail verification give an error, and
// no data dir, rather than a new, empty cluster in place of the one they describe.
func TestRestoreOnEmptyRefusesWhenNoneVerifies(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	dir := backupDir(t, nil, []time.Time{t0, t0.Add(time.Hour)})
	dataDir := filepath.Join(t.TempDir(), "n1")
	out, err := RestoreOnEmpty(restoreOptions(dir, dataDir, alone), nil)
	if !errors.Is(err, ErrNoneVerifies) || out != nil {
		t.Fatalf("%+v %v, want ErrNoneVerifies", out, err)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("the data dir was created (%v)", err)
	}
}
