#!/usr/bin/env bash
# The cluster benchmark of docs/performance.md: a 3-node metad cluster on loopback driven by
# `metactl bench`, and in the same run the etcd side-by-side baseline (../shared/bench/etcd-baseline),
# both at the same client count. Prints one table with ratios. A metad put is one object (PutStart
# and PutEnd, `metactl bench`'s op for put), an etcd put one key. The leader's CPU per object put is
# its process CPU seconds (process_cpu_seconds_total on its metrics port) over the put run divided
# by the objects put. In the same run a second cluster started with --no-arenas (every PutStart a
# log entry) gives the object puts/s and leader CPU that allocation arenas are measured against, and
# a third with --log-store boltdb (raft-boltdb, the log of earlier releases) the object puts/s,
# single-client put p50 and leader syncs per object put that raft-wal (the default) is measured
# against. Syncs are the leader process's fsync and fdatasync calls (strace -f -c, installed from
# Debian's packages when missing) during a single-client put run, over the objects put.
# Then batches of 256 keys from 8 clients on the first cluster: objects put with BatchPutStart +
# BatchPutEnd, and keys read with BatchGet and BatchExist (of 100,000 pre-populated keys).
# Usage: bench-cluster.sh [clients] [seconds]; BENCH_BASE (default 7000) moves the metad ports (see
# scripts/cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-10}
BIN=${BIN:-bin}
base=${BENCH_BASE:-7000}
baseline=../shared/bench/etcd-baseline/run.sh
. scripts/cluster.sh
start_cluster "$base"

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }
run_metad() { "$BIN/metactl" -o json bench --clients "$clients" --duration "${secs}s" --op "$1" --mount 4GiB --size 4096; }
# leader prints the leader's name (n1..n3) as the first endpoint that answers names it.
leader() { "$BIN/metactl" -o json status | python3 -c "import json,sys; print(next(s['leader_name'] for s in json.load(sys.stdin) if s.get('leader_name')))"; }
# cpu NAME prints node NAME's process CPU seconds from its metrics endpoint.
cpu() { curl -fsS "http://127.0.0.1:$((base + 200 + ${1#n}))/metrics" | awk '$1 == "process_cpu_seconds_total" { print $2 }'; }

# syncs counts the leader's fsync and fdatasync calls during a 3 s single-client put run and prints
# "calls objects".
syncs() {
	if ! command -v strace >/dev/null; then
		if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq strace >/dev/null; else sudo apt-get install -y -qq strace >/dev/null; fi
	fi
	local l pid out
	l=$(leader)
	pid=${pids[$((${l#n} - 1))]}
	out=$(mktemp)
	strace -f -qq -c -e trace=fsync,fdatasync -p "$pid" -o "$out" &
	local sp=$!
	# strace attaches asynchronously: wait until the leader is traced before the run starts.
	until [ "$(awk '/^TracerPid/ {print $2}' "/proc/$pid/status")" != 0 ]; do :; done
	local objs
	objs=$("$BIN/metactl" -o json bench --clients 1 --duration 3s --op put --mount 1GiB --size 4096 | field puts)
	kill -INT "$sp"
	wait "$sp" || true
	echo "$(awk '$NF == "fsync" || $NF == "fdatasync" { n += $4 } END { print n + 0 }' "$out") $objs"
	rm -f "$out"
}

lead=$(leader)
cpu0=$(cpu "$lead")
echo "metad put (leader $lead)..." >&2
mput=$(run_metad put)
cpu1=$(cpu "$lead")
[ "$(leader)" = "$lead" ] || echo "warning: leadership moved from $lead during the put run; its CPU figure covers part of it" >&2
echo "metad get..." >&2
mget=$(run_metad get)
# single-client write latency (the p50 target)
echo "metad single-client put..." >&2
m1=$("$BIN/metactl" -o json bench --clients 1 --duration 5s --op put --mount 1GiB --size 4096)
echo "metad leader syncs per object put..." >&2
wsync=$(syncs)
# batches: 256 keys a call from 8 clients (BatchPutStart + BatchPutEnd, BatchGet, BatchExist)
echo "metad batch put, get and exist..." >&2
batch() { "$BIN/metactl" -o json bench --clients 8 --duration "${secs}s" --op "$1" --batch 256 --keys 100000 --mount 4GiB --size 4096; }
kput=$(batch put)
kget=$(batch get)
kexist=$(batch exist)
stop_cluster
echo "metad put, --log-store boltdb..." >&2
start_cluster "$base" --log-store boltdb
bput=$(run_metad put)
b1=$("$BIN/metactl" -o json bench --clients 1 --duration 5s --op put --mount 1GiB --size 4096)
bsync=$(syncs)
stop_cluster
echo "metad put, --no-arenas..." >&2
start_cluster "$base" --no-arenas
lead=$(leader)
ncpu0=$(cpu "$lead")
nput=$(run_metad put)
ncpu1=$(cpu "$lead")
stop_cluster
trap - EXIT

# run.sh exits with its killed members' status; its summary line is what counts.
etcd() { bash "$baseline" "$1" "$2" "$3" | grep 'ops/s=' || true; }
echo "etcd put..." >&2
eput=$(etcd put "$clients" "$secs")
echo "etcd get..." >&2
eget=$(etcd get "$clients" "$secs")
echo "etcd single-client put..." >&2
e1=$(etcd put 1 5)
[ -n "$eput" ] && [ -n "$eget" ] && [ -n "$e1" ] || { echo "the etcd baseline printed no summary" >&2; exit 1; }

python3 - "$mput" "$mget" "$m1" "$eput" "$eget" "$e1" "$clients" "$cpu0" "$cpu1" "$nput" "$ncpu0" "$ncpu1" "$bput" "$b1" "$wsync" "$bsync" "$kput" "$kget" "$kexist" <<'PY'
import json, re, sys
mput, mget, m1 = (json.loads(x) for x in sys.argv[1:4])
def etcd(line):
    d = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    def ms(v):
        m = re.match(r"([\d.]+)(µs|us|ms|s)$", v)
        n, u = float(m.group(1)), m.group(2)
        return n / 1000 if u in ("µs", "us") else n * 1000 if u == "s" else n
    return float(d["ops/s"]), ms(d["p50"]), ms(d["p99"])
ep, eg, e1 = etcd(sys.argv[4]), etcd(sys.argv[5]), etcd(sys.argv[6])
c = sys.argv[7]
cpu_us = (float(sys.argv[9]) - float(sys.argv[8])) * 1e6 / mput["puts"]
nput = json.loads(sys.argv[10])
ncpu_us = (float(sys.argv[12]) - float(sys.argv[11])) * 1e6 / nput["puts"]
print(f"| figure ({c} clients unless said) | metad | etcd (same run) | ratio | target |")
print("| --- | --: | --: | --: | --- |")
print(f"| object puts/s (PutStart + PutEnd) | {mput['ops_per_sec']:.0f} | {ep[0]:.0f} puts/s | {mput['ops_per_sec']/ep[0]:.2f} | >= 2.5 |")
print(f"| single-client object put p50 ms | {m1['object_put_p50_ms']:.2f} | {e1[1]:.2f} | {m1['object_put_p50_ms']/e1[1]:.2f} | <= 1 |")
print(f"| object put p99 ms | {mput['object_put_p99_ms']:.2f} | {ep[2]:.2f} | {mput['object_put_p99_ms']/ep[2]:.2f} | <= 1 |")
print(f"| linearizable get/s | {mget['ops_per_sec']:.0f} | {eg[0]:.0f} | {mget['ops_per_sec']/eg[0]:.2f} | >= 3 |")
print(f"| get p99 ms | {mget['p99_ms']:.2f} | {eg[2]:.2f} | {mget['p99_ms']/eg[2]:.2f} | <= 1 |")
print(f"| write RPCs/s (PutStart, PutEnd) | {mput['rpcs_per_sec']:.0f} | | | |")
print(f"| leader CPU us per object put | {cpu_us:.0f} | | | |")
print()
print(f"| allocation arenas ({c} clients, same run) | arenas (default) | --no-arenas | ratio |")
print("| --- | --: | --: | --: |")
print(f"| object puts/s | {mput['ops_per_sec']:.0f} | {nput['ops_per_sec']:.0f} | {mput['ops_per_sec']/nput['ops_per_sec']:.2f} |")
print(f"| leader CPU us per object put | {cpu_us:.0f} | {ncpu_us:.0f} | {cpu_us/ncpu_us:.2f} |")
bput, b1 = json.loads(sys.argv[13]), json.loads(sys.argv[14])
(wc, wo), (bc, bo) = ((int(x) for x in a.split()) for a in sys.argv[15:17])
print()
print(f"| Raft log store (same run) | raft-wal (default) | raft-boltdb | ratio |")
print("| --- | --: | --: | --: |")
print(f"| object puts/s, {c} clients | {mput['ops_per_sec']:.0f} | {bput['ops_per_sec']:.0f} | {mput['ops_per_sec']/bput['ops_per_sec']:.2f} |")
print(f"| single-client object put p50 ms | {m1['object_put_p50_ms']:.2f} | {b1['object_put_p50_ms']:.2f} | {m1['object_put_p50_ms']/b1['object_put_p50_ms']:.2f} |")
print(f"| leader syncs per object put (single client) | {wc/wo:.2f} | {bc/bo:.2f} | {(wc/wo)/(bc/bo):.2f} |")
kput, kget, kexist = (json.loads(x) for x in sys.argv[17:20])
print()
print("| batches (256 keys a call, 8 clients, same run) | metad | p99 ms a call | target |")
print("| --- | --: | --: | --- |")
print(f"| object puts/s (BatchPutStart + BatchPutEnd) | {kput['puts_per_sec']:.0f} | {kput['object_put_p99_ms']:.2f} | >= 100000 |")
print(f"| BatchGet keys/s (linearizable) | {kget['items_per_sec']:.0f} | {kget['p99_ms']:.2f} | >= 300000 |")
print(f"| BatchExist keys/s | {kexist['items_per_sec']:.0f} | {kexist['p99_ms']:.2f} | >= 300000 |")
PY
