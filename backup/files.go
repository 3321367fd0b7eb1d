package backup

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The names of backup files (doc.go, "Names").
const (
	prefix     = "metad-"
	suffix     = ".snap"
	TempSuffix = ".tmp" // a backup being written: its final name and this
	timeLayout = "20060102T150405.000Z"
)

var (
	nameRE = regexp.MustCompile(`^metad-(\d{1,20})-(\d{1,20})-(\d{8}T\d{6}\.\d{3}Z)\.snap$`)
	tempRE = regexp.MustCompile(`^metad-\d{1,20}-\d{1,20}-\d{8}T\d{6}\.\d{3}Z\.snap\.tmp$`)
)

// File is a plain value: one backup file in a directory.
type File struct {
	Name  string    // its base name
	Path  string    // the directory joined with Name
	Index uint64    // the index of its header: the last entry its state applied
	Term  uint64    // the term of that entry
	Time  time.Time // when its snapshot was taken (UTC)
	Size  int64     // bytes
}

// Name is the file name of a backup of the snapshot at index and term, taken at t.
func Name(index, term uint64, t time.Time) string {
	return prefix + strconv.FormatUint(index, 10) + "-" + strconv.FormatUint(term, 10) + "-" + t.UTC().Format(timeLayout) + suffix
}

// ParseName reads a backup's file name; ok is false for any other name (a temp file included).
func ParseName(name string) (f File, ok bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return File{}, false
	}
	index, err1 := strconv.ParseUint(m[1], 10, 64)
	term, err2 := strconv.ParseUint(m[2], 10, 64)
	t, err3 := time.Parse(timeLayout, m[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return File{}, false
	}
	return File{Name: name, Index: index, Term: term, Time: t}, true
}

// newer orders backups newest first: by time, then index, then term, then name.
func newer(a, b File) int {
	return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(b.Index, a.Index), cmp.Compare(b.Term, a.Term), strings.Compare(b.Name, a.Name))
}

// List returns the backups in dir, newest first: the regular files named as Name names them. A
// directory that does not exist holds none.
func List(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: list %s: %w", dir, err)
	}
	var out []File
	for _, e := range entries {
		f, ok := ParseName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		f.Path, f.Size = filepath.Join(dir, f.Name), info.Size()
		out = append(out, f)
	}
	slices.SortFunc(out, newer)
	return out, nil
}

// Prune deletes the backups in dir beyond the newest keep (at least 1), and returns the ones it
// deleted, oldest last. Only backups are touched: every other file stays. A backup that is gone
// already (another member pruning a shared directory) is not an error.
func Prune(dir string, keep int) ([]File, error) {
	keep = max(keep, 1)
	files, err := List(dir)
	if err != nil || len(files) <= keep {
		return nil, err
	}
	var deleted []File
	var errs []error
	for _, f := range files[keep:] {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("backup: delete %s: %w", f.Path, err))
			continue
		}
		deleted = append(deleted, f)
	}
	if len(deleted) > 0 {
		if err := syncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return deleted, errors.Join(errs...)
}

// removeTemps deletes the temp files of backups in dir (left by a process that died writing one)
// and returns their names.
func removeTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: list %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !tempRE.MatchString(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("backup: delete %s: %w", e.Name(), err))
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	return nil
}
