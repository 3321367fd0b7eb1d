package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

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

// mount registers the disk (idempotent) and makes its directory.
func (d *localDisk) mount(a *app, c *client.Client) error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("local disk: %w", err)
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	id, _, err := c.MountLocalDisk(ctx, d.capacity, d.endpoint, d.offload)
	if err != nil {
		return err
	}
	d.id = id
	return nil
}

// path is the file of tenant's key.
func (d *localDisk) path(tenant, key string) string {
	if tenant == "" {
		tenant = "default"
	}
	return filepath.Join(d.dir, hex.EncodeToString([]byte(tenant)), hex.EncodeToString([]byte(key)))
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
