#!/usr/bin/env bash
# Starts a local 3-node metad cluster on loopback plus one simulated cache worker, and stops
# everything on Ctrl-C. Used by `make run`. Data lives under ./data/ (kept between runs: a second
# `make run` restarts the same cluster; `make clean-data` starts afresh).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DATA=${DATA:-data}
CLUSTER="n1=127.0.0.1:6101,n2=127.0.0.1:6102,n3=127.0.0.1:6103"
mkdir -p "$DATA/logs"
pids=()
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "stopping..."
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	echo "stopped. logs are in $DATA/logs/"
}
trap cleanup INT TERM EXIT

for i in 1 2 3; do
	"$BIN/metad" --name "n$i" --data-dir "$DATA/n$i" \
		--listen-client "127.0.0.1:600$i" --listen-peer "127.0.0.1:610$i" --listen-metrics "127.0.0.1:620$i" \
		--initial-cluster "$CLUSTER" --insecure >"$DATA/logs/n$i.log" 2>&1 &
	pids+=($!)
done

export METAD_ENDPOINTS=127.0.0.1:6001,127.0.0.1:6002,127.0.0.1:6003
for _ in $(seq 1 100); do
	if "$BIN/metactl" --timeout 1s status 2>/dev/null | grep -q leader; then break; fi
	sleep 0.1
done
"$BIN/metactl" worker --segments 4 --segment-size 1GiB >"$DATA/logs/worker.log" 2>&1 &
pids+=($!)

cat <<MSG
metad is running: 3 nodes on 127.0.0.1 (client ports 6001-6003, peer 6101-6103, metrics 6201-6203),
data under $DATA/, logs under $DATA/logs/, and a worker with four 1 GiB memory segments.

In another terminal:
  bin/metactl status
  bin/metactl put k1 --size 4096
  bin/metactl get k1
  bin/metactl tenant ls
  bin/metactl leader transfer
  curl -s 127.0.0.1:6201/metrics | grep ^metad_

Kill a node (kill -9 a pid below) and keep working: the others elect a new leader.
pids: ${pids[*]}
Ctrl-C stops everything.
MSG
wait "${pids[@]}"
