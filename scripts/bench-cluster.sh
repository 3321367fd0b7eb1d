#!/usr/bin/env bash
# The cluster benchmark of docs/performance.md: a 3-node metad cluster on loopback driven by
# `metactl bench`, and in the same run the etcd side-by-side baseline (../shared/bench/etcd-baseline),
# both at the same client count. Prints one table with ratios. Usage: bench-cluster.sh [clients] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-10}
BIN=${BIN:-bin}
baseline=../shared/bench/etcd-baseline/run.sh
. scripts/cluster.sh
start_cluster 7000

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }
run_metad() { "$BIN/metactl" -o json bench --clients "$clients" --duration "${secs}s" --op "$1" --mount 4GiB --size 4096; }

echo "metad put..." >&2
mput=$(run_metad put)
echo "metad get..." >&2
mget=$(run_metad get)
# single-client write latency (the p50 target)
echo "metad single-client put..." >&2
m1=$("$BIN/metactl" -o json bench --clients 1 --duration 5s --op put --mount 1GiB --size 4096)
stop_cluster
trap - EXIT

# run.sh exits with its killed members' status; its summary line is what counts.
etcd() { bash "$baseline" "$1" "$clients" "$secs" | grep 'ops/s=' || true; }
echo "etcd put..." >&2
eput=$(etcd put)
echo "etcd get..." >&2
eget=$(etcd get)
[ -n "$eput" ] && [ -n "$eget" ] || { echo "the etcd baseline printed no summary" >&2; exit 1; }

python3 - "$mput" "$mget" "$m1" "$eput" "$eget" "$clients" <<'PY'
import json, re, sys
mput, mget, m1 = (json.loads(x) for x in sys.argv[1:4])
def etcd(line):
    d = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    def ms(v):
        m = re.match(r"([\d.]+)(µs|us|ms|s)$", v)
        n, u = float(m.group(1)), m.group(2)
        return n / 1000 if u in ("µs", "us") else n * 1000 if u == "s" else n
    return float(d["ops/s"]), ms(d["p50"]), ms(d["p99"])
ep, eg = etcd(sys.argv[4]), etcd(sys.argv[5])
c = sys.argv[6]
print(f"| figure ({c} clients) | metad | etcd (same run) | ratio | target |")
print("| --- | --: | --: | --: | --- |")
print(f"| write commands/s | {mput['ops_per_sec']:.0f} | {ep[0]:.0f} puts/s | {mput['ops_per_sec']/ep[0]:.2f} | >= 3 |")
print(f"| write p99 ms | {mput['p99_ms']:.2f} | {ep[2]:.2f} | {mput['p99_ms']/ep[2]:.2f} | <= 1 |")
print(f"| linearizable get/s | {mget['ops_per_sec']:.0f} | {eg[0]:.0f} | {mget['ops_per_sec']/eg[0]:.2f} | >= 3 |")
print(f"| get p99 ms | {mget['p99_ms']:.2f} | {eg[2]:.2f} | {mget['p99_ms']/eg[2]:.2f} | <= 1 |")
print(f"| single-client write p50 ms | {m1['p50_ms']:.2f} | | | <= 2 |")
PY
