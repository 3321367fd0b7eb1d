package service

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"metad/store"
	"metad/store/alloc"
)

// Every metric of the package is declared in this file and registered on the Registerer given to
// New. Labels are bounded: tiers, and at most maxTenantLabels tenant names (the rest fold into
// tenant="_other", a name no tenant can have). No object key is a label. The names keep the
// metad_server_ prefix they had when the gRPC server owned them, so dashboards keep working.

// maxTenantLabels bounds the per-tenant series: the first tenants by name get their own label.
const maxTenantLabels = 100

// otherTenants is the label of the tenants past maxTenantLabels (tenant ids never start with '_').
const otherTenants = "_other"

// metrics is safe for concurrent use (prometheus collectors are).
type metrics struct {
	clientsExpired   prometheus.Counter
	gracefulUnmounts prometheus.Counter
	// Drain jobs, as the leader's loop last saw them (summed over the running jobs).
	drainObjectsLeft, drainMoved, drainFailed, drainsRunning prometheus.Gauge
	// Watch delivery: how far behind the change an event leaves this member, in time (from the
	// leader's proposal to the send) and in log entries (this member's applied index past it).
	watchLagSeconds, watchLagEntries prometheus.Histogram
	// scanPagesCut counts the pattern pages their budget ended before they had their limit of
	// matches, by bound ("time": Config.ScanPageTime, "keys": Config.ScanExamine).
	scanPagesCut *prometheus.CounterVec
	// rateLimited counts the calls refused for their principal's rate limits, by limit ("calls",
	// "keys", "streams"); no principal is a label.
	rateLimited *prometheus.CounterVec
	// hits counts the objects Get and BatchGet answered, by the tier a reader reads first
	// (tierHits.add): hits[alloc.Tier].
	hits [alloc.TierDFS + 1]prometheus.Counter
}

// tierHits counts answered objects by the tier a reader reads first, for metrics.hits.
type tierHits [alloc.TierDFS + 1]int

// add counts one object answered with the replicas reps (the store's, COMPLETE ones): the lowest
// tier among them in alloc.Tiers order (MEMORY, NOF, LOCAL_DISK, DISK, DFS: the tier's number).
func (h *tierHits) add(reps []store.Replica) {
	best := alloc.Tier(0)
	for i := range reps {
		if t := reps[i].Tier; t.Valid() && (best == 0 || t < best) {
			best = t
		}
	}
	if best.Valid() {
		h[best]++
	}
}

// hit adds the counts of h to the hit counters, once per call (not per object of a batch).
func (m *metrics) hit(h *tierHits) {
	for t, n := range h {
		if n > 0 {
			m.hits[t].Add(float64(n))
		}
	}
}

func newMetrics(reg prometheus.Registerer, state func() *store.Store) (*metrics, error) {
	m := &metrics{
		clientsExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_server_clients_expired_total",
			Help: "Clients this node, as leader, expired after client_ttl without a Ping (their segments unmounted).",
		}),
		gracefulUnmounts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_server_graceful_unmounts_total",
			Help: "Closing segments this node, as leader, unmounted at the end of their grace period or once empty.",
		}),
		drainObjectsLeft: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_server_drain_objects_left",
			Help: "Objects with a replica left on the segments of the running drain jobs, as this node last counted them as leader.",
		}),
		drainMoved: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_server_drain_objects_moved",
			Help: "Objects the running drain jobs moved off their segments (moves that succeeded), as this node last saw them as leader.",
		}),
		drainFailed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_server_drain_moves_failed",
			Help: "Moves of the running drain jobs that failed (their objects are scheduled again), as this node last saw them as leader.",
		}),
		drainsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_server_drains_running",
			Help: "Drain jobs running, as this node last saw them as leader.",
		}),
	}
	m.scanPagesCut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metad_server_scan_pages_cut_total",
		Help: "GetByRegex and RemoveByRegex pages that their budget ended before they held their limit of matches, by bound (time: scan-page-time of matching; keys: scan-examine keys examined); the next page goes on from there."},
		[]string{"bound"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metad_server_rate_limited_total",
		Help: "Calls this member refused because their principal was over a rate limit (SetLimit), by limit: calls (per second), keys (per second), streams (watch streams open at once)."},
		[]string{"limit"})
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metad_server_get_hits_total",
		Help: "Objects Get and BatchGet answered on this member, by the tier a reader reads first: memory when the object has a MEMORY replica, else nof, else local_disk, disk, dfs."},
		[]string{"tier"})
	for _, t := range alloc.Tiers {
		m.hits[t] = hits.WithLabelValues(strings.ToLower(t.String()))
	}
	m.watchLagSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "metad_watch_delivery_lag_seconds",
		Help:    "Time from the leader's proposal of a change to this member's send of its watch event (one sample per response, its oldest event).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	m.watchLagEntries = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "metad_watch_delivery_lag_entries",
		Help:    "Log entries this member had applied past a watch event when it sent it (one sample per response, its oldest event).",
		Buckets: prometheus.ExponentialBuckets(1, 4, 12)})
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.clientsExpired, m.gracefulUnmounts, m.drainObjectsLeft, m.drainMoved, m.drainFailed, m.drainsRunning,
		m.watchLagSeconds, m.watchLagEntries, m.scanPagesCut, m.rateLimited, hits, newStoreCollector(state)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// storeCollector is safe for concurrent use: it reads the current store on every scrape and
// reports its census.
type storeCollector struct {
	state func() *store.Store

	tenants, objects, groups       *prometheus.Desc
	segments, used, capacity       *prometheus.Desc // by tier
	closing, allocatable           *prometheus.Desc // by tier
	tenantCharged, tenantEffective *prometheus.Desc // by tenant
	lockWait                       *prometheus.Desc // by lock
	tasks                          *prometheus.Desc // by kind and state
	tierObjects, diskOnly          *prometheus.Desc // objects with a replica of each tier; disk-only objects
}

var _ prometheus.Collector = (*storeCollector)(nil)

func newStoreCollector(state func() *store.Store) *storeCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &storeCollector{
		state:           state,
		tenants:         d("metad_server_store_tenants", "Registered tenants in this node's store."),
		objects:         d("metad_server_store_objects", "Objects in this node's store."),
		groups:          d("metad_server_store_groups", "Explicit groups in this node's store."),
		segments:        d("metad_server_store_segments", "Mounted segments, by tier.", "tier"),
		used:            d("metad_server_store_used_bytes", "Bytes allocated to replicas in the mounted segments, by tier.", "tier"),
		capacity:        d("metad_server_store_capacity_bytes", "Summed size of the mounted segments, by tier.", "tier"),
		closing:         d("metad_server_store_closing_segments", "Mounted segments that take no new allocation (a graceful unmount in progress), by tier.", "tier"),
		allocatable:     d("metad_server_store_allocatable_bytes", "Summed size of the mounted segments that take allocations (not closing), by tier.", "tier"),
		tenantCharged:   d("metad_server_tenant_charged_bytes", "MEMORY bytes charged to the tenant (the first 100 tenants by name; the rest summed as _other).", "tenant"),
		tenantEffective: d("metad_server_tenant_effective_quota_bytes", "Effective quota of the tenant, bytes; 0 = no quota (the first 100 tenants by name; the rest summed as _other).", "tenant"),
		tierObjects:     d("metad_server_store_tier_objects", "Objects with at least one replica of the tier.", "tier"),
		diskOnly:        d("metad_server_store_disk_only_objects", "Objects with replicas but none in memory: LOCAL_DISK, DISK or DFS ones alone."),
		tasks:           d("metad_server_store_tasks", "Scheduled tasks kept (finished ones for an hour, at most 65,536), by kind (copy, move, offload) and state.", "kind", "state"),
		lockWait:        d("metad_store_lock_wait_seconds", "Wait for a lock on the read path, one read in 64 sampled: lock=route (route shard read lock) or object (the object's lock).", "lock"),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tenants, c.objects, c.groups, c.segments, c.used, c.capacity, c.closing, c.allocatable, c.tenantCharged, c.tenantEffective, c.lockWait, c.tasks, c.tierObjects, c.diskOnly} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.state()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	ts := st.TenantInfos() // sorted by name
	var objects int64
	var groups int
	var otherCharged, otherEffective uint64
	for i, t := range ts {
		objects += t.Objects
		groups += t.Groups
		if i < maxTenantLabels {
			gauge(c.tenantCharged, float64(t.Charged), t.Name)
			gauge(c.tenantEffective, float64(t.Effective), t.Name)
		} else {
			otherCharged += t.Charged
			otherEffective += t.Effective
		}
	}
	if len(ts) > maxTenantLabels {
		gauge(c.tenantCharged, float64(otherCharged), otherTenants)
		gauge(c.tenantEffective, float64(otherEffective), otherTenants)
	}
	gauge(c.tenants, float64(len(ts)))
	gauge(c.objects, float64(objects))
	gauge(c.groups, float64(groups))
	segs := st.Segments()
	var count, closing [alloc.TierDFS + 1]int
	for _, sg := range segs.List() {
		if sg.Tier.Valid() {
			count[sg.Tier]++
			if sg.Closing {
				closing[sg.Tier]++
			}
		}
	}
	for _, tier := range alloc.Tiers {
		label := strings.ToLower(tier.String())
		gauge(c.segments, float64(count[tier]), label)
		gauge(c.used, float64(segs.Used(tier)), label)
		gauge(c.capacity, float64(segs.Capacity(tier)), label)
		gauge(c.closing, float64(closing[tier]), label)
		allocatable, _ := segs.Allocatable(tier)
		gauge(c.allocatable, float64(allocatable), label)
	}
	to := st.TierObjects()
	for _, tier := range alloc.Tiers {
		gauge(c.tierObjects, float64(to.Of(tier)), strings.ToLower(tier.String()))
	}
	gauge(c.diskOnly, float64(to.DiskOnly))
	counts := st.Tasks().Counts()
	for _, kind := range []store.TaskKind{store.TaskCopy, store.TaskMove, store.TaskOffload, store.TaskPromote} {
		for _, state := range []store.TaskState{store.TaskPending, store.TaskProcessing, store.TaskSuccess, store.TaskFailed} {
			gauge(c.tasks, float64(counts[kind][state]), kind.String(), strings.ToLower(state.String()))
		}
	}
	w := st.LockWaits()
	for _, l := range []struct {
		name string
		h    *store.WaitHist
	}{{"route", &w.Route}, {"object", &w.Object}} {
		n, sum, buckets := l.h.Read()
		ch <- prometheus.MustNewConstHistogram(c.lockWait, n, sum, buckets, l.name)
	}
}

// reserveMetrics are the reservation table's and the keeper's metrics.
type reserveMetrics struct {
	reservations, reservedBytes  prometheus.Gauge
	commits, reaped              prometheus.Counter
	grants, retires, idleRetires prometheus.Counter
	fallbacks                    *prometheus.CounterVec
	arenaFree                    *prometheus.GaugeVec
}

func newReserveMetrics(reg prometheus.Registerer) (*reserveMetrics, error) {
	m := &reserveMetrics{
		reservations: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metad_server_reservations",
			Help: "PutStarts this node, as leader, answered from its arenas and not yet committed or dropped."}),
		reservedBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metad_server_reserved_quota_bytes",
			Help: "Tenant quota bytes the reservations hold (size x MEMORY replicas), on the leader."}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_server_reservation_commits_total",
			Help: "Reserved writes committed (PutCommit created the object)."}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_server_reservations_reaped_total",
			Help: "Reservations dropped because they outlived put_release_timeout."}),
		grants: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_server_arena_grants_total",
			Help: "Arenas granted to this node as leader (ArenaGrant)."}),
		retires: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_server_arena_retires_total",
			Help: "Arenas of earlier terms this node, as leader, retired after the fence."}),
		idleRetires: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_server_arena_idle_retires_total",
			Help: "Arenas of its own term this node, as leader, retired with no reservation in them because a put found no span large enough."}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "metad_server_put_start_logged_total",
			Help: "PutStarts that went through the log instead of an arena, by why."}, []string{"reason"}),
		arenaFree: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "metad_server_arena_free_bytes",
			Help: "Bytes the arenas hold that no object took yet (allocated in their segments; free for reservations), by tier, as the leader last saw them."},
			[]string{"tier"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.reservations, m.reservedBytes, m.commits, m.reaped, m.grants, m.retires, m.idleRetires, m.fallbacks, m.arenaFree} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *reserveMetrics) fallback(reason string) { m.fallbacks.WithLabelValues(reason).Inc() }

func (m *reserveMetrics) reserved(n, bytes int64) {
	m.reservations.Add(float64(n))
	m.reservedBytes.Add(float64(bytes))
}
