package main

import (
	"testing"
	"time"
)

// An op of the put bench is one object (PutStart through PutEnd): its count, rate and latency are
// per object, not per RPC. The fake takes writeDelay for each write call, so an object takes at
// least twice that.
func TestBenchPutCountsObjects(t *testing.T) {
	c := startCluster(t)
	c.writeDelay = 5 * time.Millisecond
	mountFor(t, c)
	for _, args := range [][]string{
		{"bench", "--op", "put", "--clients", "2", "--duration", "300ms"},
		{"bench", "--op", "put", "--clients", "2", "--duration", "300ms", "--batch", "4"},
	} {
		var res benchResult
		metactl(t, c.addr, append(args, "-o", "json")...).ok(t).json(t, &res)
		wantMs := 2 * float64(c.writeDelay) / 1e6
		if res.Errors != 0 || res.Puts == 0 || res.Ops != res.Puts || res.P50Ms < wantMs || res.OpUnit != "object" ||
			res.ObjectP50Ms != res.P50Ms || res.RPCs != 2*res.Ops/uint64(res.Batch) {
			t.Fatalf("bench %v: ops %d, puts %d, p50 %.3f ms (an object takes at least %.0f ms): %+v",
				args, res.Ops, res.Puts, res.P50Ms, wantMs, res)
		}
	}
}
