package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"metad/datadir"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
)

// RestoreOptions is a plain value: the backup directory, whether the member would bootstrap a new
// cluster, and the member's data dir and new cluster as datadir.Restore takes them (its Snapshot is
// set here, to each backup tried).
type RestoreOptions struct {
	Dir       string // the backup directory
	Bootstrap bool   // the member would bootstrap a new cluster (--initial-cluster-state new)
	datadir.RestoreOptions
}

// Outcome is a plain value: what RestoreOnEmpty did.
type Outcome struct {
	Restored *File                   // the backup restored; nil when none was
	Header   *metadv1.SnapshotHeader // its header (nil when none was restored)
	Refused  []File                  // newer backups that did not verify, passed over
	Skipped  string                  // why nothing was restored ("" when a backup was)
}

// RestoreOnEmpty restores the newest backup in o.Dir that verifies into o.DataDir, through
// datadir.Restore, when all of these hold (doc.go, "Auto-restore"): the data dir is empty or
// missing, the member would bootstrap (o.Bootstrap), its new cluster is itself alone (o.Peers names
// only o.Name), and the directory holds a backup. Otherwise it changes nothing and says why in
// Outcome.Skipped. A backup that does not verify is passed over for the next older one; when
// none verifies the error wraps ErrNoneVerifies (the data dir is left as it was, and the caller
// should not start a new, empty cluster in place of the one the backups describe). Every other
// failure of datadir.Restore is returned as it is, the data dir again left as it was.
func RestoreOnEmpty(o RestoreOptions, log *slog.Logger) (*Outcome, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("backup_dir", o.Dir)
	skip := func(level slog.Level, why string) (*Outcome, error) {
		log.Log(context.Background(), level, "backup restore on empty: nothing restored: "+why, "data_dir", o.DataDir)
		return &Outcome{Skipped: why}, nil
	}
	holds, err := dirHolds(o.DataDir)
	if err != nil {
		return nil, err
	}
	if holds != "" {
		return skip(slog.LevelInfo, fmt.Sprintf("the data dir holds %s; only an empty data dir is restored into", holds))
	}
	if !o.Bootstrap {
		return skip(slog.LevelInfo, "this member joins an existing cluster (--initial-cluster-state existing) and catches up from its leader")
	}
	files, err := List(o.Dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return skip(slog.LevelWarn, "the backup directory holds no backup; starting as a new, empty cluster")
	}
	if len(o.Peers) != 1 || o.Peers[0].Name != o.Name {
		return skip(slog.LevelWarn, fmt.Sprintf("the new cluster is not this member alone (--initial-cluster names %d), and a member restores on its own only when it bootstraps alone; "+
			"restore every member with `metad restore --snapshot %s` (the same file for each), or start one member alone to restore and add the others",
			len(o.Peers), files[0].Path))
	}
	out := &Outcome{}
	for _, f := range files {
		ro := o.RestoreOptions
		ro.Snapshot = f.Path
		h, err := datadir.Restore(ro, log)
		if errors.Is(err, ha.ErrInvalidSnapshot) {
			log.Warn("backup restore on empty: a backup does not verify; trying the next older one", "file", f.Name, "err", err)
			out.Refused = append(out.Refused, f)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("backup: restore %s: %w", f.Path, err)
		}
		out.Restored, out.Header = &f, h
		log.Info("backup restore on empty: restored the newest backup that verifies", "file", f.Name, "index", h.GetIndex(),
			"term", h.GetTerm(), "objects", h.GetObjects(), "tenants", h.GetTenants(), "segments", h.GetSegments(),
			"passed_over", len(out.Refused), "data_dir", o.DataDir)
		return out, nil
	}
	return nil, fmt.Errorf("%w: %d backups in %s, none verifies; move them aside to start a new, empty cluster", ErrNoneVerifies, len(files), o.Dir)
}

// dirHolds names what dir holds ("" when it is empty or does not exist).
func dirHolds(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("backup: data dir: %w", err)
	case len(entries) == 0:
		return "", nil
	case len(entries) == 1:
		return entries[0].Name(), nil
	}
	return entries[0].Name() + " and more", nil
}
