// Package server is metad's gRPC front end: the Metadata service (what cache workers call) and the
// Admin service (what operators call), as a thin adapter over service.Service (package service, the
// leader's side of every request). It decodes requests, routes each call (here, or forwarded to
// the leader), streams snapshots, and maps every error to a gRPC status in one place (errors.go);
// it holds no replicated state and no leader soft state of its own.
//
// # Request path
//
//	decode (codec.go: a request that does not decode is InvalidArgument, naming the string field
//	        that is not UTF-8 if one is; gRPC alone would answer Internal)
//	  -> Service method: validates, and serves it here, or answers service.ErrForward when this
//	     node does not lead and the call must run on the leader
//	  -> ErrForward: forward the same RPC to the leader (one hop; see forward.go)
//	  -> map the error (toStatus): a status with an ErrorDetail carrying the reason, tenant and key
//
// A follower that receives a leader-only call forwards it to the leader's client address,
// marked with the x-metad-forwarded metadata; a node that receives a forwarded call while not
// leader answers NOT_LEADER (naming the leader it knows) instead of forwarding again. With no
// known leader the answer is UNAVAILABLE. Clients retry both. Forwards and RecordMember calls dial
// the leader with Config.DialCredentials (the member's node certificate; nil: plaintext).
//
// # Authentication
//
// With Config.Authenticate (cmd/metad sets it when the client listener runs TLS), every call of the
// Metadata and Admin services is authenticated (auth.go: a verified client certificate's
// principal, an API key verified once per connection, or a member of the Raft configuration
// forwarding for a principal) and authorized by the service (service.Authorize) before it runs;
// gRPC health and reflection stay open. A follower forwards the principal it authenticated with
// the call, and a call whose API key its state does not hold yet, with the key, for the leader to
// authenticate. ScrapeAuth (scrape.go) guards the metrics address's pages likewise: they are
// served to a member's certificate, or to a principal's that may list the tenants.
//
// The client listener's TLS credentials (TLSCredentials, tlscreds.go) close a connection whose
// handshake fails so that its client learns why: the TLS alert arrives rather than a reset, and a
// plaintext gRPC client's call is answered UNAUTHENTICATED, saying that the node serves TLS.
//
// # Member records
//
// Run's loop keeps this node's own member record (its client and peer addresses) current: while
// Node.SelfRecorded is false it asks the leader to record it, by proposing on the leader or by
// calling the leader's Admin.RecordMember elsewhere, backing off while that fails (members.go). A
// new leader records its own addresses itself (package ha).
//
// # Concurrency
//
// RPC handlers run concurrently on gRPC's goroutines. They share the Service and the Node (safe for
// concurrent use), the forwarder's connection cache, the leader watch and their connection's
// authentication cache (auth.go); each of the last three has one mutex that is a leaf: no other
// lock is taken under it, and none is held across a forward or any I/O. Run is one goroutine; it
// returns when its context is done.
//
// # Lifecycle
//
//	svc, _ := service.New(node, fsm, lead, serviceCfg, registry, log)
//	s, _ := server.New(svc, node, cfg, registry, log)
//	svc.OnLeadership(s.SetLeader)
//	opts := append(s.ServerOptions(), grpc.Creds(tlsCreds), grpc.ChainUnaryInterceptor(s.UnaryInterceptor()))
//	g := grpc.NewServer(append(opts, s.AuthOptions()...)...) // authentication (Config.Authenticate)
//	s.Register(g)
//	go svc.Run(ctx); go s.Run(ctx)
//	... serve ...
//	s.SetNotServing()   // shutdown step 1: health NOT_SERVING
//	g.GracefulStop()    // after a leadership transfer
//	s.Close()           // forwarding connections
package server
