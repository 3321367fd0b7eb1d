#!/usr/bin/env bash
# The session benchmark of docs/performance.md: a 3-node metad cluster on loopback, driven by
# `metactl bench --op put` at the same client count with sessions (the default) and without
# (--no-session), alternated rounds times in one run. Prints each run and the ratio of the medians
# (with / without). Usage: bench-sessions.sh [clients] [seconds] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-10} rounds=${3:-3}
BIN=${BIN:-bin}
root=$(mktemp -d)
pids=()
stop() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$root"
}
trap stop EXIT
cluster="n1=127.0.0.1:7301,n2=127.0.0.1:7302,n3=127.0.0.1:7303"
for i in 1 2 3; do
	"$BIN/metad" --name "n$i" --data-dir "$root/n$i" --listen-client "127.0.0.1:740$i" \
		--listen-peer "127.0.0.1:730$i" --listen-metrics "" --initial-cluster "$cluster" \
		--log-level warn >"$root/n$i.log" 2>&1 &
	pids+=($!)
done
export METAD_ENDPOINTS=127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403
for _ in $(seq 1 100); do
	"$BIN/metactl" --timeout 1s status 2>/dev/null | grep -q " leader " && break
	sleep 0.1
done

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
