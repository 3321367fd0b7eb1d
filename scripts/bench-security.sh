#!/usr/bin/env bash
# The TLS and API key benchmark of docs/performance.md: two 3-node metad clusters on loopback at
# once, one plaintext (--insecure), one with TLS on every listener and authentication on (a PKI
# made with `metactl cert`). Each round runs, against each cluster in turn, `metactl bench --op put`
# and `--op get` at the given client count and `--op put --clients 1` (for p50); the order of the
# two clusters flips every round, and the idle cluster's heartbeats cost both sides alike. Prints
# every round, the medians and the ratios (TLS+key / plaintext) against issue 19's targets.
# Usage: bench-security.sh [clients] [seconds] [rounds]
#
# Each cluster has a `metactl worker` (two 4 GiB segments, as root on the secure one) for the whole
# run, and the loads write onto its segments: a segment that a load mounted itself would expire
# with its pings soon after the load ends, and take with it the objects that a later load placed
# on it (the next get run's pre-populated keys).
#
# The load on the secure cluster authenticates by API key alone over TLS (no client certificate):
# principal "bench", created with `metactl key create` and bound to tenant:default only, the least
# an application writing into the default tenant needs (the worker's mounts and pings are root's).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64} secs=${2:-10} rounds=${3:-5}
BIN=${BIN:-bin}
. scripts/cluster.sh

make_pki
start_cluster 7500
start_worker --segments 2 --segment-size 4GiB
plain=("--endpoints" "$METAD_ENDPOINTS" "--certs-dir" "$METAD_CERTS_DIR")
start_cluster --certs "$pki" 7800
start_worker --segments 2 --segment-size 4GiB
root=("--endpoints" "$METAD_ENDPOINTS" "--certs-dir" "$pki")
"$BIN/metactl" "${root[@]}" role grant bench tenant:default >/dev/null
token=$("$BIN/metactl" "${root[@]}" -o json key create --principal bench --ttl 0 |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
secure=("--endpoints" "$METAD_ENDPOINTS" "--cacert" "$pki/ca.crt" "--api-key" "$token")

bench() { # cluster-array-name op clients seconds
	local -n ref=$1
	"$BIN/metactl" "${ref[@]}" -o json bench --op "$2" --clients "$3" --duration "${4}s" --size 4096
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

declare -A res
echo "load average before: $(load)" >&2
for r in $(seq 1 "$rounds"); do
	order=(plain secure)
	[ $((r % 2)) -eq 0 ] && order=(secure plain)
	for case in put get one; do
		for side in "${order[@]}"; do
			echo "round $r: $case on $side..." >&2
			case $case in
			put) res[$r,$case,$side]=$(bench "$side" put "$clients" "$secs") ;;
			get) res[$r,$case,$side]=$(bench "$side" get "$clients" "$secs") ;;
			one) res[$r,$case,$side]=$(bench "$side" put 1 "$secs") ;;
			esac
		done
	done
done
echo "load average after: $(load)" >&2

args=()
for r in $(seq 1 "$rounds"); do
	for case in put get one; do
		args+=("${res[$r,$case,plain]}" "${res[$r,$case,secure]}")
	done
done
python3 - "$clients" "$secs" "$rounds" "${args[@]}" <<'PY'
import json, statistics, sys
clients, secs, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
vals = [json.loads(x) for x in sys.argv[4:]]
rows = []  # per round: (put plain, put tls, get plain, get tls, one plain, one tls)
for r in range(rounds):
    rows.append(vals[6 * r:6 * r + 6])
def errors(side):  # side 0: plaintext, 1: TLS + key
    n, reasons = 0, {}
    for i, v in enumerate(vals):
        if i % 2 == side:
            n += v["errors"]
            for k, c in (v.get("error_reasons") or {}).items():
                reasons[k] = reasons.get(k, 0) + c
    return f"{n}" + (" (" + ", ".join(f"{k} {c}" for k, c in sorted(reasons.items())) + ")" if reasons else "")
print(f"plaintext (--insecure) against TLS + API key, same machine, {rounds} alternated rounds of {secs} s;")
print(f"put and get at {clients} clients (ops/s), single-client put p50 (ms).")
print(f"failed calls in all runs: plaintext {errors(0)}, TLS + key {errors(1)}")
print()
print(f"| round | put/s plain | put/s TLS+key | ratio | get/s plain | get/s TLS+key | ratio | 1-client p50 plain | p50 TLS+key | ratio |")
print("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
for i, (pp, ps, gp, gs, op, os_) in enumerate(rows, 1):
    print(f"| {i} | {pp['ops_per_sec']:.0f} | {ps['ops_per_sec']:.0f} | {ps['ops_per_sec'] / pp['ops_per_sec']:.3f} "
          f"| {gp['ops_per_sec']:.0f} | {gs['ops_per_sec']:.0f} | {gs['ops_per_sec'] / gp['ops_per_sec']:.3f} "
          f"| {op['p50_ms']:.2f} | {os_['p50_ms']:.2f} | {os_['p50_ms'] / op['p50_ms']:.3f} |")
med = lambda k, col: statistics.median(row[col][k] for row in rows)
mp, ms = med("ops_per_sec", 0), med("ops_per_sec", 1)
gp, gs = med("ops_per_sec", 2), med("ops_per_sec", 3)
op, os_ = med("p50_ms", 4), med("p50_ms", 5)
print(f"| median | {mp:.0f} | {ms:.0f} | **{ms / mp:.3f}** | {gp:.0f} | {gs:.0f} | **{gs / gp:.3f}** | {op:.2f} | {os_:.2f} | **{os_ / op:.3f}** |")
print()
verdict = lambda ok: "PASS" if ok else "MISS"
print("| figure (ratio of the medians, TLS+key / plaintext) | ratio | target | result |")
print("| --- | --: | --- | --- |")
print(f"| put throughput, {clients} clients | {ms / mp:.3f} | >= 0.9 | {verdict(ms / mp >= 0.9)} |")
print(f"| get throughput, {clients} clients | {gs / gp:.3f} | >= 0.9 | {verdict(gs / gp >= 0.9)} |")
print(f"| single-client put p50 | {os_ / op:.3f} | <= 1.1 | {verdict(os_ / op <= 1.1)} |")
PY
