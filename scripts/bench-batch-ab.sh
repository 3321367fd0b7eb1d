#!/usr/bin/env bash
# Batch puts of two builds side by side: for each of ROUNDS rounds, a fresh 3-node loopback cluster
# of OLD's binaries and then one of NEW's (default flags), each warmed for 2 s and then driven for
# 8 s by its own `metactl bench --op put --batch 256 --clients 8 --size SIZE` (BatchPutStart +
# BatchPutEnd), printing objects/s, a call's p99 and the leader's PutStarts that went through the
# log during the 8 s (metad_server_put_start_logged_total), and at the end NEW/OLD of the summed
# rates. The leader is the one after the warm-up; a leader change during the run shows as a
# negative or partial count. OLD and
# NEW are directories holding metad and metactl (build another commit with
# `git worktree add DIR COMMIT && (cd DIR && go build -o OUT/ ./cmd/metad ./cmd/metactl)`).
# Usage: bench-batch-ab.sh OLD NEW [rounds] [size]; BENCH_BASE (default 7600) moves the ports.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench-batch-ab.sh OLD NEW [rounds] [size]" >&2; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) # before the cd below, so relative paths work
rounds=${3:-2} size=${4:-4096}
base=${BENCH_BASE:-7600}
cd "$(dirname "$0")/.."
. scripts/cluster.sh
# run DIR NAME: one cluster of DIR's binaries; prints "NAME objects/s p99 logged" and sets rate.
run() {
	BIN=$1
	start_cluster "$base"
	bench() { "$BIN/metactl" -o json bench --op put --mount 4GiB --size "$size" --clients 8 --batch 256 --duration "$1"; }
	bench 2s >/dev/null
	local out lead logged0 logged
	lead=$("$BIN/metactl" -o json status | python3 -c "import json,sys; print(next(s['leader_name'] for s in json.load(sys.stdin) if s.get('leader_name')))")
	# logged_count: the leader's PutStarts through the log so far (the run's are the difference).
	logged_count() { curl -fsS "http://127.0.0.1:$((base + 200 + ${lead#n}))/metrics" | awk '/^metad_server_put_start_logged_total/ {n += $2} END {print n + 0}'; }
	logged0=$(logged_count)
	out=$(bench 8s)
	logged=$(($(logged_count) - logged0))
	rate=$(echo "$out" | python3 -c "import json,sys; print(round(json.load(sys.stdin)['ops_per_sec']))")
	echo "$2 $rate objects/s, p99 $(echo "$out" | python3 -c "import json,sys; print(round(json.load(sys.stdin)['p99_ms'], 1))") ms a call, $logged PutStarts logged"
	stop_cluster
}
sold=0 snew=0
for r in $(seq 1 "$rounds"); do
	run "$old" old
	sold=$((sold + rate))
	run "$new" new
	snew=$((snew + rate))
done
python3 -c "print(f'new/old: {$snew / $sold:.2f}x over $rounds rounds of {$size}-byte objects')"
