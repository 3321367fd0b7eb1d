package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	"metad/proto/metadv1"
)

// localDisk is a worker's local SSD as metactl worker keeps it: a real directory with one file per
// offloaded object, named by its tenant and the hex of its key, written from nothing but the
// object's size and key (the worker simulates the data, not the disk).
type localDisk struct {
	dir      string
	capacity uint64
	endpoint string
	offload  bool
	id       client.UUID // the registration's segment, once mounted
}

// mountWait bounds how long mount waits for the cluster's feature level: a cluster just started
// refuses MountLocalDisk (FAILED_PRECONDITION) until every member has recorded its binary's level.
const mountWait = 30 * time.Second

// mount registers the disk (idempotent) and makes its directory, waiting up to mountWait while
// the cluster is below the command's feature level.
func (d *localDisk) mount(a *app, c *client.Client) error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("local disk: %w", err)
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

// write is the offload of one task: the object's file of its size, its key repeated.
func (d *localDisk) write(t *metadv1.ScheduledTask) error {
	p := d.path(t.GetTenant(), string(t.GetKey()))
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
			return err
		}
		left -= n
	}
	return f.Close()
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
