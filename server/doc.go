// Package server is metad's gRPC front end: the Metadata service (what cache workers call) and the
// Admin service (what operators call), over a Backend that the Raft node (package ha) implements.
// It turns requests into log commands and reads, and results into responses and statuses; it
// holds no replicated state of its own.
//
// # Request path
//
//	decode (codec.go: a request that does not decode is InvalidArgument, naming the string field
//	        that is not UTF-8 if one is; gRPC alone would answer Internal)
//	validate (SEMANTICS section 1; InvalidArgument naming the field, nothing proposed or forwarded)
//	  -> leader? no: forward the same RPC to the leader (one hop; see forward.go)
//	             yes:
//	  -> write:   build the command (stamping cluster settings: placement strategy, put discard
//	              timeout) -> fsm.Check against the leader's state: refused -> answer the refusal
//	              without a log entry; otherwise Backend.Propose -> store.Result
//	     removal: store.Prepare* (lease check unless force, PROCESSING check, unlink mark)
//	              -> propose the command fenced by the prepared tokens -> ClearMarks on failure
//	     read:    Backend.ReadBarrier -> read the store (Get and Exist grant leases)
//	     stale read: served by any node from its own store, no barrier, no lease
//	  -> map the result: per-item Status in request order for batches, or a status with an
//	     ErrorDetail (errors.go is the only place that chooses gRPC codes)
//
// Checks and prepares read the leader's state, so they run through one helper, fromState
// (state.go): never before the leader is ready (Backend.LeaderReady; a request waits for it), and
// an answer given from state without the log (a refusal) only after Backend.ReadBarrier has
// confirmed leadership and the state has been checked again.
//
// A follower that receives a leader-only call forwards it to the leader's client address,
// marked with the x-metad-forwarded metadata; a node that receives a forwarded call while not
// leader answers NOT_LEADER (naming the leader it knows) instead of forwarding again. With no
// known leader the answer is UNAVAILABLE. Clients retry both.
//
// # Leader soft state
//
// Client liveness (the last Ping of each client) lives here, on the leader only: Run's loop
// expires a client silent for ClientTTL by proposing the unmount of its segments, and gives every
// known client a fresh grace when this node becomes leader. Read leases and removal marks live in
// the store; the node's leadership hook resets them when this node gains leadership
// (store.ResetSoftState; cmd/metad registers it), and package ha after an online snapshot restore.
//
// # Member records
//
// Run's loop also keeps this node's own member record (its client and peer addresses) current:
// while Backend.SelfRecorded is false it asks the leader to record it, by proposing on the leader
// or by calling the leader's Admin.RecordMember elsewhere, backing off while that fails
// (members.go). A new leader records its own addresses itself (package ha).
//
// # Concurrency
//
// RPC handlers run concurrently on gRPC's goroutines. They share the Backend (safe for concurrent
// use), the store (fetched per request, since a snapshot restore swaps it), the forwarder's
// connection cache and the liveness table; each of the last two has one mutex that is a leaf: no
// other lock is taken under it, and none is held across a proposal, a forward or any I/O. Store
// locks are taken only inside store calls, and never across a proposal. Run is one goroutine; it
// returns when its context is done.
//
// # Lifecycle
//
//	s, _ := server.New(node, cfg, registry, log)
//	g := grpc.NewServer(append(server.ServerOptions(), grpc.ChainUnaryInterceptor(s.UnaryInterceptor()))...)
//	s.Register(g)
//	go s.Run(ctx)
//	s.InitCluster(ctx)  // once, on the leader of a newly bootstrapped cluster (default tenant quota)
//	... serve ...
//	s.SetNotServing()   // shutdown step 1: health NOT_SERVING
//	g.GracefulStop()    // after a leadership transfer
//	s.Close()           // forwarding connections
package server
