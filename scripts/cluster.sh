# Sourced by the benchmark scripts: start_cluster BASE starts a 3-node metad cluster on loopback
# (client ports BASE+1..3, peer ports BASE+101..103, metrics ports BASE+201..203) from $BIN, with
# its data under a fresh temp dir, exports METAD_ENDPOINTS, and waits until a leader answers;
# stop_cluster (also run on exit) stops it and removes the data. Extra metad flags follow BASE.
root="" pids=()
stop_cluster() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "$root" ] && rm -rf "$root"
	root="" pids=()
}
start_cluster() {
	local base=$1
	shift
	root=$(mktemp -d)
	trap stop_cluster EXIT
	local cluster="n1=127.0.0.1:$((base + 101)),n2=127.0.0.1:$((base + 102)),n3=127.0.0.1:$((base + 103))"
	for i in 1 2 3; do
		"$BIN/metad" --name "n$i" --data-dir "$root/n$i" --listen-client "127.0.0.1:$((base + i))" \
			--listen-peer "127.0.0.1:$((base + 100 + i))" --listen-metrics "127.0.0.1:$((base + 200 + i))" \
			--initial-cluster "$cluster" --log-level warn --insecure "$@" >"$root/n$i.log" 2>&1 &
		pids+=($!)
	done
	export METAD_ENDPOINTS="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
	for _ in $(seq 1 100); do
		"$BIN/metactl" --timeout 1s status 2>/dev/null | grep -q " leader " && return 0
		sleep 0.1
	done
	echo "no leader after 10 s" >&2
	return 1
}
