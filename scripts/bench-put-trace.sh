#!/usr/bin/env bash
# Where one object put's time goes, for the single-client latency table of docs/performance.md.
# A 3-node metad cluster on loopback (--insecure, default flags) serves one client:
#   - PutStart p50 and PutEnd p50 (`metactl bench --clients 1 --op put`, each call timed alone);
#   - a linearizable Get p50 of the same client (a call the leader answers from its state under its
#     lease, with no log entry: the floor of one gRPC round trip through the service);
#   - the leader's commit round during the put run, the mean of metad_raft_commit_apply_seconds
#     (the proposer's raft.Apply until the entry is applied on the leader: the leader's log write,
#     a follower's, the network between them and the apply);
#   - the system calls per object put of the leader's and of a follower's process (strace -f -c,
#     installed from Debian's packages when missing) during a second put run, by call, over the
#     objects put. strace slows the processes it traces, so that run's rate is not a figure.
# Usage: bench-put-trace.sh [seconds]; BENCH_BASE (default 7600) moves the ports.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
BIN=${BIN:-bin}
base=${BENCH_BASE:-7600}
. scripts/cluster.sh
start_cluster "$base"

leader() { "$BIN/metactl" -o json status | python3 -c "import json,sys; print(next(s['leader_name'] for s in json.load(sys.stdin) if s.get('leader_name')))"; }
metric() { curl -fsS "http://127.0.0.1:$((base + 200 + ${1#n}))/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
bench() { "$BIN/metactl" -o json bench --clients 1 --duration "$1" --op "$2" --mount 1GiB --size 4096 --keys 1000; }

lead=$(leader)
bench 1s put >/dev/null # warm up: mounts, arenas, connections
s0=$(metric "$lead" metad_raft_commit_apply_seconds_sum) n0=$(metric "$lead" metad_raft_commit_apply_seconds_count)
put=$(bench "${secs}s" put)
s1=$(metric "$lead" metad_raft_commit_apply_seconds_sum) n1=$(metric "$lead" metad_raft_commit_apply_seconds_count)
[ "$(leader)" = "$lead" ] || echo "warning: leadership moved from $lead during the put run" >&2
get=$(bench "${secs}s" get)

if ! command -v strace >/dev/null; then
	if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq strace >/dev/null; else sudo apt-get install -y -qq strace >/dev/null; fi
fi
lpid=${pids[$((${lead#n} - 1))]}
fol=n$((${lead#n} % 3 + 1))
fpid=${pids[$((${fol#n} - 1))]}
lout=$(mktemp) fout=$(mktemp)
strace -f -qq -c -p "$lpid" -o "$lout" &
lsp=$!
strace -f -qq -c -p "$fpid" -o "$fout" &
fsp=$!
# strace attaches asynchronously: wait until both are traced before the run starts.
for p in "$lpid" "$fpid"; do
	until [ "$(awk '/^TracerPid/ {print $2}' "/proc/$p/status")" != 0 ]; do :; done
done
traced=$(bench 3s put)
kill -INT "$lsp" "$fsp"
wait "$lsp" "$fsp" || true
stop_cluster
trap 'rm -f "$lout" "$fout"' EXIT

python3 - "$put" "$get" "$traced" "$s0" "$s1" "$n0" "$n1" "$lout" "$fout" <<'PY'
import json, sys
put, get, traced = (json.loads(x) for x in sys.argv[1:4])
s0, s1, n0, n1 = (float(x) for x in sys.argv[4:8])
def calls(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            out[f[-1]] = int(f[3])
    return out
lc, fc = calls(sys.argv[8]), calls(sys.argv[9])
objs = traced["puts"]
print("| step (one client) | p50 or mean |")
print("| --- | --: |")
print(f"| object put (PutStart + PutEnd), p50 | {put['object_put_p50_ms']:.2f} ms |")
print(f"| PutStart, p50 | {put['put_start_p50_ms']:.2f} ms |")
print(f"| PutEnd, p50 | {put['put_end_p50_ms']:.2f} ms |")
print(f"| of which the leader's commit round, mean | {(s1 - s0) / (n1 - n0) * 1000:.2f} ms |")
print(f"| linearizable Get (one gRPC call, no log entry), p50 | {get['p50_ms']:.2f} ms |")
print()
print(f"| system calls per object put ({objs} objects) | leader | follower |")
print("| --- | --: | --: |")
for name in ("write", "read", "epoll_pwait", "futex", "nanosleep", "fsync", "fdatasync", "pwrite64"):
    print(f"| {name} | {lc.get(name, 0) / objs:.1f} | {fc.get(name, 0) / objs:.1f} |")
print(f"| all | {sum(lc.values()) / objs:.1f} | {sum(fc.values()) / objs:.1f} |")
PY
