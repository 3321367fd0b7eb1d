// Command metad is one member of a metad cluster: the Raft node, the gRPC services for clients and
// operators, and the metrics endpoint.
//
//	metad --name n1 --data-dir data/n1 --listen-client 127.0.0.1:6001 --listen-peer 127.0.0.1:6101 \
//	      --listen-metrics 127.0.0.1:6201 --initial-cluster n1=127.0.0.1:6101,n2=127.0.0.1:6102,n3=127.0.0.1:6103 \
//	      --cacert certs/ca.crt --cert certs/member.n1.crt --key certs/member.n1.key
//
// Every flag is also an environment variable (METAD_DATA_DIR) and a key of the YAML file named by
// --config. A member serves TLS on every listener with its node certificate (--cacert, --cert,
// --key), re-read when the files change and on SIGHUP; --insecure runs a plaintext cluster on
// loopback addresses only. On SIGINT or SIGTERM it stops in this order: health NOT_SERVING,
// leadership handed to another member if this one leads, gRPC graceful stop, Raft shutdown,
// stores closed.
//
// Two offline subcommands work on a stopped member's data dir (docs/operations.md):
//
//	metad restore --snapshot FILE --data-dir DIR --name NAME --initial-cluster ...  # new member from a snapshot
//	metad recover --data-dir DIR --peers peers.json                                 # after a lost quorum
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"metad/evict"
	"metad/fsm"
	"metad/ha"
	"metad/server"
	"metad/service"
	"metad/store"
	"metad/store/alloc"
	"metad/tlsconf"
	"metad/watch"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "restore":
			return runRestore(args[1:], getenv, os.Stdout, stderr)
		case "recover":
			return runRecover(args[1:], getenv, os.Stdout, stderr)
		}
	}
	cfg, err := loadConfig(args, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "metad: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel).With("node", cfg.Name)
	log.Info("processors", "gomaxprocs", ha.SetProcs(cfg.ExtraProcs, getenv("GOMAXPROCS")), "cpus", runtime.NumCPU())
	gcPercent, memLimit := setGC(cfg.GCPercent, cfg.MemoryLimit, getenv)
	log.Info("collector", "gc_percent", gcPercent, "memory_limit_bytes", memLimit)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("metad stopped", "err", err)
		return 1
	}
	return 0
}

// metricsMux serves the metrics address: /metrics (reg), /healthz (from status) and, only with
// withPprof (--pprof), Go's profiler under /debug/pprof/. guard, when not nil, wraps /metrics and
// the profiler (server.ScrapeAuth under --metrics-client-cert-auth require); /healthz, which names
// only this node, its role and the leader, stays open for load balancers' probes.
func metricsMux(reg *prometheus.Registry, status func() ha.Status, withPprof bool, guard func(http.Handler) http.Handler) *http.ServeMux {
	if guard == nil {
		guard = func(h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", guard(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		st := status()
		if st.LeaderName == "" {
			http.Error(w, "no leader known", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok: %s is %s, leader %s\n", st.Name, st.Role, st.LeaderName)
	})
	if withPprof {
		mux.Handle("/debug/pprof/", guard(http.HandlerFunc(pprof.Index))) // also the named profiles: heap, goroutine, ...
		mux.Handle("/debug/pprof/cmdline", guard(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", guard(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", guard(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", guard(http.HandlerFunc(pprof.Trace)))
	}
	return mux
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

var _ ha.StateMachine = (*fsm.FSM)(nil)

// loadTLS loads the member's TLS material and checks that its certificate names this member; nil
// with --insecure, which it logs as a warning.
func loadTLS(cfg Config, log *slog.Logger) (*tlsconf.Reloader, error) {
	if cfg.Insecure {
		log.Warn("--insecure: the cluster is unauthenticated and unencrypted: every call is allowed, from anyone who can reach these loopback addresses")
		return nil, nil
	}
	rl, err := tlsconf.NewReloader(tlsconf.Files{CA: cfg.CACert, Cert: cfg.Cert, Key: cfg.Key}, log)
	if err != nil {
		return nil, err
	}
	if want := (tlsconf.Identity{Kind: tlsconf.Member, Name: cfg.Name}); rl.Identity() != want {
		return nil, fmt.Errorf("cert %s names %s, but this member is %s (--name): each member serves its own node certificate",
			cfg.Cert, rl.Identity(), want)
	}
	return rl, nil
}

// clientAuth is the client certificate policy of the client listener.
func (c *Config) clientAuth() tls.ClientAuthType {
	if c.ClientCertAuth == "require" {
		return tls.RequireAndVerifyClientCert
	}
	return tls.VerifyClientCertIfGiven
}

// reloadOnHUP reloads rl's files at every SIGHUP until ctx is done (a failed reload is logged and
// counted by rl). Without TLS there is nothing to reload, and SIGHUP does not stop the process.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, rl *tlsconf.Reloader, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if rl == nil {
				log.Info("SIGHUP: nothing to reload without TLS")
				continue
			}
			log.Info("SIGHUP: reloading the TLS material")
			_ = rl.Reload()
		}
	}
}

func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	clientAddr := cfg.AdvertiseClient
	if clientAddr == "" {
		clientAddr = cfg.ListenClient
	}
	rl, err := loadTLS(cfg, log)
	if err != nil {
		return err
	}
	f, err := fsm.New(store.Config{LeaseTTL: cfg.LeaseTTL}, log)
	if err != nil {
		return err
	}
	f.UseWindow(watch.NewWindow(watch.Limits{Events: cfg.WatchEvents, Bytes: cfg.WatchBytes}, 0))
	hc := ha.DefaultConfig()
	hc.Name, hc.DataDir, hc.ClientAddr, hc.LogStore = cfg.Name, cfg.DataDir, clientAddr, cfg.LogStore
	hc.PeerListen, hc.PeerAddr = cfg.ListenPeer, cfg.AdvertisePeer
	hc.HeartbeatTimeout, hc.ElectionTimeout, hc.LeaderLeaseTimeout = cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout
	hc.SnapshotThreshold, hc.SnapshotInterval = cfg.SnapshotThreshold, cfg.SnapshotInterval
	hc.Bootstrap = cfg.InitialClusterState == "new"
	if cfg.InitialCluster != "" {
		if hc.InitialCluster, err = ha.ParseInitialCluster(cfg.InitialCluster); err != nil {
			return err
		}
	} else if hc.Bootstrap {
		peer := cfg.AdvertisePeer
		if peer == "" {
			peer = cfg.ListenPeer
		}
		hc.InitialCluster = []ha.Peer{{Name: cfg.Name, PeerAddr: peer}}
	}
	lead := service.NewLeadership(f.Store, time.Now) // the node's one leadership hook
	hc.OnLeadership = lead.Changed
	if rl != nil { // the peers' Raft traffic is mutual TLS with member certificates (ha/peertls.go)
		hc.PeerTLS = &ha.PeerTLS{Server: rl.ServerConfig(tls.RequireAndVerifyClientCert), Client: rl.ClientConfig()}
	}
	// Scheduled backups (backup.go): an empty data dir may first get the newest backup.
	if err := autoRestore(cfg, hc, log); err != nil {
		return err
	}
	node, err := ha.NewNode(hc, f, log)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(gcMetrics...)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	err = errors.Join(node.RegisterMetrics(reg), f.RegisterMetrics(reg), f.Window().RegisterMetrics(reg))
	if rl != nil {
		err = errors.Join(err, rl.RegisterMetrics(reg, "client"), rl.RegisterMetrics(reg, "peer"))
		if cfg.ListenMetrics != "" {
			err = errors.Join(err, rl.RegisterMetrics(reg, "metrics"))
		}
	}
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	stopKV, err := startKVFeed(cfg, f.Window(), reg, log) // the old master's KV event feed, when asked
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	defer stopKV() // after the node's shutdown below
	ev, err := evict.New(cfg.evictConfig(), evict.FromHA(node, f.Store), reg, log)
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	strategy, _ := alloc.ParseStrategy(cfg.Placement)
	vc := service.DefaultConfig()
	vc.LeaseTTL, vc.ClientTTL, vc.PutDiscardTimeout, vc.Strategy = cfg.LeaseTTL, cfg.ClientTTL, cfg.PutDiscardTimeout, strategy
	vc.SessionTTL, vc.SessionWindow = cfg.SessionTTL, uint32(cfg.SessionWindow)
	vc.ArenaFence, vc.NoArenas, vc.AutoPromote = cfg.PutReleaseTimeout, cfg.NoArenas, cfg.AutoPromote
	vc.ScanExamine, vc.ScanPageTime = cfg.ScanExamine, cfg.ScanPageTime
	vc.PromoteOnHit, vc.PromoteMinHits, vc.PromoteHighWatermark = cfg.PromoteOnHit, cfg.PromoteMinHits, cfg.EvictHighWatermark
	vc.Evictor = ev // the service runs its loop, kicks it on leadership changes, evicts for quota
	svc, err := service.New(node, f, lead, vc, reg, log)
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	alog, err := openAudit(cfg, reg)
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	if alog != nil {
		defer func() { _ = alog.Close() }() // after the gRPC server has stopped (below)
	}
	sc := cfg.serverConfig()
	sc.Audit = alog
	if rl != nil { // with TLS, every call is authenticated and authorized (server/auth.go, service/authz.go)
		sc.DialCredentials = credentials.NewTLS(rl.ClientConfig())
		sc.Authenticate = true
	}
	srv, err := server.New(svc, node, sc, reg, log)
	if err != nil {
		_ = node.Shutdown()
		return err
	}
	// After the leadership hook has started the soft state afresh, the adapter's health status
	// follows (and then the service kicks its evictor).
	svc.OnLeadership(srv.SetLeader)
	opts := append(srv.ServerOptions(), grpc.ChainUnaryInterceptor(srv.UnaryInterceptor()))
	if rl != nil {
		opts = append(opts, grpc.Creds(server.TLSCredentials(rl.ServerConfig(cfg.clientAuth()))))
		opts = append(opts, srv.AuthOptions()...)
	}
	gs := grpc.NewServer(opts...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", cfg.ListenClient)
	if err != nil {
		_ = node.Shutdown()
		return fmt.Errorf("listen-client: %w", err)
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	var bg sync.WaitGroup // the background loops; each returns when runCtx is done
	bg.Go(func() { svc.Run(runCtx) })
	bg.Go(func() { srv.Run(runCtx) })
	// Scheduled backups (backup.go): the loop runs on every member and writes only while it leads.
	if bk, err := newBackupLoop(cfg, node, reg, log); err != nil {
		_ = lis.Close()
		cancelRun()
		bg.Wait()
		_ = node.Shutdown()
		return err
	} else if bk != nil {
		bg.Go(func() { bk.Run(runCtx) })
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	bg.Go(func() { reloadOnHUP(runCtx, hup, rl, log) })
	if rl != nil {
		bg.Go(func() { rl.Run(runCtx, cfg.TLSReloadInterval) })
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(lis) }()

	var hs *http.Server
	if cfg.ListenMetrics != "" {
		var guard func(http.Handler) http.Handler
		if rl != nil && cfg.MetricsClientCertAuth == "require" {
			guard = srv.ScrapeAuth
		}
		mux := metricsMux(reg, node.Status, cfg.Pprof, guard)
		mlis, err := net.Listen("tcp", cfg.ListenMetrics)
		if err != nil {
			gs.Stop()
			cancelRun()
			bg.Wait()
			_ = node.Shutdown()
			return fmt.Errorf("listen-metrics: %w", err)
		}
		if rl != nil { // a certificate presented must verify; whether one is needed is the guard's
			mlis = tls.NewListener(mlis, rl.ServerConfig(tls.VerifyClientCertIfGiven))
		}
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(mlis) }()
	}
	log.Info("metad started", "client", clientAddr, "peer", node.PeerAddr(), "metrics", cfg.ListenMetrics, "data_dir", cfg.DataDir,
		"tls", rl != nil)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	}
	log.Info("stopping")
	// 1. health NOT_SERVING, 2. leadership handed over, 3. gRPC graceful stop, 4. Raft, 5. stores.
	srv.SetNotServing()
	node.TransferIfLeader()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		gs.Stop()
	}
	srv.Close()
	cancelRun()
	bg.Wait()
	if err := node.Shutdown(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if hs != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = hs.Shutdown(sctx)
		cancel()
	}
	log.Info("stopped")
	if errors.Is(runErr, grpc.ErrServerStopped) {
		return nil
	}
	return runErr
}
