package main

import (
	"runtime/debug"
	"testing"
)

// TestSetGC: the flag's target and limit are set; the environment's GOGC and GOMEMLIMIT win; a
// limit of 0 is half the machine's memory.
func TestSetGC(t *testing.T) {
	oldGC, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(oldGC)
		debug.SetMemoryLimit(oldLimit)
	})
	none := func(string) string { return "" }
	if gc, limit := setGC(400, 1<<30, none); gc != 400 || limit != 1<<30 {
		t.Fatalf("flags: gc %d limit %d, want 400 and 1 GiB", gc, limit)
	}
	if gc, limit := setGC(300, 0, none); gc != 300 || (machineMemory() > 0 && limit != int64(machineMemory()/2)) {
		t.Fatalf("derived limit: gc %d limit %d, machine %d", gc, limit, machineMemory())
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(2 << 30)
	env := func(k string) string { return map[string]string{"GOGC": "100", "GOMEMLIMIT": "2GiB"}[k] }
	if gc, limit := setGC(400, 1<<30, env); gc != 100 || limit != 2<<30 {
		t.Fatalf("environment: gc %d limit %d, want GOGC's 100 and GOMEMLIMIT's 2 GiB", gc, limit)
	}
}
