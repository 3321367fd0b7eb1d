#!/usr/bin/env bash
# The session benchmark of docs/performance.md: a 3-node metad cluster on loopback, driven by
# `metactl bench --op put` at the same client count with sessions (the default) and without
# (--no-session), alternated rounds times in one run. Prints each run and the ratio of the medians
# (with / without). Usage: bench-sessions.sh [clients] [seconds] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-10} rounds=${3:-3}
BIN=${BIN:-bin}
. scripts/cluster.sh
start_cluster 7400

run() { "$BIN/metactl" -o json $1 bench --clients "$clients" --duration "${secs}s" --op put --mount 4GiB --size 4096; }
with=() without=()
for r in $(seq 1 "$rounds"); do
	echo "round $r: with sessions..." >&2
	with+=("$(run "")")
	echo "round $r: without..." >&2
	without+=("$(run --no-session)")
done

python3 - "$clients" "${#with[@]}" "${with[@]}" "${without[@]}" <<'PY'
import json, statistics, sys
clients, n = int(sys.argv[1]), int(sys.argv[2])
w = [json.loads(x) for x in sys.argv[3:3 + n]]
wo = [json.loads(x) for x in sys.argv[3 + n:3 + 2 * n]]
print(f"object puts (PutStart+PutEnd), {clients} clients, {n} alternated rounds")
print("| round | with sessions ops/s | without ops/s | ratio |")
print("| --- | --- | --- | --- |")
for i, (a, b) in enumerate(zip(w, wo), 1):
    print(f"| {i} | {a['ops_per_sec']:.0f} | {b['ops_per_sec']:.0f} | {a['ops_per_sec'] / b['ops_per_sec']:.3f} |")
ma, mb = statistics.median(x['ops_per_sec'] for x in w), statistics.median(x['ops_per_sec'] for x in wo)
print(f"| median | {ma:.0f} | {mb:.0f} | {ma / mb:.3f} |")
PY
