# metad build, test and benchmark entry points. Every target installs or builds what it needs.
# `make test` is what CI runs (through .ci/run); keep it under 15 minutes on 2 cores.

GO        ?= go
BIN       := bin
PKGS      := ./...
BENCHTIME ?= 1x
BENCHCPU  ?= 1,2

.PHONY: all build run clean-data test race unit lint fuzz-short bench bench-store bench-fsm bench-cluster bench-raft bench-trace bench-watch bench-failover bench-evict bench-sessions bench-security bench-exist bench-tiers bench-scale chaos proto tools clean python-env python-test bench-python

all: build

## build: the binaries (bin/metad, bin/metactl) and every package.
build:
	$(GO) build -o $(BIN)/ ./cmd/...
	$(GO) build $(PKGS)

## run: a local secure 3-node cluster on loopback with a simulated worker; Ctrl-C stops it. Its first
## run creates a dev CA, certificates (data/certs) and an admin API key (data/admin.key).
run: build
	./scripts/run-cluster.sh

## clean-data: forget the local cluster's state.
clean-data:
	rm -rf data

## test: lint, every test with the race detector, a short run of each fuzz target, and the Python
## client's suite (what CI runs).
test: lint race fuzz-short python-test

# The Python client (python/) runs on Debian's Python and packages (these machines reach no Python
# index): python-env installs those missing, then makes a virtual environment in PYVENV that sees
# them (--system-site-packages) and holds the package installed from python/ (editable).
PYTHON    := /usr/bin/python3
PYVENV    := python/.venv
PY_DEBS   := python3-venv python3-pip python3-setuptools python3-grpcio python3-protobuf python3-pytest mypy

## python-env: Debian's Python packages for the client (apt-get, when missing) and its venv in python/.venv.
python-env:
	@missing=$$(for p in $(PY_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:" $$missing; \
	    if [ "$$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; \
	  fi
	@if [ ! -x $(PYVENV)/bin/python ]; then \
	    $(PYTHON) -m venv --system-site-packages $(PYVENV) && \
	    $(PYVENV)/bin/pip install -q --no-index --no-build-isolation --no-deps -e ./python; \
	  fi

## python-test: mypy (strict) over the Python client, then its pytest suite on real 3-node clusters.
python-test: python-env
	$(GO) build -o $(BIN)/ ./cmd/...
	cd python && .venv/bin/python -m mypy
	cd python && .venv/bin/python -m pytest -q

# A count of executions, not a duration: with a duration, Go 1.26's fuzz coordinator can report
# "context deadline exceeded" as a failure when the time runs out under CPU load (golang/go#75804,
# fixed in Go 1.27). 30000 executions take about 5-10 s per target on 2 cores.
FUZZTIME ?= 30000x

## fuzz-short: each fuzz target for FUZZTIME (garbage must give clear errors, never a panic).
fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAndApply$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./fsm/
	$(GO) test -run '^$$' -fuzz '^FuzzSnapshotReader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./fsm/

## race: all tests under the race detector.
# The short failover drill in make test replays one seed (its plan has an online snapshot restore
# under load, a leader kill, a leader isolation, two restart-then-transfer faults, two spells of
# lost answers from the leader and a leader paused past the client ttl) with no anomaly tolerated; DRILL_KNOWN names anomalies to tolerate while one is being fixed
# (see "Known anomalies" in test/chaos/doc.go). make chaos runs fresh seeds with nothing tolerated.
DRILL_SEED  ?= 303945861
DRILL_KNOWN ?=

race:
	CHAOS_SEED=$(DRILL_SEED) CHAOS_KNOWN=$(DRILL_KNOWN) $(GO) test -race -count=1 -timeout 12m $(PKGS)

## unit: all tests without the race detector (quicker while editing).
unit:
	$(GO) test -count=1 $(PKGS)

# promtool comes from Debian's prometheus package, unpacked into $(TOOLS) (fetched when missing,
# with apt-get update first if the package lists lack it). Installing the package instead would
# also start a Prometheus server (its postinst starts the service) and pull its dependencies.
PROMTOOL ?= $(TOOLS)/promtool

## lint: gofmt (generated code excepted), go vet, the package layering of docs/design.md, staticcheck,
## and promtool over deploy/: the alert rules, and the dashboard's queries as recording rules.
lint: tools
	@out=$$(gofmt -l $$(find . -name '*.go' -not -name '*.pb.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 ./internal/layering/
	$(STATICCHECK) $(PKGS)
	@if ! command -v $(PROMTOOL) >/dev/null; then \
	    echo "installing $(PROMTOOL) from Debian's prometheus package"; \
	    tmp=$$(mktemp -d); \
	    if ! (cd $$tmp && apt-get download -qq prometheus >/dev/null 2>&1); then \
	      if [ "$$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi; \
	      $$sudo apt-get update -qq && (cd $$tmp && apt-get download -qq prometheus) || { rm -rf $$tmp; exit 1; }; \
	    fi; \
	    mkdir -p $(dir $(PROMTOOL)) && dpkg-deb --fsys-tarfile $$tmp/prometheus_*.deb | tar -xO ./usr/bin/promtool > $(PROMTOOL).new && \
	      chmod 755 $(PROMTOOL).new && mv $(PROMTOOL).new $(PROMTOOL); \
	    status=$$?; rm -rf $$tmp $(PROMTOOL).new; exit $$status; \
	  fi
	$(PROMTOOL) check rules deploy/prometheus/alerts.yml
	PROMTOOL=$(PROMTOOL) $(GO) test -count=1 -run '^TestDashboardQueriesPassPromtool$$' ./cmd/metad/

# The lint tools, pinned; `make tools` installs them into $(TOOLS), as proto/generate.sh does its
# generators. v0.8.2 is staticcheck 2026.2.2, which builds with and understands Go 1.26.
TOOLS               := $(CURDIR)/$(BIN)/tools
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(TOOLS)/staticcheck

## tools: the pinned lint tools in bin/tools (staticcheck of honnef.co/go/tools at STATICCHECK_VERSION);
## a tool is reinstalled when its pin changes.
tools:
	@have=$$($(STATICCHECK) -version 2>/dev/null | sed -n 's/.*(\(.*\))$$/v\1/p'); \
	  if [ "$$have" != "$(STATICCHECK_VERSION)" ]; then \
	    echo "installing honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) into $(BIN)/tools"; \
	    GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	  fi

## bench: every benchmark table of docs/performance.md (the drill tables come from make chaos).
bench: bench-store bench-fsm bench-cluster bench-raft bench-trace bench-watch bench-failover bench-evict bench-sessions bench-security bench-exist bench-abuse bench-tiers

## bench-fsm: apply throughput and snapshot Snapshot/Persist/Restore at 1M objects.
bench-fsm:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./fsm/

## bench-raft: one commit round (a PutEnd's Propose on three in-process nodes) on raft-wal and on
## raft-boltdb, p50 and p99.
bench-raft:
	$(GO) test -run '^$$' -bench '^BenchmarkCommitRound$$' -benchtime 1500x ./ha/

## bench-cluster: object puts/s (PutStart + PutEnd), single-client object put p50, leader CPU per
## object put and linearizable gets/s of a 3-node loopback cluster beside the etcd baseline; then
## a batch put's cost per object at the service seam (BenchmarkBatchPut).
bench-cluster: build
	./scripts/bench-cluster.sh 64 10
	$(GO) test -run '^$$' -bench '^BenchmarkBatchPut$$' -benchtime 400x ./service/

## bench-trace: where a single client's object put spends its time (PutStart, PutEnd, the leader's
## commit round, a Get's round trip) and the system calls per object put of the leader and a follower.
bench-trace: build
	./scripts/bench-put-trace.sh 5

## bench-watch: object puts/s with 16 watch streams and with one stalled watcher against
## none, alternated in one run, and the delivery lag at 10,000 objects/s; then the events/s one Watch
## stream delivers over loopback gRPC and the window's append and read costs.
bench-watch: build
	./scripts/bench-watch.sh 64 8 2
	$(GO) test -run '^$$' -bench WatchStream -benchtime 3x ./server/
	$(GO) test -run '^$$' -bench Cursor -benchtime 2s ./watch/

## bench-sessions: object puts/s at 64 clients with client sessions and without, alternated in one
## run (the ratio is the sessions' cost), and the heap that 10k full sessions keep.
bench-sessions: build
	./scripts/bench-sessions.sh 64 10 3
	$(GO) test -run '^$$' -bench SessionMemory -benchtime 1x ./fsm/

## bench-security: put and get throughput at 64 clients and single-client put p50 of a TLS cluster
## with an API key against a plaintext one, alternated in one run (ratios printed); then the
## reconnect storm: 1,000 TLS clients with keys through a leader kill, beside the failover figure
## (about 12 minutes).
bench-security: build
	./scripts/bench-security.sh 64 10 5
	$(GO) test -run '^$$' -bench ReconnectStorm -benchtime 1x -timeout 20m -v ./test/e2e/ -args -storm.clients=1000 -storm.rounds=5

## bench-abuse: a victim tenant's read p99 and its share of reads within twice its baseline p99
## while another tenant's principal abuses the leader (10,000 watch streams, 8 MiB headers, regex
## scans without pause), each against a baseline measured just before; fails below 99 % in three
## tries of an abuse (make test runs it once and checks only the defences).
bench-abuse: build
	METAD_ABUSE_STRICT=1 $(GO) test -count=1 -run '^TestAbuseVictim$$' -timeout 20m -v ./test/e2e/

## bench-exist: p50 and p99 of a 50,000-key BatchExist on a 3-node cluster holding 1M objects,
## beside the same keys asked in 4,096-key requests in the same run.
bench-exist: build
	./scripts/bench-exist.sh 1000000 50000 30

## bench-evict: Get and PutEnd throughput and p99 on a 3-node cluster with 1M objects, without and
## during memory eviction, for group sizes 1, 8 and 64; five repetitions each, medians reported
## (about 22 minutes).
bench-evict:
	$(GO) test -run '^$$' -bench ForegroundDuringEviction -benchtime 1x -timeout 60m ./evict/ -args -evict.reps=5

## bench-tiers: the replica tiers' targets, each against its memory-only twin in the same run: a
## memory eviction round over 1M objects with 95 % on disk alone, the heap of a disk-only object,
## and a Get of one; then one worker's offload throughput on a 3-node cluster (about 2 minutes).
bench-tiers:
	$(GO) test -run '^$$' -bench '^BenchmarkRoundDiskOnlyMix$$' -benchtime 1x -timeout 20m ./evict/
	$(GO) test -run '^$$' -bench '^BenchmarkHeapDiskOnly$$' -benchtime 1x ./store/
	$(GO) test -run '^$$' -bench '^BenchmarkGetDiskOnly$$' -benchtime 200000x ./service/
	$(GO) test -run '^$$' -bench '^BenchmarkOffloadThroughput$$' -benchtime 1x -timeout 10m ./test/e2e/

## bench-scale: N objects (default 1,000,000) loaded into 3 members with default flags; prints
## the load rate (first and last tenth), leader changes, RSS and live heap per object, snapshot
## save / inspect / online restore and a follower's restart per million objects, with targets.
N ?= 1000000
bench-scale:
	SCALE_N=$(N) $(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 180m ./test/e2e/

## bench-failover: kill -9 of the leader and planned transfer to the first write (real processes).
bench-failover:
	$(GO) test -run '^$$' -bench 'FailoverLeaderKill|PlannedTransfer' -benchtime 1x -timeout 20m ./test/e2e/

## bench-python: the Python clients' (asyncio, threads) puts/s, gets/s and CPU per op beside the Go
## client's (metactl bench) and grpcio's alone, same run, same concurrency (CLIENTS, default 16), on a
## fresh 3-node loopback cluster.
CLIENTS ?= 16
bench-python: python-env
	$(GO) build -o $(BIN)/ ./cmd/...
	$(PYVENV)/bin/python python/bench/bench.py --clients $(CLIENTS) --seconds 5

## bench-store: the store against the old shard-lock design, same process, ratios printed.
bench-store:
	$(GO) test -run '^$$' -bench . -benchmem -cpu $(BENCHCPU) -timeout 60m ./store/ | tee bench-store.txt
	$(GO) run ./store/internal/benchratio < bench-store.txt

## proto: regenerate the committed protobuf and gRPC code (Go) with pinned generators, and the Python
## client's message stubs (its schemas only), exception classes and result dataclasses.
proto:
	./proto/generate.sh

SEEDS    ?= 20
DURATION ?= 60s

## chaos: SEEDS seeded failover drills of DURATION each on real processes; prints the summary
## (linearizability violations, lost writes, state divergence, unavailability) and writes
## reports under test/chaos/report/; then the rolling upgrade from the previous tagged release
## (test/e2e/previous-release) with UPGRADE_GAP between steps (make test runs it with 3 s); then
## TIERS_SEEDS tiers drills (objects offloaded, evicted to disk, promoted; reports under
## test/chaos/report/tiers/).
UPGRADE_GAP ?= 20s
TIERS_SEEDS ?= 5
chaos:
	CHAOS_SEEDS=$(SEEDS) CHAOS_DURATION=$(DURATION) $(GO) test -count=1 -run '^TestDrillMany$$' -timeout 180m -v ./test/chaos/
	CHAOS_TIERS=1 CHAOS_REPORT_DIR=report/tiers CHAOS_SEEDS=$(TIERS_SEEDS) CHAOS_DURATION=$(DURATION) $(GO) test -count=1 -run '^TestDrillMany$$' -timeout 60m -v ./test/chaos/
	CHAOS_UPGRADE_GAP=$(UPGRADE_GAP) $(GO) test -count=1 -run '^TestUpgradeDrill$$' -timeout 30m -v ./test/chaos/

clean:
	rm -rf $(BIN) bench-*.txt $(PYVENV)
