#!/usr/bin/env bash
# Starts a local secure 3-node metad cluster on loopback plus one simulated cache worker, and stops
# everything on Ctrl-C. Used by `make run`. Data lives under ./data/ (kept between runs: a second
# `make run` restarts the same cluster; `make clean-data` starts afresh).
#
# The first run creates, under $DATA/certs with `metactl cert`, a dev CA, the node certificates of
# n1..n3 (hosts 127.0.0.1 and localhost), a client certificate for root (the bootstrap admin, which
# metactl presents by default from data/certs) and one for the worker's principal; the worker's
# client id ($DATA/worker.id), its role binding worker:<client id>, and an admin API key whose token
# goes to $DATA/admin.key (mode 0600). Later runs reuse all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DATA=${DATA:-data}
CERTS="$DATA/certs"
CLUSTER="n1=127.0.0.1:6101,n2=127.0.0.1:6102,n3=127.0.0.1:6103"
WORKER=worker # the simulated worker's principal (its client certificate's name)

# Members' state without certificates is a cluster of an older, plaintext `make run`. The dev CA,
# the worker's role and the admin key are made with a fresh cluster only, so ask for one.
if [ ! -e "$CERTS/ca.crt" ] && compgen -G "$DATA/n[0-9]*" >/dev/null; then
	cat >&2 <<MSG
$DATA/ holds a cluster from an older, plaintext \`make run\` (it has $DATA/n1 but no $CERTS/ca.crt).
\`make run\` now runs a secure cluster and creates its certificates only with a fresh data directory:
run \`make clean-data\` (it forgets the old cluster's state) and then \`make run\` again.
MSG
	exit 1
fi

mkdir -p "$DATA"
export METAD_CERTS_DIR="$CERTS" # every metactl below is root through its client certificate
unset METAD_CACERT METAD_CERT METAD_KEY METAD_API_KEY
export METAD_ENDPOINTS=127.0.0.1:6001,127.0.0.1:6002,127.0.0.1:6003

# The certificates, each created once (metactl cert never overwrites a file).
[ -e "$CERTS/ca.crt" ] || "$BIN/metactl" cert create-ca --certs-dir "$CERTS" >/dev/null
for i in 1 2 3; do
	[ -e "$CERTS/member.n$i.crt" ] ||
		"$BIN/metactl" cert create-member --certs-dir "$CERTS" --name "n$i" --hosts 127.0.0.1,localhost >/dev/null
done
for p in root "$WORKER"; do
	[ -e "$CERTS/client.$p.crt" ] || "$BIN/metactl" cert create-client --certs-dir "$CERTS" --name "$p" >/dev/null
done

# The worker's fixed client id, a random UUID drawn once.
if [ ! -s "$DATA/worker.id" ]; then
	h=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	printf '%s-%s-4%s-%x%s-%s\n' "${h:0:8}" "${h:8:4}" "${h:13:3}" $((0x${h:16:1} & 3 | 8)) "${h:17:3}" "${h:20:12}" >"$DATA/worker.id.tmp"
	mv "$DATA/worker.id.tmp" "$DATA/worker.id"
fi
WORKER_ID=$(cat "$DATA/worker.id")

mkdir -p "$DATA/logs"
# The members and the worker each run in a process group of their own (started with job control
# on: set -m), so a Ctrl-C at the terminal reaches this script and its foreground commands alone,
# and cleanup stops them in order: the worker first, so that it unmounts its segments while the
# cluster is still up, then the members.
metad_pids=()
worker_pid=
stopping=
cleanup() {
	[ -z "$stopping" ] || return 0
	stopping=1
	trap hurry INT TERM HUP # a second Ctrl-C stops waiting
	echo
	echo "stopping..."
	if [ -n "$worker_pid" ]; then
		kill -TERM "$worker_pid" 2>/dev/null || true
		wait "$worker_pid" 2>/dev/null || true
	fi
	for p in "${metad_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${metad_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	echo "stopped. logs are in $DATA/logs/"
}
hurry() {
	echo "killing..."
	for p in $worker_pid "${metad_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}
trap cleanup INT TERM HUP EXIT

set -m
for i in 1 2 3; do
	"$BIN/metad" --name "n$i" --data-dir "$DATA/n$i" \
		--listen-client "127.0.0.1:600$i" --listen-peer "127.0.0.1:610$i" --listen-metrics "127.0.0.1:620$i" \
		--initial-cluster "$CLUSTER" \
		--cacert "$CERTS/ca.crt" --cert "$CERTS/member.n$i.crt" --key "$CERTS/member.n$i.key" \
		</dev/null >"$DATA/logs/n$i.log" 2>&1 &
	metad_pids+=($!)
done
set +m

ready=
for _ in $(seq 1 300); do
	if "$BIN/metactl" --timeout 1s status 2>/dev/null | grep -q leader; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ -z "$ready" ]; then
	echo "the cluster elected no leader within 30s; see $DATA/logs/n1.log .. n3.log" >&2
	exit 1
fi

# The worker may mount and ping only as its own client id (granting an existing binding is a no-op).
"$BIN/metactl" role grant "$WORKER" "worker:$WORKER_ID" >/dev/null

# The admin key, created once; its token is shown only at creation, so it is kept in a file.
if [ ! -s "$DATA/admin.key" ]; then
	out=$("$BIN/metactl" key create --principal root)
	token=$(printf '%s\n' "$out" | sed -n 's/^token: //p')
	if [ -z "$token" ]; then
		echo "metactl key create printed no token:" >&2
		printf '%s\n' "$out" >&2
		exit 1
	fi
	(umask 077 && printf '%s\n' "$token" >"$DATA/admin.key.tmp")
	mv "$DATA/admin.key.tmp" "$DATA/admin.key"
fi

# The worker mounts new segments each run and unmounts them when it stops; segments of its client
# id still mounted are left by a run that did not stop cleanly (its pings would keep them forever).
stale=$("$BIN/metactl" segment ls --client "$WORKER_ID" -o json | { grep -o '"id": *"[0-9a-f-]*"' || true; } | cut -d'"' -f4)
for s in $stale; do
	"$BIN/metactl" segment unmount "$s" --client "$WORKER_ID" >/dev/null
done
[ -z "$stale" ] || echo "unmounted $(echo "$stale" | wc -l) segment(s) left by the worker's last run"

set -m
"$BIN/metactl" --cert "$CERTS/client.$WORKER.crt" --key "$CERTS/client.$WORKER.key" \
	worker --client "$WORKER_ID" --segments 4 --segment-size 1GiB --unmount-on-exit </dev/null >"$DATA/logs/worker.log" 2>&1 &
worker_pid=$!
set +m

cat <<MSG
metad is running: a secure 3-node cluster on 127.0.0.1 (client ports 6001-6003, peer 6101-6103,
metrics 6201-6203; TLS on every port), data under $DATA/, logs under $DATA/logs/, and a worker
(principal $WORKER, client id $WORKER_ID) with four 1 GiB memory segments.

Certificates (dev CA, members n1..n3, clients root and $WORKER): $CERTS/
Admin API key (principal root; the token is shown nowhere else): $DATA/admin.key
metactl uses $CERTS by default and is root by its client certificate there.

In another terminal:
  bin/metactl status
  bin/metactl put k1 --size 4096
  bin/metactl get k1
  bin/metactl tenant ls
  bin/metactl leader transfer
  bin/metactl --api-key "\$(cat $DATA/admin.key)" key ls
  curl -s --cacert $CERTS/ca.crt --cert $CERTS/client.root.crt --key $CERTS/client.root.key https://127.0.0.1:6201/metrics | grep ^metad_

Kill a node (kill -9 a pid below) and keep working: the others elect a new leader.
metad pids: ${metad_pids[*]}
Ctrl-C stops everything.
MSG
wait "${metad_pids[@]}" "$worker_pid"
