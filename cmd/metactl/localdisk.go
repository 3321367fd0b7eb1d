package main

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	"metad/proto/metadv1"
)

// localDisk is a worker's local SSD as metactl worker keeps it: a real directory with one file per
// offloaded object, named by its tenant and the hex of its key, written from nothing but the
// object's size and key (the worker simulates the data, not the disk). It holds at most capacity
// bytes of files (each counted rounded up to 64, as the registration accounts them): an offload
// that would pass it first removes the oldest files and reports them (EvictDiskReplica), so the
// cluster has the room for the new one and no replica names a file that is gone. Only files the
// cluster was told of (settle, once their NotifyOffload was sent) are removed: a file of the
// batch being written is not a replica yet, and its report would record one with no file.
type localDisk struct {
	dir      string
	capacity uint64
	endpoint string
	offload  bool
	id       client.UUID // the registration's segment, once mounted
	// evicted reports files removed (client.EvictDiskReplica); nil: not reported.
	evicted func(tenant string, keys []string) error

	used    uint64
	files   map[diskFile]uint64 // file -> its seq in order
	order   []diskEntry         // oldest first; an entry whose seq files no longer holds is stale
	seq     uint64
	settled uint64 // the files up to this seq were reported to the cluster
}

// diskFile names one object's file; diskEntry is its place in the write order.
type (
	diskFile  struct{ tenant, key string }
	diskEntry struct {
		f    diskFile
		seq  uint64
		size uint64
	}
)

// mountWait bounds how long mount waits for the cluster's feature level: a cluster just started
// refuses MountLocalDisk (FAILED_PRECONDITION) until every member has recorded its binary's level.
const mountWait = 30 * time.Second

// mount registers the disk (idempotent) and makes its directory, waiting up to mountWait while
// the cluster is below the command's feature level.
func (d *localDisk) mount(a *app, c *client.Client) error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("local disk: %w", err)
	}
	if d.files == nil {
		if err := d.scan(); err != nil {
			return fmt.Errorf("local disk: %w", err)
		}
	}
	deadline := time.Now().Add(mountWait)
	for {
		ctx, cancel := a.callCtx()
		id, _, err := c.MountLocalDisk(ctx, d.capacity, d.endpoint, d.offload)
		cancel()
		if err == nil {
			d.id = id
			return nil
		}
		if status.Code(err) != codes.FailedPrecondition || time.Now().After(deadline) {
			return err
		}
		select {
		case <-a.ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond): // the members record their levels within a second or two
		}
	}
}

// path is the file of tenant's key.
func (d *localDisk) path(tenant, key string) string {
	return filepath.FromSlash(client.FilePath(filepath.ToSlash(d.dir), tenant, key))
}

// scan indexes the files already in the directory (a restarted worker), oldest first by
// modification time, so that they count against the capacity and go first.
func (d *localDisk) scan() error {
	d.files = map[diskFile]uint64{}
	type found struct {
		f    diskFile
		size uint64
		mod  time.Time
	}
	var all []found
	tenants, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, td := range tenants {
		tenant, err := hex.DecodeString(td.Name())
		if err != nil || !td.IsDir() {
			continue
		}
		keys, err := os.ReadDir(filepath.Join(d.dir, td.Name()))
		if err != nil {
			return err
		}
		for _, kf := range keys {
			key, err := hex.DecodeString(kf.Name())
			info, ierr := kf.Info()
			if err != nil || ierr != nil || !info.Mode().IsRegular() {
				continue
			}
			all = append(all, found{diskFile{string(tenant), string(key)}, uint64(info.Size()), info.ModTime()})
		}
	}
	slices.SortStableFunc(all, func(a, b found) int { return a.mod.Compare(b.mod) })
	for _, x := range all {
		d.add(x.f, x.size)
	}
	d.settle() // an earlier run reported them, or they are no replica and reports of them change nothing
	return nil
}

// settle marks every file written so far as reported to the cluster: the worker calls it after
// each batch of tasks (client.Client.RunTasksWith sends the batch's NotifyOffload before it
// returns).
func (d *localDisk) settle() { d.settled = d.seq }

// add records f's file of size bytes as the newest.
func (d *localDisk) add(f diskFile, size uint64) {
	d.seq++
	d.files[f] = d.seq
	size = (size + 63) &^ 63
	d.order = append(d.order, diskEntry{f: f, seq: d.seq, size: size})
	d.used += size
}

// forget drops f's record (its file removed or rewritten) and returns the size it counted; false
// when it has none. Stale entries of the order are compacted away once they outnumber the files.
func (d *localDisk) forget(f diskFile) (uint64, bool) {
	seq, ok := d.files[f]
	if !ok {
		return 0, false
	}
	delete(d.files, f)
	var size uint64
	if i, found := slices.BinarySearchFunc(d.order, seq, func(e diskEntry, s uint64) int { return cmp.Compare(e.seq, s) }); found {
		size = d.order[i].size
		d.used -= size
	}
	if len(d.order) > 2*len(d.files)+64 {
		d.order = slices.DeleteFunc(d.order, func(e diskEntry) bool { return d.files[e.f] != e.seq })
	}
	return size, true
}

// makeRoom removes the oldest reported files until size more bytes fit in the capacity. It reports
// them (by tenant) before it removes them, so that no replica names a file that is gone: a failed
// report removes nothing. A file the cluster no longer names (its object overwritten or removed)
// is reported all the same: the answer says so, and nothing changes.
func (d *localDisk) makeRoom(size uint64) error {
	size = (size + 63) &^ 63
	if size > d.capacity {
		return fmt.Errorf("local disk: an object of %d bytes is larger than the disk (%d bytes)", size, d.capacity)
	}
	var victims []diskEntry
	freed := uint64(0)
	for i := 0; d.used-freed+size > d.capacity && i < len(d.order); i++ {
		e := d.order[i]
		if d.files[e.f] != e.seq {
			continue // stale: rewritten since
		}
		if e.seq > d.settled {
			break // this batch's own files: the rest of the order is newer still
		}
		victims = append(victims, e)
		freed += e.size
	}
	if d.used-freed+size > d.capacity {
		return fmt.Errorf("local disk: full (%d of %d bytes) of files whose offloads are not reported yet", d.used, d.capacity)
	}
	if d.evicted != nil {
		gone := map[string][]string{}
		var tenants []string
		for _, e := range victims {
			if _, ok := gone[e.f.tenant]; !ok {
				tenants = append(tenants, e.f.tenant)
			}
			gone[e.f.tenant] = append(gone[e.f.tenant], e.f.key)
		}
		for _, tenant := range tenants {
			if err := d.evicted(tenant, gone[tenant]); err != nil {
				return fmt.Errorf("local disk: report of %d files to remove: %w", len(gone[tenant]), err)
			}
		}
	}
	var rmErr error
	for _, e := range victims {
		d.forget(e.f)
		if err := os.Remove(d.path(e.f.tenant, e.f.key)); err != nil && !os.IsNotExist(err) && rmErr == nil {
			rmErr = err // reported already: the file is no replica any more, whatever became of it
		}
	}
	return rmErr
}

// write is the offload of one task: the object's file of its size, its key repeated, after the
// oldest files made room for it.
func (d *localDisk) write(t *metadv1.ScheduledTask) error {
	df := diskFile{t.GetTenant(), string(t.GetKey())}
	old, had := d.forget(df) // a file of the key's earlier object is rewritten
	if err := d.makeRoom(t.GetSize()); err != nil {
		if had {
			d.add(df, old) // still there, as it was
		}
		return err
	}
	p := d.path(df.tenant, df.key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	pattern := t.GetKey()
	if len(pattern) == 0 {
		pattern = []byte{0}
	}
	chunk := make([]byte, 0, 64<<10)
	for len(chunk)+len(pattern) <= cap(chunk) {
		chunk = append(chunk, pattern...)
	}
	if len(chunk) == 0 { // a key longer than the chunk
		chunk = pattern
	}
	for left := t.GetSize(); left > 0; {
		n := min(left, uint64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			_ = f.Close()
			_ = os.Remove(p) // a partial file is no copy: the task fails, and nothing is left untracked
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(p)
		return err
	}
	d.add(df, t.GetSize())
	return nil
}

// read is the promotion of one task: the object's file read whole (its size checked) into the
// memory replica placed for it, which a simulated worker does not write.
func (d *localDisk) read(t *metadv1.ScheduledTask, _ *metadv1.Replica) error {
	p := d.path(t.GetTenant(), string(t.GetKey()))
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if uint64(fi.Size()) != t.GetSize() {
		return fmt.Errorf("%s holds %d bytes, the object %d", p, fi.Size(), t.GetSize())
	}
	_, err = os.ReadFile(p)
	return err
}
