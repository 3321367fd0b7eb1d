// Package client is the Go client of metad: typed methods over the gRPC services Metadata (what
// cache workers call) and Admin (what operators call), with leader discovery, retries and batch
// splitting. cmd/metactl and the failover drills are built on it.
//
// # Call sequence
//
//	c, err := client.New(client.Config{Endpoints: []string{"10.0.0.1:6001", "10.0.0.2:6001"}})
//	defer c.Close()
//	c.MountSegment(ctx, &metadv1.SegmentDesc{...})   // a worker: mount, then Ping every second
//	reps, err := c.PutStart(ctx, "", "k1", 4096, nil) // tenant "" = "default"
//	... write the bytes at reps ...
//	err = c.PutEnd(ctx, "", "k1", metadv1.Tier_TIER_UNSPECIFIED)
//	got, err := c.Get(ctx, "", "k1")                  // or c.Get(ctx, "", "k1", client.Stale())
//
// A Client has an id (Config.ClientID, random by default): it is the writer of the client's puts
// and the owner of its segments, and the cluster expires it (unmounting its segments) after
// client_ttl without a Ping.
//
// # Endpoints and the leader
//
// The Client keeps one gRPC connection per known endpoint and sends every call to the endpoint it
// believes is the leader,
// initially the first one. Any node accepts any call and a follower forwards writes, so this only
// saves a hop; but a node that cannot forward answers NOT_LEADER and names the leader. The leader
// named by a NOT_LEADER error, a Ping or a TransferLeader becomes the endpoint calls go to; an
// address not in the list is added to it.
//
// # Transport security
//
// Connections are plain TCP unless Config.TLS is set (TLSFromFiles builds a TLS 1.3 configuration
// from a CA file, which may hold several certificates, and an optional client certificate that is
// re-read for new connections when its files change). Config.APIKey is sent on every call as
// `authorization: Bearer <key>` and needs TLS. Security names this material by file and
// SecurityFromEnv reads it from METAD_CACERT, METAD_CERT, METAD_KEY, METAD_API_KEY and
// METAD_CERTS_DIR (a certificates directory: its ca.crt, and the root principal's client
// certificate when neither a certificate nor a key is named):
//
//	cfg := client.Config{}
//	if err := client.SecurityFromEnv().Apply(&cfg); err != nil { ... }
//	c, err := client.New(cfg)
//
// # Attempts
//
// An attempt of a call at one endpoint runs under the caller's deadline and a watchdog
// (watchdog.go). Once it has heard nothing from its node for half of Config.AttemptTimeout
// (default 1 s), the client asks the node for its gRPC health on the same connection. An answer,
// late or not, and any progress of the attempt (a snapshot chunk received or sent) are signs of
// life: the attempt goes on, and the node is asked again half an attempt timeout after each, so a
// slow but live leader's write is never abandoned and retried elsewhere (where it could be
// applied twice). A node that shows no sign of life for one attempt timeout is silent (paused,
// stalled, cut off; by then the others have elected a new leader, metad's heartbeat timeout being
// 400 ms, randomized up to 800 ms): the attempt is abandoned with UNAVAILABLE, the call moves to
// the next endpoint at once, and the silent endpoint becomes suspect for five attempt timeouts:
// failover passes it by, and a NOT_LEADER naming it is not followed (a follower that has not
// heard of the election names the leader it last knew). A successful answer from a suspect node,
// or a leader hint naming it, clears the suspicion. So a paused leader costs a call about one
// attempt timeout, and a worker's Ping reaches the new leader far within client_ttl.
//
// A busy node is not silent: the client measures how long each node takes to answer (its probes,
// and the calls that end before a probe) as TCP measures a round trip (RFC 6298), and a probe has
// half an attempt timeout or that measured answer time, whichever is longer, at most five attempt
// timeouts in all. Long calls wait five times longer still before they give up on a node that
// shows no sign of life: snapshot save and restore, RemoveAll, UnregisterTenant, the membership
// changes and TransferLeader, the scans' pages and the write batches (BatchPutStart, BatchPutEnd,
// BatchPutRevoke, BatchRemove, BatchReplicaClear); Long marks any call so. A broken connection
// fails any attempt at once.
//
// # Retries
//
// After a failed attempt a call is:
//   - sent to the next endpoint that is not suspect, at once, when its node fell silent;
//   - redirected at once to the named leader on NOT_LEADER with a leader address that is not
//     suspect (a second redirect in a row waits a backoff first: the nodes disagree while an
//     election runs);
//   - sent to the next endpoint that is not suspect after a backoff on UNAVAILABLE (no quorum, a
//     follower that has lost its leader, shutting down), on a gRPC Unavailable status (connection
//     refused or lost), on NOT_LEADER naming no leader or a suspect one;
//   - returned at once for anything else: deterministic rejections (OBJECT_NOT_FOUND,
//     OBJECT_ALREADY_EXISTS, INVALID_PARAMS...), the caller's own deadline or cancellation, and
//     RATE_LIMITED (RESOURCE_EXHAUSTED: the caller's principal is over a rate limit on the member
//     it called; nothing was done): RetryAfterOf says how long to wait, counted from the answer
//     (a member holds a refusal up to its retry-after before it answers it), and the caller
//     decides whether to go again. A retry by the client would only spend the limit the caller
//     is over.
//
// The backoff starts at Config.RetryBackoff.Initial and doubles up to RetryBackoff.Max, each
// delay drawn uniformly from [d/2, d]. A call makes at most 1 + Config.MaxRetries attempts and
// never outlives its context: when the next delay would pass the context's deadline it returns at
// once. The error returned is the last attempt's gRPC status error, unwrapped: status.FromError,
// ReasonOf, LeaderOf and DetailOf read it.
//
// Writes are exactly-once within the client's session (session.go): the client opens one with its
// first write and every retry of a call carries the call's sequence number, so a retry of a write
// whose answer was lost (a broken connection, a node that fell silent after the command reached
// Raft) gets the first answer and changes nothing: a retried PutStart returns the replicas placed,
// a retried Remove succeeds. Without a session (Config.NoSession, or a cluster without
// OpenSession) such a retry meets the committed state instead: PutEnd is idempotent; PutStart and
// BatchPutStart recover by themselves (when a retried call meets OBJECT_ALREADY_EXISTS they revoke
// this client's own pending write of the key and place it again); Remove may report
// OBJECT_NOT_FOUND for an object its lost attempt removed. RemoveAll carries no session.
//
// # Batches
//
// The Batch methods take any number of items and send them in consecutive requests of at most
// MaxBatchItems (4096) items and MaxBatchBytes of keys, each retried on its own; results come back
// one per item in order. A request that fails as a whole ends the call with the results of the
// requests before it (a prefix) and the error. Batches (generic) splits any slice the same way
// by count. BatchGet and BatchExist send up to MaxReadBatchItems (65,536) keys and
// MaxReadBatchBytes of keys a request; a BatchGet whose response reached the server's size bound
// answers the rest of its keys RESPONSE_LIMIT_REACHED, and the client asks for those again.
package client
