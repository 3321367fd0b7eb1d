package main

import (
	"bufio"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/collectors"
)

// defaultGCPercent is the Go collector's target (GOGC) metad runs with unless configured
// otherwise (--gc-percent; the GOGC environment variable wins). The write and read paths allocate
// a few kilobytes per call (gRPC frames, protobuf messages, the log entry) that die young, so the
// collector's cost follows how often it runs: at 400 the heap may grow to five times what is live
// before a cycle, a quarter of the cycles of Go's default 100 for the same garbage. The memory
// limit (setGC) keeps that headroom from growing past what the machine has.
const defaultGCPercent = 400

// gcMetrics are the runtime metrics metad exports beside the Go collector's defaults, so that an
// operator sees what the collector costs on a large state: the live heap after the last cycle
// (go_gc_heap_live_bytes) and its objects (go_gc_heap_objects_objects), the cycles, GOGC and the
// memory limit in force, the pauses (go_gc_pauses_seconds), and the CPU the collector takes
// against the process's whole (go_cpu_classes_gc_total_cpu_seconds_total over
// go_cpu_classes_total_cpu_seconds_total).
var gcMetrics = []collectors.GoRuntimeMetricsRule{
	collectors.MetricsGC,
	{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)},
}

// setGC sets the collector's target to percent (GOGC from env wins; 0 or less: Go's default) and a
// soft memory limit (GOMEMLIMIT from env wins): limit bytes, or, for limit 0, half of the memory
// this process may use (the cgroup's limit when it has one, else the machine's), so that a large
// GOGC never lets the heap outgrow the machine: near the limit the collector runs as often as it
// must. It returns the values in force (-1: Go's default).
func setGC(percent int, limit int64, env func(string) string) (int, int64) {
	if env("GOGC") == "" && percent > 0 {
		debug.SetGCPercent(percent)
	}
	if env("GOMEMLIMIT") == "" {
		if limit <= 0 {
			limit = int64(min(machineMemory(), 1<<62) / 2)
		}
		if limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	return gc, debug.SetMemoryLimit(-1)
}

// machineMemory returns the bytes of memory this process may use: the cgroup v2 limit when one is
// set, else MemTotal of /proc/meminfo; 0 when neither can be read.
func machineMemory() uint64 {
	total := uint64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "MemTotal:" {
				if kb, err := strconv.ParseUint(fs[1], 10, 64); err == nil {
					total = kb << 10
				}
				break
			}
		}
		_ = f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}
