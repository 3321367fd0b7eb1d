package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/backup"
	"metad/datadir"
	"metad/ha"
)

// BackupConfig is a plain value: the part of Config for scheduled backups (package backup, docs/operations.md,
// "Scheduled backups"): with BackupDir set, the member writes a verified snapshot file there every
// BackupInterval while it leads and keeps the newest BackupRetain; with BackupRestoreOnEmpty too,
// an empty data dir of a member that bootstraps a cluster of itself alone first gets the newest
// backup that verifies.
type BackupConfig struct {
	BackupDir            string
	BackupInterval       time.Duration
	BackupRetain         int
	BackupRestoreOnEmpty bool
}

func defaultBackupConfig() BackupConfig {
	bc := backup.DefaultConfig()
	return BackupConfig{BackupInterval: bc.Interval, BackupRetain: bc.Retain}
}

func (c *BackupConfig) backupFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.BackupDir, "backup-dir", c.BackupDir, "directory for scheduled backups: while this member leads, a verified snapshot file metad-<index>-<term>-<UTC time>.snap every --backup-interval (empty: off). Keep it off the data dir's disk")
	fs.DurationVar(&c.BackupInterval, "backup-interval", c.BackupInterval, "how often the leader writes a backup into --backup-dir (at least 1s)")
	fs.IntVar(&c.BackupRetain, "backup-retain", c.BackupRetain, "backups kept in --backup-dir: the oldest beyond this many are deleted (1 to 10000); files not named as backups are never touched")
	fs.BoolVar(&c.BackupRestoreOnEmpty, "backup-restore-on-empty", c.BackupRestoreOnEmpty, "when the data dir is empty and this member bootstraps a new cluster of itself alone (--initial-cluster-state new), first restore the newest backup in --backup-dir that verifies; off by default")
}

// validateBackup checks the backup settings; dataDir is --data-dir.
func (c *BackupConfig) validateBackup(dataDir string) []error {
	var errs []error
	if c.BackupInterval < backup.MinInterval {
		errs = append(errs, fmt.Errorf("backup-interval: at least %s, got %s", backup.MinInterval, c.BackupInterval))
	}
	if c.BackupRetain < 1 || c.BackupRetain > backup.MaxRetain {
		errs = append(errs, fmt.Errorf("backup-retain: want 1 to %d, got %d", backup.MaxRetain, c.BackupRetain))
	}
	if c.BackupDir == "" {
		if c.BackupRestoreOnEmpty {
			errs = append(errs, errors.New("backup-restore-on-empty: needs backup-dir, the directory it restores from"))
		}
		return errs
	}
	if within(c.BackupDir, dataDir) {
		errs = append(errs, fmt.Errorf("backup-dir %q: must not be the data dir or inside it (%q): a backup must outlive the data dir, and a data dir holding backups is never empty", c.BackupDir, dataDir))
	}
	return errs
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (c *BackupConfig) backupConfig() backup.Config {
	return backup.Config{Dir: c.BackupDir, Interval: c.BackupInterval, Retain: c.BackupRetain}
}

// autoRestore restores the newest verified backup into the data dir before the node opens it, when
// --backup-restore-on-empty asks and it is safe (backup.RestoreOnEmpty says when); hc is the node's
// config as serve builds it.
func autoRestore(cfg Config, hc ha.Config, log *slog.Logger) error {
	if cfg.BackupDir == "" || !cfg.BackupRestoreOnEmpty {
		return nil
	}
	sc, err := storeConfig(cfg.LeaseTTL)
	if err != nil {
		return err
	}
	_, err = backup.RestoreOnEmpty(backup.RestoreOptions{Dir: cfg.BackupDir, Bootstrap: hc.Bootstrap, RestoreOptions: datadir.RestoreOptions{
		DataDir: cfg.DataDir, Name: cfg.Name, Peers: hc.InitialCluster, Store: sc, LogStore: cfg.LogStore}}, log)
	if err != nil {
		return fmt.Errorf("backup-restore-on-empty: %w", err)
	}
	return nil
}

// newBackupLoop returns the backup loop of cfg over node, its metrics on reg; nil without
// --backup-dir.
func newBackupLoop(cfg Config, node *ha.Node, reg prometheus.Registerer, log *slog.Logger) (*backup.Loop, error) {
	if cfg.BackupDir == "" {
		return nil, nil
	}
	return backup.New(cfg.backupConfig(), node, reg, log)
}
