package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackupSettings: the backup settings have defaults, one name each for flag, environment and
// YAML, and bad values are refused with a message that names the setting.
func TestBackupSettings(t *testing.T) {
	none := func(string) string { return "" }
	c, err := loadConfig([]string{"--insecure"}, none, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.BackupDir != "" || c.BackupInterval != time.Hour || c.BackupRetain != 24 || c.BackupRestoreOnEmpty {
		t.Fatalf("defaults: %+v", c.BackupConfig)
	}
	file := filepath.Join(t.TempDir(), "metad.yaml")
	if err := os.WriteFile(file, []byte("backup-dir: /srv/backups\nbackup-interval: 10m\nbackup-restore-on-empty: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"METAD_BACKUP_RETAIN": "7"}
	c, err = loadConfig([]string{"--insecure", "--config", file, "--backup-interval", "15m"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.BackupDir != "/srv/backups" || c.BackupInterval != 15*time.Minute || c.BackupRetain != 7 || !c.BackupRestoreOnEmpty {
		t.Fatalf("from file, environment and flags: %+v", c.BackupConfig)
	}

	dataDir := filepath.Join(t.TempDir(), "n1")
	for want, args := range map[string][]string{
		"backup-interval: at least 1s, got 500ms":   {"--backup-dir", "b", "--backup-interval", "500ms"},
		"backup-interval: at least 1s, got -1h0m0s": {"--backup-interval", "-1h"},
		"backup-retain: want 1 to 10000, got 0":     {"--backup-dir", "b", "--backup-retain", "0"},
		"backup-retain: want 1 to 10000, got 20000": {"--backup-retain", "20000"},
		"backup-restore-on-empty: needs backup-dir": {"--backup-restore-on-empty"},
		"must not be the data dir or inside it":     {"--data-dir", dataDir, "--backup-dir", filepath.Join(dataDir, "backups")},
	} {
		_, err := loadConfig(append([]string{"--insecure"}, args...), none, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
	if _, err := loadConfig([]string{"--insecure", "--data-dir", dataDir, "--backup-dir", dataDir}, none, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "backup-dir") {
		t.Errorf("backup-dir = data-dir: %v", err)
	}
	if _, err := loadConfig([]string{"--insecure", "--data-dir", dataDir, "--backup-dir", dataDir + "-backups"}, none, io.Discard); err != nil {
		t.Errorf("a sibling of the data dir: %v", err)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/b/../b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/x/..b", "/x", true},
	} {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v", tc.path, tc.dir, got)
		}
	}
}
