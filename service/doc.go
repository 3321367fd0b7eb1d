// Package service is the leader's side of every request of the Metadata and Admin APIs: what a
// node does with a request once the gRPC adapter (package server) has decoded it. It validates the
// request (SEMANTICS section 1, through the store's own validators), decides whether it runs here,
// turns it into log commands and reads, and its results into responses. It holds the leader's soft
// state that is not the store's (client liveness), owns the one leadership hook and the evictor
// (package evict, below it: Config.Evictor, evictor.go). It knows nothing of gRPC: its errors say
// what went wrong (errors.go) and the adapter maps them to statuses, in one place.
//
// # Request path
//
//	authorize (authz.go; the adapter calls Authorize before the method: roles, tenant scoping,
//	          PERMISSION_DENIED or UNAUTHENTICATED; nothing looked up)
//	  -> validate (InvalidArgument naming the field: *store.Error INVALID_PARAMS; nothing proposed)
//	  -> leader? no: ErrForward (the adapter sends the same call to the leader)
//	             yes:
//	  -> write:   build the command (stamping cluster settings: placement strategy, put discard
//	              timeout; the caller's principal and the auth revision it was checked at)
//	              -> fsm.Check against the leader's state: refused -> answer the refusal without a
//	              log entry; otherwise Backend.Propose -> store.Result (refused
//	              AUTH_REVISION_STALE: authorize again, propose again, at most MaxAuthStale times)
//	     removal: store.Prepare* (lease check unless force, PROCESSING check, unlink mark)
//	              -> propose the command fenced by the prepared tokens -> ClearMarks on failure
//	              -> prepare again when a snapshot restore replaced the state (STATE_REPLACED)
//	     read:    Backend.ReadBarrier -> read the store (Get and Exist grant leases)
//	     stale read: served by any node from its own store, no barrier, no lease
//	  -> the response: per-item Status in request order for batches (wire.ItemStatus), or an
//	     *Error carrying the tenant and key
//
// Checks and prepares read the leader's state, so they run through one helper, fromState
// (state.go): never before the leader is ready (Backend.LeaderReady; a request waits for it), and
// an answer given from state without the log (a refusal) only after Backend.ReadBarrier has
// confirmed leadership and the state has been checked again.
//
// # Leader soft state
//
// Client liveness (the last Ping of each client) lives here, on the leader only: Run's loop
// expires a client silent for ClientTTL by proposing the unmount of its segments, and ends each
// graceful unmount that is due (its replicated deadline passed, or its closing segment emptied) by
// proposing UnmountClosed (clients.go finishClosing), and drives the running drain jobs by
// proposing their moves and their end (drain.go driveDrains), in the term whose leadership the
// hook has started here. Read leases and removal marks live in the store. The one
// leadership hook is Leadership.Changed (leadership.go), which the Raft node calls whenever this
// node gains leadership (before the term-start barrier) or loses it: on gaining, the store's soft
// state starts afresh (store.ResetSoftState); then every known client gets a fresh grace (the table
// is dropped on losing leadership); then the hooks registered with OnLeadership run (cmd/metad
// registers the adapter's "leader" health status); last the evictor is kicked.
//
// # Eviction
//
// The service owns the evictor it is given (Config.Evictor, an *evict.Evictor that cmd/metad builds
// over the node): Run runs its loop (memory and NOF watermarks, the reaper; it works only while the
// node leads), every leadership change kicks it, and a PutStart over its tenant's quota, rejected
// TENANT_QUOTA_EXCEEDED by the log or over it on the leader with what reservations hold
// (reservedQuota), has it evict that tenant's own objects for the deficit (evict.QuotaDeficit) and
// is tried again, at most twice. Removals and eviction share the removal protocol's proposal,
// ha.ProposeMarked.
//
// # Concurrency
//
// Methods run concurrently on the callers' goroutines. They share the Backend (safe for concurrent
// use), the store (fetched per request through the state function, since a snapshot restore swaps
// it) and the liveness table, whose one mutex is a leaf: no other lock is taken under it, and none
// is held across a proposal or any I/O. Store locks are taken only inside store calls, and never
// across a proposal. Run is one goroutine; it returns when its context is done.
//
// # Lifecycle
//
//	lead := service.NewLeadership(fsm.Store, time.Now)
//	haCfg.OnLeadership = lead.Changed  // before the node starts
//	node, _ := ha.NewNode(haCfg, fsm, log)
//	cfg.Evictor, _ = evict.New(evictCfg, evict.FromHA(node, fsm.Store), registry, log)
//	svc, _ := service.New(node, fsm, lead, cfg, registry, log)
//	svc.OnLeadership(...)
//	go svc.Run(ctx)        // also the arena keeper and the evictor's loop
//	svc.InitCluster(ctx)   // once, on the leader of a newly bootstrapped cluster (default tenant quota)
package service
