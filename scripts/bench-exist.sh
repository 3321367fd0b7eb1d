#!/usr/bin/env bash
# The big existence check of docs/performance.md: a 3-node metad cluster on loopback holding
# OBJECTS objects (pre-populated by `metactl bench`), then one client asking BatchExist of BATCH
# distinct keys per call, one call at a time, for SECONDS; in the same run, on a fresh cluster
# filled alike, the same load in requests of 4,096 keys (the limit of every other batch) as the
# baseline: a 50,000-key question asked that way takes ceil(BATCH/4096) of them. Prints one table; fails if fewer than 50 calls ran.
# Usage: bench-exist.sh [objects] [batch] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${1:-1000000} batch=${2:-50000} secs=${3:-30}
BIN=${BIN:-bin}
. scripts/cluster.sh
start_cluster 8300

# 4 KiB objects, one replica each, on an 8 GiB simulated segment: 1M objects fill half of it, under
# the eviction watermark, so nothing is evicted during the run.
run() {
	"$BIN/metactl" --timeout 30s -o json bench --clients 1 --conns 1 --duration "${secs}s" --op exist \
		--batch "$1" --keys "$objects" --mount 8GiB --size 4096
}
echo "pre-populating $objects objects, then BatchExist of $batch keys for ${secs}s..." >&2
big=$(run "$batch")
stop_cluster
start_cluster 8300 # a fresh cluster, so that the baseline also runs on exactly $objects objects
echo "pre-populating $objects objects again, then BatchExist of 4096 keys for ${secs}s..." >&2
small=$(run 4096)
stop_cluster
trap - EXIT

python3 - "$big" "$small" "$batch" "$objects" <<'PY'
import json, math, sys
big, small = json.loads(sys.argv[1]), json.loads(sys.argv[2])
batch, objects = int(sys.argv[3]), int(sys.argv[4])
if big["ops"] < 50 or big["errors"] or small["errors"]:
    sys.exit(f"too few calls or errors: {big['ops']} calls, {big['errors']} + {small['errors']} errors")
if big["gets"] != big["items"]:
    sys.exit(f"{big['items'] - big['gets']} of the pre-populated keys were not found")
n = math.ceil(batch / 4096)
print(f"| figure ({objects:,} objects, 1 client) | BatchExist of {batch:,} keys | {n} x BatchExist of 4,096 keys (same run) | ratio |")
print("| --- | --: | --: | --: |")
print(f"| calls measured | {big['ops']} | {small['ops']} | |")
print(f"| p50 | {big['p50_ms']:.2f} ms | {n * small['p50_ms']:.2f} ms | {big['p50_ms'] / (n * small['p50_ms']):.2f} |")
print(f"| p99 | {big['p99_ms']:.2f} ms | {n * small['p99_ms']:.2f} ms | {big['p99_ms'] / (n * small['p99_ms']):.2f} |")
print(f"| keys/s | {big['items_per_sec']:,.0f} | {small['items_per_sec']:,.0f} | {big['items_per_sec'] / small['items_per_sec']:.2f} |")
PY
