package ha

import "runtime"

// DefaultExtraProcs is how many processors (GOMAXPROCS) a metad process runs beyond the CPUs it
// may use, unless configured otherwise (metad --extra-procs).
//
// Why more processors than CPUs: a linearizable read and a write's commit are chains of hand-offs
// between goroutines, several of them across sockets (the client's gRPC request, the Raft
// heartbeat to a follower and its answer). Go's scheduler asks the kernel which sockets became
// readable only when a processor runs out of queued goroutines, or from its monitor thread once
// nobody has asked for 10 ms (golang/go#51651 describes the same). On a small node whose every
// processor has work queued (the apply loop, an eviction drain, the collector's mark workers), a
// goroutine whose socket is readable can wait milliseconds before it is even queued, and a read
// round takes several such waits. With two processors more than CPUs one is free far more often,
// and a free processor polls the network; the kernel shares the CPUs among the extra threads.
// Measured in docs/performance.md ("Eviction: what a drain costs the foreground").
const DefaultExtraProcs = 2

// SetProcs sets GOMAXPROCS to the runtime's default (the CPUs this process may use: affinity and
// cgroup quota) plus extra (0: the default alone), and returns the value in force. An operator's
// GOMAXPROCS (the environment variable, passed as env) stands instead: then nothing changes.
// Calling it again gives the same result, since it starts from the default each time. Setting
// GOMAXPROCS turns off the runtime's own updates when the CPU quota changes; the process keeps
// what it started with.
func SetProcs(extra int, env string) int {
	if env != "" {
		return runtime.GOMAXPROCS(0)
	}
	runtime.SetDefaultGOMAXPROCS()
	if extra > 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + extra)
	}
	return runtime.GOMAXPROCS(0)
}
