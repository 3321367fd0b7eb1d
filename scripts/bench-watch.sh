#!/usr/bin/env bash
# The watch benchmark of docs/performance.md: object puts/s of a 3-node loopback cluster
# (`metactl bench --op put`, default flags) with no watcher, with 16 watchers of the tenant
# (`metactl -o json watch`, each its own process, spread over the two followers, output discarded),
# and with one stalled watcher (its output is a pipe nobody reads, so its stream stops at gRPC's
# flow control), alternated ROUNDS times in one run. Ratios are against the no-watcher runs. The
# watchers' CPU share is their processes' user+system ticks (/proc/PID/stat) over the machine's
# busy and idle ticks (/proc/stat) during the 16-watcher put runs.
# Usage: bench-watch.sh [clients] [seconds] [rounds]; BENCH_BASE (default 7800) moves the ports.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-8} rounds=${3:-2}
BIN=${BIN:-bin}
base=${BENCH_BASE:-7800}
. scripts/cluster.sh
start_cluster "$base"
leader() { "$BIN/metactl" -o json status | python3 -c "import json,sys; print(next(s['leader_name'] for s in json.load(sys.stdin) if s.get('leader_name')))"; }
lead=$(leader)
followers=()
for i in 1 2 3; do [ "n$i" = "$lead" ] || followers+=("127.0.0.1:$((base + i))"); done
put() { "$BIN/metactl" -o json bench --clients "$clients" --duration "${secs}s" --op put --mount 4GiB --size 4096 | python3 -c "import json,sys; print(json.load(sys.stdin)['ops_per_sec'])"; }
wpids=()
watchers() {
	for i in $(seq 1 "$1"); do
		"$BIN/metactl" --endpoints "${followers[$((i % 2))]}" -o json watch >/dev/null &
		wpids+=($!)
	done
}
stalled() {
	# A reader that never reads: metactl blocks writing to the full pipe, its stream stalls.
	mkfifo "$tmp/fifo"
	exec 9<>"$tmp/fifo"
	"$BIN/metactl" --endpoints "${followers[0]}" -o json watch >&9 &
	wpids+=($!)
}
unwatch() {
	# KILL: a stalled watcher is blocked writing to its pipe and would never get to exit on TERM.
	for p in "${wpids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${wpids[@]}"; do wait "$p" 2>/dev/null || true; done
	wpids=()
	exec 9>&-
	rm -f "$tmp/fifo"
}
# lagbuckets prints the followers' metad_watch_delivery_lag_seconds buckets, summed: "le=count ...".
lagbuckets() {
	for f in "${followers[@]}"; do
		curl -fsS "http://127.0.0.1:$((${f##*:} + 200))/metrics" | grep '^metad_watch_delivery_lag_seconds_bucket'
	done | sed 's/.*le="\([^"]*\)"} \(.*\)/\1 \2/' | awk '{n[$1] += $2} END {for (k in n) printf "%s=%s ", k, n[k]}'
}
# p99 prints the 99th percentile (a bucket's upper bound, ms) between two lagbuckets outputs.
p99='
import sys
def parse(s): return {k: float(v) for k, v in (kv.split("=") for kv in s.split())}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
d = sorted((float(k), b[k] - a.get(k, 0)) for k in b)
total = d[-1][1]
print(next((f"{k * 1000:g}" for k, n in d if n >= 0.99 * total), "inf") if total > 0 else "none")
'
# wticks prints the watcher processes' CPU ticks; mticks the machine's ticks, all CPUs.
wticks() { for p in "${wpids[@]}"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{n += $1} END {print n + 0}'; }
mticks() { awk '$1 == "cpu" {n = 0; for (i = 2; i <= NF; i++) n += $i; print n}' /proc/stat; }
lags=() wshare=()
tmp=$(mktemp -d)
roots+=("$tmp")
none=() sixteen=() stall=()
put >/dev/null # warm up
for r in $(seq 1 "$rounds"); do
	echo "round $r: no watcher..." >&2
	none+=("$(put)")
	echo "round $r: 16 watchers..." >&2
	watchers 16
	lag0=$(lagbuckets) wt0=$(wticks) mt0=$(mticks)
	sixteen+=("$(put)")
	lag1=$(lagbuckets) wt1=$(wticks) mt1=$(mticks)
	wshare+=("$(python3 -c "print(f'{($wt1 - $wt0) / ($mt1 - $mt0) * 100:.0f}')")")
	lags+=("$(python3 -c "$p99" "$lag0" "$lag1")")
	unwatch
	echo "round $r: one stalled watcher..." >&2
	stalled
	stall+=("$(put)")
	unwatch
done
cut=$(curl -fsS "http://127.0.0.1:$((base + 200 + ${followers[0]##*:} - base))/metrics" | awk '$1 == "metad_watch_streams_cut_off_total" { print $2 }')
stop_cluster
trap - EXIT
python3 - "$clients" "${none[*]}" "${sixteen[*]}" "${stall[*]}" "${cut:-0}" "${lags[*]}" "${wshare[*]}" <<'PY'
import sys
c = sys.argv[1]
none, six, stall = ([float(x) for x in a.split()] for a in sys.argv[2:5])
avg = lambda v: sum(v) / len(v)
print(f"| object puts/s, {c} clients (runs alternated) | puts/s | ratio to no watcher | target |")
print("| --- | --: | --: | --- |")
print(f"| no watcher | {avg(none):.0f} | 1.00 | |")
print(f"| 16 watchers of the tenant, on the followers | {avg(six):.0f} | {avg(six)/avg(none):.2f} | >= 0.9 |")
print(f"| one stalled watcher | {avg(stall):.0f} | {avg(stall)/avg(none):.2f} | >= 0.95 |")
print(f"\nstreams cut off on the stalled watcher's member: {sys.argv[5]}")
print(f"delivery lag p99 on the followers with 16 watchers (bucket bound, ms, per round): {sys.argv[6]}")
print(f"the 16 watchers' share of the machine's CPU during their put runs (%, per round): {sys.argv[7]}")
PY
