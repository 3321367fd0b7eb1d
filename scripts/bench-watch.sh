#!/usr/bin/env bash
# The watch benchmark of docs/performance.md, on a 3-node loopback cluster with default flags:
# object puts/s (`metactl bench --op put`, CLIENTS clients) with no watcher, with 16 watch streams
# of the run's objects on the two followers (`--watchers 16`: in the bench's own process, each on
# its own connection, decoding every event as a router would) and with one stalled watcher (a
# `metactl -o json watch` whose output is a pipe nobody reads, so its stream stops at gRPC's flow
# control), alternated ROUNDS times in one run (the order reversed every other round); ratios are
# against the no-watcher runs. Then the
# delivery lag at a fixed 10,000 objects/s (`--rate 10000 --batch 64`, 16 streams on the followers):
# each event's receive time minus its entry's leader time, as the bench measures it, and the
# followers' own metad_watch_delivery_lag_seconds (up to the send). The members' CPU share is
# their processes' user+system ticks (/proc/PID/stat) over the machine's (/proc/stat) in each
# kind of put run.
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
fl=$(IFS=,; echo "${followers[*]}")
# bench ARGS... prints the run's JSON on one line.
bench() { "$BIN/metactl" -o json bench --op put --mount 4GiB --size 4096 "$@" | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))"; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], 0))" "$1" "$2"; }
put() { bench --clients "$clients" --duration "${secs}s" "$@"; }
wpids=()
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
# cticks prints the members' CPU ticks; mticks the machine's, all CPUs.
cticks() { for p in "${pids[@]}"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{n += $1} END {print n + 0}'; }
mticks() { awk '$1 == "cpu" {n = 0; for (i = 2; i <= NF; i++) n += $i; print n}' /proc/stat; }
# share CMD... runs CMD and prints its output, then on a second line the members' CPU share (%)
# during it.
share() {
	local c0 m0 out
	c0=$(cticks) m0=$(mticks)
	out=$("$@")
	echo "$out"
	python3 -c "print(f'{($(cticks) - $c0) / ($(mticks) - $m0) * 100:.0f}')"
}
tmp=$(mktemp -d)
roots+=("$tmp")
none=() sixteen=() stall=() cnone=() csix=() lag16=()
put >/dev/null # warm up
runnone() {
	echo "round $r: no watcher..." >&2
	{ read -r j; read -r c; } < <(share put)
	none+=("$(field "$j" ops_per_sec)") cnone+=("$c")
}
runsix() {
	echo "round $r: 16 watchers..." >&2
	{ read -r j; read -r c; } < <(share put --watchers 16 --watch-endpoints "$fl")
	sixteen+=("$(field "$j" ops_per_sec)") csix+=("$c") lag16+=("$(field "$j" watch_lag_p99_ms)")
}
runstall() {
	echo "round $r: one stalled watcher..." >&2
	stalled
	stall+=("$(field "$(put)" ops_per_sec)")
	unwatch
}
# Odd rounds in one order, even rounds in the reverse, so that a drift over the run (the state
# grows; earlier runs' segments expire) weighs on each kind alike.
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then runnone; runsix; runstall; else runstall; runsix; runnone; fi
done
echo "lag at 10,000 objects/s..." >&2
lag0=$(lagbuckets)
paced=$(bench --clients 16 --batch 64 --rate 10000 --duration "${secs}s" --watchers 16 --watch-endpoints "$fl")
lag1=$(lagbuckets)
sent99=$(python3 -c "$p99" "$lag0" "$lag1")
cut=$(curl -fsS "http://127.0.0.1:$((${followers[0]##*:} + 200))/metrics" | awk '$1 == "metad_watch_streams_cut_off_total" { print $2 }')
stop_cluster
trap - EXIT
python3 - "$clients" "${none[*]}" "${sixteen[*]}" "${stall[*]}" "${cut:-0}" "${lag16[*]}" "${cnone[*]}" "${csix[*]}" "$paced" "$sent99" <<'PY'
import json, sys
c = sys.argv[1]
none, six, stall, lag16, cnone, csix = ([float(x) for x in a.split()] for a in sys.argv[2:5] + sys.argv[6:9])
paced = json.loads(sys.argv[9])
avg = lambda v: sum(v) / len(v)
print(f"| figure ({c} clients, runs alternated) | measured | ratio to no watcher | target |")
print("| --- | --: | --: | --- |")
print(f"| object puts/s, no watcher | {avg(none):.0f} | 1.00 | |")
print(f"| object puts/s, 16 watch streams on the followers | {avg(six):.0f} | {avg(six)/avg(none):.2f} | >= 0.9 |")
print(f"| object puts/s, one stalled watcher | {avg(stall):.0f} | {avg(stall)/avg(none):.2f} | >= 0.95 |")
print(f"| delivery lag p99, 16 streams, at full load (ms, per round) | {' / '.join(f'{x:.0f}' for x in lag16)} | | |")
print(f"| delivery lag p99, 16 streams, at {paced['ops_per_sec']:.0f} objects/s (ms) | {paced['watch_lag_p99_ms']:.1f} (p50 {paced['watch_lag_p50_ms']:.1f}, max {paced['watch_lag_max_ms']:.0f}) | | <= 50 |")
print(f"| the followers' lag up to the send at that rate, p99 (bucket bound, ms) | {sys.argv[10]} | | |")
print(f"| the members' share of the machine's CPU, no watcher / 16 streams (%) | {avg(cnone):.0f} / {avg(csix):.0f} | | |")
print(f"\nstreams cut off on the stalled watcher's member: {sys.argv[5]}; events the paced run's streams missed: {paced.get('watch_missing', 0)}")
PY
