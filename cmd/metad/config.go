package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"metad/audit"
	"metad/evict"
	"metad/fsm"
	"metad/ha"
	"metad/server"
	"metad/service"
	"metad/store/alloc"
	"metad/watch"
)

// Config is everything `metad` reads at start. Every field has one name, used alike as a flag
// (--data-dir), an environment variable (METAD_DATA_DIR) and a key of the YAML file given with
// --config (data-dir: ...). Precedence: defaults < YAML < environment < flags.
type Config struct {
	Name                string
	DataDir             string
	LogStore            string // "", wal or boltdb (ha.Config.LogStore)
	ListenClient        string
	AdvertiseClient     string
	ListenPeer          string
	AdvertisePeer       string
	ListenMetrics       string
	Pprof               bool // serve /debug/pprof on the metrics address
	InitialCluster      string
	InitialClusterState string // new | existing

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	SnapshotThreshold  uint64
	SnapshotInterval   time.Duration

	LeaseTTL          time.Duration
	ClientTTL         time.Duration
	PutDiscardTimeout time.Duration
	Placement         string
	ForwardTimeout    time.Duration // bound on one call a follower forwards to the leader (server.Config)
	// MaxConcurrentStreams and MaxHeaderListBytes are the limits of one client connection
	// (server.Config): calls open at once, and bytes of one call's metadata.
	MaxConcurrentStreams uint
	MaxHeaderListBytes   uint
	// RefusalHold is how long an UNAUTHENTICATED or RATE_LIMITED refusal is held (server.Config).
	RefusalHold   time.Duration
	SessionTTL    time.Duration // a client session unused this long expires (service.Config)
	SessionWindow uint          // sequence numbers a session may have in use at once (service.Config)
	NoArenas      bool          // every PutStart through the log (service.Config.NoArenas)
	ScanExamine   int           // keys one pattern page examines at most (service.Config)
	ScanPageTime  time.Duration // matching time of one pattern page at most (service.Config)
	AutoPromote   bool          // the leader promotes caught-up learners (service.Config.AutoPromote)

	EvictHighWatermark   float64
	EvictRatio           float64
	NOFHighWatermark     float64
	NOFEvictRatio        float64
	DiskHighWatermark    float64
	DiskEvictRatio       float64
	DFSHighWatermark     float64
	DFSEvictRatio        float64
	AllowEvictSoftPinned bool
	OffloadOnEvict       bool // memory eviction waits for offloads (evict.Config.OffloadOnEvict)
	PromoteOnHit         bool // reads of disk-only objects queue promotions (service.Config.PromoteOnHit)
	PromoteMinHits       int  // reads before a promotion (service.Config.PromoteMinHits)
	ForceEvict           bool // ... unless the offload queue is full (evict.Config.ForceEvict)
	PutReleaseTimeout    time.Duration

	// TLS: the member's node certificate (naming metad://member/<Name>) and the cluster's CA
	// bundle, used by every listener and dialer; or Insecure, for a plaintext cluster on loopback
	// addresses only. One of the two is required.
	CACert                string
	Cert                  string
	Key                   string
	ClientCertAuth        string        // optional | require: whether a client must present a verified certificate
	MetricsClientCertAuth string        // require | optional: whether /metrics and the profiler need a verified client certificate (server.ScrapeAuth)
	TLSReloadInterval     time.Duration // how often the three files are checked for a change (SIGHUP reloads at once)
	Insecure              bool

	// WatchEvents and WatchBytes bound the watch events this member retains (watch.Limits).
	WatchEvents int
	WatchBytes  int64

	// KVEventsListen is the ZMQ endpoint of the old master's KV event feed (package kvfeed), ""
	// for none; KVEventsBackendID is its events' backend_id, "" for Name.
	KVEventsListen    string
	KVEventsBackendID string

	// AuditLog is the audit log's file, "" for none; it rotates past AuditLogMaxBytes and keeps
	// AuditLogMaxFiles rotated files (package audit).
	AuditLog         string
	AuditLogMaxBytes int64
	AuditLogMaxFiles int
	BackupConfig     // scheduled backups and the restore of an empty data dir from them (backup.go)

	ExtraProcs  int   // GOMAXPROCS beyond the CPUs this process may use (ha.SetProcs)
	GCPercent   int   // the collector's target, GOGC (setGC); the environment's GOGC wins
	MemoryLimit int64 // the collector's soft memory limit in bytes, 0: half the machine's (setGC); GOMEMLIMIT wins
	LogLevel    string
}

// DefaultConfig returns the defaults: a single node n1 on the first of the loopback ports that
// `make run` uses.
func DefaultConfig() Config {
	hc := ha.DefaultConfig()
	ec := evict.DefaultConfig()
	return Config{
		EvictHighWatermark:    ec.HighWatermark,
		EvictRatio:            ec.EvictRatio,
		NOFHighWatermark:      ec.NOFHighWatermark,
		NOFEvictRatio:         ec.NOFEvictRatio,
		DiskHighWatermark:     ec.DiskHighWatermark,
		DiskEvictRatio:        ec.DiskEvictRatio,
		DFSHighWatermark:      ec.DFSHighWatermark,
		DFSEvictRatio:         ec.DFSEvictRatio,
		AllowEvictSoftPinned:  ec.AllowEvictSoftPinned,
		PromoteMinHits:        service.DefaultConfig().PromoteMinHits,
		PutReleaseTimeout:     ec.PutReleaseTimeout,
		Name:                  "n1",
		DataDir:               "data/n1",
		ListenClient:          "127.0.0.1:6001",
		ListenPeer:            "127.0.0.1:6101",
		ListenMetrics:         "127.0.0.1:6201",
		InitialClusterState:   "new",
		HeartbeatTimeout:      hc.HeartbeatTimeout,
		ElectionTimeout:       hc.ElectionTimeout,
		LeaderLeaseTimeout:    hc.LeaderLeaseTimeout,
		SnapshotThreshold:     hc.SnapshotThreshold,
		SnapshotInterval:      hc.SnapshotInterval,
		LeaseTTL:              10 * time.Second,
		ClientTTL:             10 * time.Second,
		PutDiscardTimeout:     30 * time.Second,
		Placement:             "random",
		ForwardTimeout:        server.DefaultConfig().ForwardTimeout,
		MaxConcurrentStreams:  uint(server.DefaultConfig().MaxConcurrentStreams),
		MaxHeaderListBytes:    uint(server.DefaultConfig().MaxHeaderListBytes),
		RefusalHold:           server.DefaultConfig().RefusalHold,
		SessionTTL:            service.DefaultConfig().SessionTTL,
		SessionWindow:         uint(service.DefaultConfig().SessionWindow),
		ScanExamine:           service.DefaultScanExamine,
		ScanPageTime:          service.DefaultScanPageTime,
		ClientCertAuth:        "optional",
		MetricsClientCertAuth: "require",
		TLSReloadInterval:     5 * time.Second,
		WatchEvents:           watch.DefaultLimits.Events,
		WatchBytes:            watch.DefaultLimits.Bytes,
		AuditLogMaxBytes:      audit.DefaultMaxBytes,
		AuditLogMaxFiles:      audit.DefaultMaxFiles,
		ExtraProcs:            ha.DefaultExtraProcs,
		GCPercent:             defaultGCPercent,
		LogLevel:              "info",
		BackupConfig:          defaultBackupConfig(),
	}
}

// flags binds every field to fs under its one name.
func (c *Config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Name, "name", c.Name, "this member's name (Raft server id), unique in the cluster")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the Raft log store (wal/ or raft.db) and snapshots/")
	fs.StringVar(&c.LogStore, "log-store", c.LogStore, "the Raft log store: wal (raft-wal, one fsync per append) or boltdb (raft-boltdb); empty: what the data dir holds, wal for a new one. A data dir keeps the kind it was created with")
	fs.StringVar(&c.ListenClient, "listen-client", c.ListenClient, "gRPC address for clients and operators (host:port)")
	fs.StringVar(&c.AdvertiseClient, "advertise-client", c.AdvertiseClient, "client address others are told (default: --listen-client)")
	fs.StringVar(&c.ListenPeer, "listen-peer", c.ListenPeer, "Raft transport address (host:port)")
	fs.StringVar(&c.AdvertisePeer, "advertise-peer", c.AdvertisePeer, "peer address others dial (default: --listen-peer)")
	fs.StringVar(&c.ListenMetrics, "listen-metrics", c.ListenMetrics, "HTTP address for /metrics and /healthz (empty: off)")
	fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "also serve Go's profiler (/debug/pprof/) on --listen-metrics; off by default, since a profile costs CPU and shows the process's internals")
	fs.StringVar(&c.InitialCluster, "initial-cluster", c.InitialCluster, "members of a new cluster: n1=127.0.0.1:6101,n2=...")
	fs.StringVar(&c.InitialClusterState, "initial-cluster-state", c.InitialClusterState, "new (bootstrap when the data dir is empty) or existing (wait to be added)")
	fs.DurationVar(&c.HeartbeatTimeout, "heartbeat-timeout", c.HeartbeatTimeout, "follower turns candidate after this silence")
	fs.DurationVar(&c.ElectionTimeout, "election-timeout", c.ElectionTimeout, "candidate's election timeout")
	fs.DurationVar(&c.LeaderLeaseTimeout, "leader-lease-timeout", c.LeaderLeaseTimeout, "leader steps down without quorum contact for this long")
	fs.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", c.SnapshotThreshold, "log entries between snapshots")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", c.SnapshotInterval, "how often to check the snapshot threshold")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "read lease granted by Get and Exist")
	fs.DurationVar(&c.ClientTTL, "client-ttl", c.ClientTTL, "a client silent this long is expired and its segments unmounted")
	fs.DurationVar(&c.ForwardTimeout, "forward-timeout", c.ForwardTimeout, "bound on one call a follower forwards to the leader (all but the long ones)")
	fs.UintVar(&c.MaxConcurrentStreams, "max-concurrent-streams", c.MaxConcurrentStreams, "calls (and watch streams) one client connection may have open at once; a client waits for a free one past it")
	fs.UintVar(&c.MaxHeaderListBytes, "max-header-list-bytes", c.MaxHeaderListBytes, "bytes of metadata (HTTP/2 headers) one call may carry (4096..16777216); a call with more is refused before it is served")
	fs.DurationVar(&c.RefusalHold, "refusal-hold", c.RefusalHold, "how long a call refused as UNAUTHENTICATED or RATE_LIMITED (at most its retry-after) waits for its answer, so a caller that asks again at once cannot make the member refuse as fast as it can (0: at once; at most 10s)")
	fs.DurationVar(&c.SessionTTL, "session-ttl", c.SessionTTL, "a client session with no write for this long expires (at least 1s)")
	fs.BoolVar(&c.NoArenas, "no-arenas", c.NoArenas, "answer no PutStart from the leader's allocation arenas: every PutStart takes a log entry")
	fs.BoolVar(&c.AutoPromote, "auto-promote-learners", c.AutoPromote, "while leading, make every learner (member add --learner) a voter once it is within 1000 entries of the commit index; off: each waits for member promote")
	fs.IntVar(&c.ScanExamine, "scan-examine", c.ScanExamine, "keys one page of GetByRegex or RemoveByRegex asks its pattern about at most; the page's token goes on after the last")
	fs.DurationVar(&c.ScanPageTime, "scan-page-time", c.ScanPageTime, "time one page of GetByRegex or RemoveByRegex spends matching its pattern at most; the page's token goes on after the last key examined")
	fs.UintVar(&c.SessionWindow, "session-window", c.SessionWindow, "sequence numbers a client session may have in use at once (1..4096)")
	fs.DurationVar(&c.PutDiscardTimeout, "put-discard-timeout", c.PutDiscardTimeout, "an unfinished put older than this is discarded by a new put of its key")
	fs.StringVar(&c.Placement, "placement", c.Placement, "replica placement after preferred segments: random or free_ratio_first")
	fs.Float64Var(&c.EvictHighWatermark, "evict-high-watermark", c.EvictHighWatermark, "memory eviction starts above this used/capacity share")
	fs.Float64Var(&c.EvictRatio, "evict-ratio", c.EvictRatio, "share of memory capacity one eviction aims to free beyond the watermark")
	fs.Float64Var(&c.NOFHighWatermark, "nof-high-watermark", c.NOFHighWatermark, "NOF eviction starts above this used/capacity share")
	fs.Float64Var(&c.NOFEvictRatio, "nof-evict-ratio", c.NOFEvictRatio, "share of NOF capacity one eviction aims to free beyond the watermark")
	fs.Float64Var(&c.DiskHighWatermark, "disk-high-watermark", c.DiskHighWatermark, "disk eviction starts above this used share of the shared roots' sizes (their quotas)")
	fs.Float64Var(&c.DiskEvictRatio, "disk-evict-ratio", c.DiskEvictRatio, "share of the shared roots' sizes one disk eviction aims to free beyond the watermark")
	fs.Float64Var(&c.DFSHighWatermark, "dfs-high-watermark", c.DFSHighWatermark, "DFS eviction starts above this used/capacity share of the DFS pools")
	fs.Float64Var(&c.DFSEvictRatio, "dfs-evict-ratio", c.DFSEvictRatio, "share of DFS capacity one eviction aims to free beyond the watermark")
	fs.BoolVar(&c.AllowEvictSoftPinned, "allow-evict-soft-pinned", c.AllowEvictSoftPinned, "evict soft-pinned objects after every unpinned one")
	fs.BoolVar(&c.OffloadOnEvict, "offload-on-evict", c.OffloadOnEvict, "memory eviction keeps an object an offloading worker's SSD would take and queues its offload first")
	fs.BoolVar(&c.ForceEvict, "force-evict", c.ForceEvict, "with --offload-on-evict, evict without the offload when the offload queue is full")
	fs.BoolVar(&c.PromoteOnHit, "promote-on-hit", c.PromoteOnHit, "the leader queues a promotion to memory for a disk-only object its reads hit --promote-min-hits times, below the memory eviction watermark")
	fs.IntVar(&c.PromoteMinHits, "promote-min-hits", c.PromoteMinHits, "reads of a disk-only object before its promotion (count-min sketch), 1..255")
	fs.DurationVar(&c.PutReleaseTimeout, "put-release-timeout", c.PutReleaseTimeout, "a write PROCESSING longer than this is revoked")
	fs.StringVar(&c.CACert, "cacert", c.CACert, "the cluster's CA bundle (PEM; during a CA rotation, the old and the new CA): client and peer certificates must chain to it")
	fs.StringVar(&c.Cert, "cert", c.Cert, "this member's node certificate (PEM; metactl cert), naming metad://member/<name>: served by every listener, presented by every dial")
	fs.StringVar(&c.Key, "key", c.Key, "the private key of --cert (PEM)")
	fs.StringVar(&c.ClientCertAuth, "client-cert-auth", c.ClientCertAuth, "optional (a client presents a certificate or an API key) or require (a verified client certificate on every connection)")
	fs.StringVar(&c.MetricsClientCertAuth, "metrics-client-cert-auth", c.MetricsClientCertAuth, "require (/metrics and /debug/pprof only for a verified client certificate of a member, or of a principal with the reader or admin role) or optional (served to anyone who reaches --listen-metrics); /healthz is open either way")
	fs.DurationVar(&c.TLSReloadInterval, "tls-reload-interval", c.TLSReloadInterval, "how often --cacert, --cert and --key are checked for a change; SIGHUP reloads them at once")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "run without TLS or authentication: every call is allowed; refused unless every listen and advertise address is loopback")
	fs.IntVar(&c.GCPercent, "gc-percent", c.GCPercent, "the Go collector's target (GOGC): the heap may grow this many percent past what is live before a cycle; the GOGC environment variable, when set, wins")
	fs.Int64Var(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "the Go collector's soft memory limit in bytes (0: half the memory this process may use); the GOMEMLIMIT environment variable, when set, wins")
	fs.IntVar(&c.ExtraProcs, "extra-procs", c.ExtraProcs, "Go processors (GOMAXPROCS) beyond the CPUs this process may use, so that one is free to poll the network; the GOMAXPROCS environment variable, when set, wins")
	fs.IntVar(&c.WatchEvents, "watch-window-events", c.WatchEvents, "watch events this member retains at most, for subscribers to resume from (the newest within both bounds)")
	fs.Int64Var(&c.WatchBytes, "watch-window-bytes", c.WatchBytes, "bytes of watch events this member retains at most")
	fs.StringVar(&c.KVEventsListen, "kv-events-listen", c.KVEventsListen, "ZMQ endpoint (tcp://host:port or ipc://path) to publish the old master's KV event feed on, for KV-aware routers (empty: off); the feed is plaintext and unauthenticated")
	fs.StringVar(&c.KVEventsBackendID, "kv-events-backend-id", c.KVEventsBackendID, "the backend_id of every KV event (default: --name)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	c.auditFlags(fs)
	c.backupFlags(fs)
}

// Validate checks the config with messages that name the setting.
func (c *Config) Validate() error {
	var errs []error
	addr := func(name, v string, optional bool) {
		if v == "" && optional {
			return
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port", name, v))
		}
	}
	if c.WatchEvents < 1 || c.WatchBytes < 1 {
		errs = append(errs, errors.New("watch-window-events, watch-window-bytes: must be at least 1"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must not be empty"))
	}
	if !ha.ValidLogStore(c.LogStore) {
		errs = append(errs, fmt.Errorf("log-store %q: want %s, %s or empty (what the data dir holds)", c.LogStore, ha.LogStoreWAL, ha.LogStoreBolt))
	}
	addr("listen-client", c.ListenClient, false)
	addr("advertise-client", c.AdvertiseClient, true)
	addr("listen-peer", c.ListenPeer, false)
	addr("advertise-peer", c.AdvertisePeer, true)
	addr("listen-metrics", c.ListenMetrics, true)
	if c.Pprof && c.ListenMetrics == "" {
		errs = append(errs, errors.New("pprof: needs listen-metrics, the address it is served on"))
	}
	switch c.InitialClusterState {
	case "new", "existing":
	default:
		errs = append(errs, fmt.Errorf("initial-cluster-state %q: want new or existing", c.InitialClusterState))
	}
	if c.InitialCluster != "" {
		if _, err := ha.ParseInitialCluster(c.InitialCluster); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"heartbeat-timeout", c.HeartbeatTimeout}, {"election-timeout", c.ElectionTimeout}, {"leader-lease-timeout", c.LeaderLeaseTimeout},
		{"lease-ttl", c.LeaseTTL}, {"client-ttl", c.ClientTTL}, {"put-discard-timeout", c.PutDiscardTimeout}, {"snapshot-interval", c.SnapshotInterval},
		{"forward-timeout", c.ForwardTimeout}, {"scan-page-time", c.ScanPageTime}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", d.name, d.v))
		}
	}
	if c.ScanExamine < 1 {
		errs = append(errs, fmt.Errorf("scan-examine: must be at least 1, got %d", c.ScanExamine))
	}
	if c.MaxConcurrentStreams < 1 || c.MaxConcurrentStreams > server.StreamsMax {
		errs = append(errs, fmt.Errorf("max-concurrent-streams: want 1..%d, got %d", server.StreamsMax, c.MaxConcurrentStreams))
	}
	if c.RefusalHold < 0 || c.RefusalHold > server.RefusalHoldMax {
		errs = append(errs, fmt.Errorf("refusal-hold: want 0..%s, got %s", server.RefusalHoldMax, c.RefusalHold))
	}
	if c.MaxHeaderListBytes < server.HeaderListMinBytes || c.MaxHeaderListBytes > server.HeaderListMaxBytes {
		errs = append(errs, fmt.Errorf("max-header-list-bytes: want %d..%d, got %d", server.HeaderListMinBytes, server.HeaderListMaxBytes, c.MaxHeaderListBytes))
	}
	if err := c.evictConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.SessionTTL < fsm.MinSessionTTL || c.SessionWindow < 1 || c.SessionWindow > fsm.MaxSessionWindow {
		errs = append(errs, fmt.Errorf("session-ttl %s (at least %s) or session-window %d (1..%d) out of range",
			c.SessionTTL, fsm.MinSessionTTL, c.SessionWindow, fsm.MaxSessionWindow))
	}
	if _, err := alloc.ParseStrategy(c.Placement); err != nil {
		errs = append(errs, fmt.Errorf("placement %q: want random or free_ratio_first", c.Placement))
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateKVEvents()...)
	errs = append(errs, c.validateAudit()...)
	errs = append(errs, c.validateBackup(c.DataDir)...)
	if c.ExtraProcs < 0 || c.ExtraProcs > 64 {
		errs = append(errs, fmt.Errorf("extra-procs: want 0 to 64, got %d", c.ExtraProcs))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// validateSecurity checks the TLS settings: certificates, or --insecure on loopback addresses.
func (c *Config) validateSecurity() []error {
	var errs []error
	files := []struct{ name, v string }{{"cacert", c.CACert}, {"cert", c.Cert}, {"key", c.Key}}
	if c.Insecure {
		for _, f := range files {
			if f.v != "" {
				errs = append(errs, fmt.Errorf("insecure: cannot be combined with --%s", f.name))
			}
		}
		for _, a := range []struct{ name, v string }{{"listen-client", c.ListenClient}, {"advertise-client", c.AdvertiseClient},
			{"listen-peer", c.ListenPeer}, {"advertise-peer", c.AdvertisePeer}, {"listen-metrics", c.ListenMetrics}} {
			if a.v != "" && !isLoopback(a.v) {
				errs = append(errs, fmt.Errorf("insecure: refused because %s %q is not a loopback address; a cluster reachable from other hosts needs --cacert, --cert and --key", a.name, a.v))
			}
		}
	} else {
		var missing []string
		for _, f := range files {
			if f.v == "" {
				missing = append(missing, "--"+f.name)
			}
		}
		switch {
		case len(missing) == len(files):
			errs = append(errs, errors.New("cacert, cert, key: not set: pass --cacert, --cert and --key (the cluster CA bundle and this member's node certificate and key, from `metactl cert`), or --insecure for a plaintext cluster on loopback addresses only"))
		case len(missing) > 0:
			errs = append(errs, fmt.Errorf("%s: not set: TLS needs --cacert, --cert and --key together", strings.Join(missing, ", ")))
		}
	}
	switch c.ClientCertAuth {
	case "optional", "require":
	default:
		errs = append(errs, fmt.Errorf("client-cert-auth %q: want optional or require", c.ClientCertAuth))
	}
	switch c.MetricsClientCertAuth {
	case "optional", "require":
	default:
		errs = append(errs, fmt.Errorf("metrics-client-cert-auth %q: want optional or require", c.MetricsClientCertAuth))
	}
	if c.TLSReloadInterval <= 0 {
		errs = append(errs, fmt.Errorf("tls-reload-interval: must be positive, got %s", c.TLSReloadInterval))
	}
	return errs
}

// isLoopback says whether a host:port names a loopback address: an IP in 127.0.0.0/8 or ::1, or
// localhost. An empty host (every interface) is not.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serverConfig is the gRPC adapter's part of the config (cmd/metad adds the TLS and audit pieces).
func (c *Config) serverConfig() server.Config {
	sc := server.DefaultConfig()
	sc.ForwardTimeout = c.ForwardTimeout
	sc.MaxConcurrentStreams = uint32(min(c.MaxConcurrentStreams, server.StreamsMax+1)) // Validate refuses more
	sc.MaxHeaderListBytes = uint32(min(c.MaxHeaderListBytes, server.HeaderListMaxBytes+1))
	sc.RefusalHold = c.RefusalHold
	return sc
}

// evictConfig is the eviction part of the config.
func (c *Config) evictConfig() evict.Config {
	ec := evict.DefaultConfig()
	ec.HighWatermark, ec.EvictRatio = c.EvictHighWatermark, c.EvictRatio
	ec.NOFHighWatermark, ec.NOFEvictRatio = c.NOFHighWatermark, c.NOFEvictRatio
	ec.DiskHighWatermark, ec.DiskEvictRatio = c.DiskHighWatermark, c.DiskEvictRatio
	ec.DFSHighWatermark, ec.DFSEvictRatio = c.DFSHighWatermark, c.DFSEvictRatio
	ec.AllowEvictSoftPinned, ec.PutReleaseTimeout = c.AllowEvictSoftPinned, c.PutReleaseTimeout
	ec.OffloadOnEvict, ec.ForceEvict = c.OffloadOnEvict, c.ForceEvict
	return ec
}

// envName is the environment variable of a setting: METAD_ and the name in upper case with
// underscores.
func envName(flagName string) string {
	return "METAD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// loadConfig builds the config from defaults, the YAML file (--config or METAD_CONFIG), the
// environment and the flags, in that order of precedence.
func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("metad", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs)
	var file string
	fs.StringVar(&file, "config", getenv("METAD_CONFIG"), "YAML file with the same names as the flags")
	// Find --config first; the real parse comes last so that flags win over the file.
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--config" || a == "-config" {
			if i+1 < len(args) {
				file = args[i+1]
			}
		} else if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "config="); ok && strings.HasPrefix(a, "-") {
			file = v
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return c, fmt.Errorf("config file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return c, fmt.Errorf("config file %s: %w", file, err)
		}
		for k, v := range m {
			if fs.Lookup(k) == nil || k == "config" {
				return c, fmt.Errorf("config file %s: unknown setting %q", file, k)
			}
			if err := fs.Set(k, fmt.Sprint(v)); err != nil {
				return c, fmt.Errorf("config file %s: %s: %w", file, k, err)
			}
		}
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && f.Name != "config" {
			if err := fs.Set(f.Name, v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s: %w", envName(f.Name), err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return c, c.Validate()
}
