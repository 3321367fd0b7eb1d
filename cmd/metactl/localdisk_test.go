package main

import (
	"errors"
	"os"
	"slices"
	"testing"

	"metad/proto/metadv1"
)

// TestLocalDiskMakesRoom: a worker's SSD holds at most its capacity of files; an offload past it
// removes the oldest files first and reports them by tenant, a rewritten key counts once, and a
// restarted worker finds its files in the directory, oldest first.
func TestLocalDiskMakesRoom(t *testing.T) {
	dir := t.TempDir()
	var reported [][]string
	d := &localDisk{dir: dir, capacity: 384, evicted: func(tenant string, keys []string) error {
		reported = append(reported, append([]string{tenant}, keys...))
		return nil
	}}
	if err := d.scan(); err != nil {
		t.Fatal(err)
	}
	task := func(tenant, key string, size uint64) *metadv1.ScheduledTask {
		return &metadv1.ScheduledTask{Tenant: tenant, Key: []byte(key), Size: size}
	}
	for _, tk := range []*metadv1.ScheduledTask{task("", "a", 100), task("t2", "b", 100), task("", "c", 100)} {
		if err := d.write(tk); err != nil {
			t.Fatal(err)
		}
	}
	if d.used != 384 || len(reported) != 0 {
		t.Fatalf("three 128-byte files: used %d, reported %v", d.used, reported)
	}
	// Not reported to the cluster yet: none of them is removed to make room.
	if err := d.write(task("", "early", 100)); err == nil || len(reported) != 0 {
		t.Fatalf("a write past the capacity before the batch was reported: %v, reported %v", err, reported)
	}
	d.settle()
	if err := d.write(task("", "c", 60)); err != nil { // a rewrite: 64 bytes in place of 128
		t.Fatal(err)
	}
	if d.used != 320 || len(reported) != 0 {
		t.Fatalf("after the rewrite of c: used %d, reported %v", d.used, reported)
	}
	if err := d.write(task("", "d", 200)); err != nil { // 256 bytes: a and b go
		t.Fatal(err)
	}
	if d.used != 320 || !slices.EqualFunc(reported, [][]string{{"", "a"}, {"t2", "b"}}, slices.Equal[[]string]) {
		t.Fatalf("after d: used %d, reported %v; want a, then b of t2", d.used, reported)
	}
	for key, want := range map[string]bool{"a": false, "c": true, "d": true} {
		if _, err := os.Stat(d.path("", key)); (err == nil) != want {
			t.Fatalf("file of %s: %v, want present %v", key, err, want)
		}
	}
	if err := d.write(task("", "huge", 385)); err == nil {
		t.Fatal("an object larger than the disk was written")
	}

	// A report that fails removes nothing: every file stays, counted, and the write fails.
	d.settle()
	d.evicted = func(string, []string) error { return errors.New("cluster unreachable") }
	if err := d.write(task("", "e", 300)); err == nil || d.used != 320 {
		t.Fatalf("a write whose report failed: %v, used %d; want an error and 320 bytes", err, d.used)
	}
	for _, key := range []string{"c", "d"} {
		if _, err := os.Stat(d.path("", key)); err != nil {
			t.Fatalf("file of %s after a failed report: %v", key, err)
		}
	}

	again := &localDisk{dir: dir, capacity: 384}
	if err := again.scan(); err != nil {
		t.Fatal(err)
	}
	if again.used != 320 || len(again.files) != 2 {
		t.Fatalf("a restarted worker finds %d files, %d bytes; want 2, 320", len(again.files), again.used)
	}
}
