# Sourced by the benchmark scripts.
#
# start_cluster [--certs DIR] BASE [FLAGS...] starts a 3-node metad cluster on loopback (client
# ports BASE+1..3, peer ports BASE+101..103, metrics ports BASE+201..203) from $BIN, with its data
# under a fresh temp dir, exports METAD_ENDPOINTS and METAD_CERTS_DIR, and waits until a leader
# answers. FLAGS go to every metad. Without --certs the cluster is plaintext (--insecure), and
# METAD_CERTS_DIR names an empty directory, so that metactl speaks plaintext to it even where
# ./data/certs exists. With --certs DIR (a PKI laid out as `metactl cert` writes it, see make_pki)
# node nI runs TLS with member.nI.crt and authentication on, and METAD_CERTS_DIR is DIR, so that
# metactl calls as root (client.root.crt) unless told otherwise. Several clusters may run at once on
# different BASEs; the caller keeps the exported values of each.
#
# make_pki creates such a PKI in a fresh temp dir and sets pki to its path: a CA, member
# certificates for n1..n3 valid for 127.0.0.1 and localhost, and root's client certificate.
#
# start_worker [FLAGS...] runs `metactl worker FLAGS` against the cluster that METAD_ENDPOINTS and
# METAD_CERTS_DIR name (as root in a secure one) until stop_cluster, and waits until it has mounted.
#
# stop_cluster (also run on exit) stops every cluster and worker started and removes their data and
# PKIs.
roots=() pids=()
stop_cluster() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for d in "${roots[@]}"; do rm -rf "$d"; done
	roots=() pids=()
}
make_pki() {
	pki=$(mktemp -d)
	roots+=("$pki")
	trap stop_cluster EXIT
	"$BIN/metactl" cert create-ca --certs-dir "$pki" >/dev/null
	for i in 1 2 3; do
		"$BIN/metactl" cert create-member --certs-dir "$pki" --name "n$i" --hosts 127.0.0.1,localhost >/dev/null
	done
	"$BIN/metactl" cert create-client --certs-dir "$pki" --name root >/dev/null
}
start_worker() {
	local out
	out=$(mktemp)
	roots+=("$out")
	"$BIN/metactl" worker "$@" >"$out" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do
		grep -q " mounted " "$out" && return 0
		sleep 0.1
	done
	echo "the worker mounted nothing within 10 s:" >&2
	cat "$out" >&2
	return 1
}
start_cluster() {
	local certs=""
	if [ "${1:-}" = "--certs" ]; then
		certs=$2
		shift 2
	fi
	local base=$1
	shift
	local root
	root=$(mktemp -d)
	roots+=("$root")
	trap stop_cluster EXIT
	local cluster="n1=127.0.0.1:$((base + 101)),n2=127.0.0.1:$((base + 102)),n3=127.0.0.1:$((base + 103))"
	for i in 1 2 3; do
		local sec=(--insecure)
		if [ -n "$certs" ]; then
			sec=(--cacert "$certs/ca.crt" --cert "$certs/member.n$i.crt" --key "$certs/member.n$i.key")
		fi
		"$BIN/metad" --name "n$i" --data-dir "$root/n$i" --listen-client "127.0.0.1:$((base + i))" \
			--listen-peer "127.0.0.1:$((base + 100 + i))" --listen-metrics "127.0.0.1:$((base + 200 + i))" \
			--initial-cluster "$cluster" --log-level warn "${sec[@]}" "$@" >"$root/n$i.log" 2>&1 &
		pids+=($!)
	done
	export METAD_ENDPOINTS="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
	if [ -n "$certs" ]; then
		export METAD_CERTS_DIR=$certs
	else
		mkdir "$root/no-certs"
		export METAD_CERTS_DIR=$root/no-certs
	fi
	for _ in $(seq 1 100); do
		"$BIN/metactl" --timeout 1s status 2>/dev/null | grep -q " leader " && return 0
		sleep 0.1
	done
	echo "no leader after 10 s; the nodes' logs end:" >&2
	tail -n 5 "$root"/n*.log >&2
	return 1
}
