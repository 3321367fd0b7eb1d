package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOnlineRestoreAtScale: a cluster holding RESTORE_N objects (default 1,000,000), loaded by
// metactl bench's batched preload, is saved; more objects are put; the file is restored online.
// Every member then holds the saved state again: the object count and the state digest of a stale
// save from each member's own port equal the file's, and so does the header's store digest, which
// each member's restore checked against the state it built before installing it.
func TestOnlineRestoreAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	n := 1_000_000
	if v := os.Getenv("RESTORE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("RESTORE_N=%q: want an object count", v)
		}
	}
	start := time.Now()
	// A long client ttl keeps the loader's segment (and so its objects) mounted after it exits;
	// no arenas, so that no grant changes the state after the last put.
	c := NewCluster(t, 3, "--client-ttl", "30m", "--no-arenas")
	cl := c.Client()
	c.Leader(cl, 30*time.Second)
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	awaitFeatureLevel(t, lctx, cl, 5) // chunked files and the store digest

	load := func(op string, keys int) {
		t.Helper()
		out, err := c.Metactl("--timeout", "60s", "bench", "--op", op, "--keys", strconv.Itoa(keys), "--batch", "256",
			"--clients", "1", "--conns", "1", "--duration", "100ms", "--size", "64", "--mount", strconv.Itoa(keys*8192))
		if err != nil {
			t.Fatalf("metactl bench --op %s --keys %d: %v\n%s", op, keys, err, out)
		}
	}
	load("exist", n)
	t.Logf("loaded %d objects: %s", n, time.Since(start))

	mark := time.Now()
	saved, doc := c.Save(nil)
	if doc.Objects != uint64(n) || doc.FileVersion != 2 || len(doc.StoreDigest) != 32 {
		t.Fatalf("the save: %d objects (want %d), file version %d, store digest %q", doc.Objects, n, doc.FileVersion, doc.StoreDigest)
	}
	t.Logf("saved: %s", time.Since(mark))

	load("exist", 1000) // another state: the restore must take it back
	if _, other := c.Save(nil); other.Objects != uint64(n)+1000 {
		t.Fatalf("after more puts the cluster holds %d objects, want %d", other.Objects, n+1000)
	}

	mark = time.Now()
	out, err := c.Metactl("snapshot", "restore", saved)
	if err != nil || !strings.Contains(out, fmt.Sprintf(": %d objects,", n)) {
		t.Fatalf("metactl snapshot restore: %v\n%s", err, out)
	}
	restoreTook := time.Since(mark)
	for _, p := range c.Nodes {
		path := c.waitDigest(p, doc.StateDigest, 120*time.Second)
		if got := c.Inspect(path); got.Objects != uint64(n) || got.StoreDigest != doc.StoreDigest {
			t.Fatalf("%s after the restore: %d objects, store digest %s; the file: %d, %s", p.Name, got.Objects, got.StoreDigest, n, doc.StoreDigest)
		}
	}
	t.Logf("online restore of %d objects: %s (%.2f s per million), every member checked: %s; whole test %s",
		n, restoreTook, restoreTook.Seconds()*1e6/float64(n), time.Since(mark), time.Since(start))
}
