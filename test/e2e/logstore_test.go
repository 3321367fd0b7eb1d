package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"metad/client"
)

// TestKilledDuringAppendsRejoins: the Raft log on raft-wal (the default for a new data dir) under
// kill -9 while writes stream in. A follower is killed and the tail of its last segment file torn
// (the last bytes it wrote zeroed, as a crash in the middle of a write leaves them); it restarts,
// recovers to the last whole record and catches up. Then the leader is killed during appends and
// restarts. Every acknowledged put is then in every member's own state.
func TestKilledDuringAppendsRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "60s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	mountMemory(t, ctx, cl, "wal", 1<<30)

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d-%05d", w, i)
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := cl.Put(pctx, "", k, 4096, nil)
				pcancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitUntil(t, 30*time.Second, "puts before the first kill", func() bool { return count() >= 200 })

	var follower *Proc
	for _, p := range c.Nodes {
		if p != leader {
			follower = p
			break
		}
	}
	c.Kill(follower)
	torn := tearWALTail(t, follower.DataDir)
	t.Logf("killed follower %s during appends and tore %d bytes off its last segment", follower.Name, torn)
	before := count()
	waitUntil(t, 30*time.Second, "puts with the follower down", func() bool { return count() >= before+100 })
	c.Start(follower)

	before = count()
	waitUntil(t, 30*time.Second, "puts after the follower's restart", func() bool { return count() >= before+100 })
	c.Kill(leader)
	t.Logf("killed leader %s during appends", leader.Name)
	before = count()
	waitUntil(t, 60*time.Second, "puts under a new leader", func() bool { return count() >= before+100 })
	c.Start(leader)
	before = count()
	waitUntil(t, 30*time.Second, "puts after the old leader's restart", func() bool { return count() >= before+100 })
	close(stop)
	wg.Wait()

	// Every member, the two restarted ones included, holds every acknowledged put in its own state.
	keys := append([]string(nil), acked...)
	for _, p := range c.Nodes {
		own, err := client.New(client.Config{Endpoints: []string{p.Client}})
		if err != nil {
			t.Fatal(err)
		}
		defer own.Close()
		last := keys[len(keys)-1]
		waitUntil(t, 30*time.Second, p.Name+" caught up", func() bool {
			ok, err := own.Exist(ctx, "", last, client.Stale())
			return err == nil && ok
		})
		var missing []string
		for _, k := range keys {
			if ok, err := own.Exist(ctx, "", k, client.Stale()); err != nil || !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("%s lacks %d of %d acknowledged puts, e.g. %v", p.Name, len(missing), len(keys), missing[:min(5, len(missing))])
		}
	}
	t.Logf("%d acknowledged puts on every member after a follower killed with a torn tail and a leader killed", len(keys))
}

// tearWALTail zeroes the last bytes written to the newest segment file of a stopped member's
// raft-wal log (segment files are preallocated: what follows the last record is zeros), as a
// crash in the middle of a write leaves a record half on disk. It returns how many bytes it
// zeroed.
func tearWALTail(t *testing.T, dataDir string) int {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no raft-wal segment in %s (%v): is the member on raft-wal?", dataDir, err)
	}
	sort.Strings(segs) // named by base index and id, zero-padded: the last is the tail
	tail := segs[len(segs)-1]
	b, err := os.ReadFile(tail)
	if err != nil {
		t.Fatal(err)
	}
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	if end == 0 {
		t.Fatalf("%s holds nothing", tail)
	}
	n := min(24, end/2)
	f, err := os.OpenFile(tail, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), int64(end-n)); err != nil {
		t.Fatal(err)
	}
	return n
}
