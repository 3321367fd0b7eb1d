package backup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestNames(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.FixedZone("X", 3600))
	name := Name(1024, 7, at)
	if name != "metad-1024-7-20260102T020405.678Z.snap" {
		t.Fatalf("Name = %q", name)
	}
	f, ok := ParseName(name)
	if !ok || f.Index != 1024 || f.Term != 7 || !f.Time.Equal(at.Truncate(time.Millisecond)) || f.Name != name {
		t.Fatalf("ParseName(%q) = %+v, %v", name, f, ok)
	}
	for _, other := range []string{
		"metad-20260101T000000Z.snap",                // a `metactl snapshot save` name from docs/operations.md
		"metad-1024-7-20260102T020405.678Z.snap.tmp", // a backup being written
		"metad-1024-7-20260102T020405Z.snap",
		"metad-x-7-20260102T020405.678Z.snap",
		"metad-1024-7-20261302T020405.678Z.snap", // month 13
		"metad-99999999999999999999-7-20260102T020405.678Z.snap",
		"xmetad-1024-7-20260102T020405.678Z.snap",
		"metad-1024-7-20260102T020405.678Z.snap.bak",
		"backup.snap",
	} {
		if f, ok := ParseName(other); ok {
			t.Errorf("ParseName(%q) = %+v, want no backup", other, f)
		}
	}
}

// writeFiles creates each name in dir (a name ending in / as a directory).
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if n[len(n)-1] == '/' {
			if err := os.Mkdir(p, 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestPruneKeepsTheNewestAndOnlyTouchesBackups: retention deletes the oldest backups beyond the
// count, newest by time even where an index is lower (a cluster restored from an older backup),
// and never a file or directory that is not a backup.
func TestPruneKeepsTheNewestAndOnlyTouchesBackups(t *testing.T) {
	dir := t.TempDir()
	backups := []string{
		"metad-500-3-20260101T000000.000Z.snap",
		"metad-600-3-20260101T010000.000Z.snap",
		"metad-700-4-20260101T020000.000Z.snap",
		"metad-40-2-20260101T030000.000Z.snap", // restored from an older backup: lower index, newer
		"metad-41-2-20260101T030000.000Z.snap", // same time: the higher index is newer
	}
	foreign := []string{
		"metad-20260101T000000Z.snap", // a manual save
		"notes.txt",
		"metad-1-1-20250101T000000.000Z.snap.tmp",
		"metad-2-1-20250101T000000.000Z.snap/", // a directory named as a backup
	}
	writeFiles(t, dir, append(slices.Clone(backups), foreign...)...)
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Name)
	}
	want := []string{backups[4], backups[3], backups[2], backups[1], backups[0]}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	deleted, err := Prune(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 3 || deleted[0].Name != backups[2] || deleted[2].Name != backups[0] {
		t.Fatalf("Prune deleted %v", deleted)
	}
	left := names(t, dir)
	wantLeft := append([]string{backups[3], backups[4]}, foreign...)
	for i, n := range wantLeft {
		wantLeft[i] = filepath.Clean(n)
	}
	slices.Sort(left)
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Fatalf("left %v, want %v", left, wantLeft)
	}
	if deleted, err := Prune(dir, 2); err != nil || len(deleted) != 0 {
		t.Fatalf("a second Prune: %v %v", deleted, err)
	}
	if files, err := List(filepath.Join(dir, "missing")); err != nil || files != nil {
		t.Fatalf("List of a missing directory: %v %v", files, err)
	}
}

func TestRemoveTempsOnlyRemovesBackupTemps(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "metad-1-1-20250101T000000.000Z.snap.tmp", "metad-1-1-20250101T000000.000Z.snap", "other.snap.tmp",
		"restore-123.snap.tmp")
	removed, err := removeTemps(dir)
	if err != nil || !slices.Equal(removed, []string{"metad-1-1-20250101T000000.000Z.snap.tmp"}) {
		t.Fatalf("removeTemps = %v, %v", removed, err)
	}
	if got := names(t, dir); len(got) != 3 {
		t.Fatalf("left %v", got)
	}
}
