// Command metactl is the client and operator tool of metad.
//
//	metactl [--endpoints A,B,C] [-o table|json] [--timeout D]
//	        [--cacert F] [--cert F --key F] [--api-key K] [--certs-dir D] VERB [ARGS] [FLAGS]
//
// Global flags may also follow the verb, and a verb's flags may follow its arguments
// (`metactl put k1 --size 4KiB -o json`); everything after "--" is an argument. Endpoints default
// to $METAD_ENDPOINTS, else 127.0.0.1:6001,127.0.0.1:6002,127.0.0.1:6003 (the `make run`
// cluster). --timeout (default 10s) bounds each call to the cluster, retries included: calls go to
// the leader, follow NOT_LEADER redirects and fail over past unreachable nodes (package client).
//
// # Transport security
//
// --cacert names the PEM file of the CA certificates that verify the nodes (several allowed: an
// overlap bundle while the CA rotates) and turns TLS 1.3 on; --cert and --key name a client
// certificate to authenticate with, --api-key an API key sent on every call as `authorization:
// Bearer <key>` (refused without TLS). Their defaults come from METAD_CACERT, METAD_CERT,
// METAD_KEY and METAD_API_KEY. Without --cacert, when <certs-dir>/ca.crt exists (--certs-dir,
// default $METAD_CERTS_DIR or data/certs, which `make run` creates), metactl uses TLS with that
// CA and, unless --cert or --api-key is given, presents the root principal's certificate
// client.root.crt/.key there (root is the bootstrap admin). So the README's commands work
// unchanged against the `make run` cluster; without that directory metactl speaks plaintext.
// Every verb, worker and bench included, takes these options; a worker usually names its own
// principal's certificate with --cert/--key.
//
// # Verbs
//
// Objects (tenant "default" unless --tenant):
//
//	put KEY --size N [--group G] [--replicas R] [--nof R] [--dfs R] [--soft-pin D] [--hard-pin] [--prefer IDS] [--host H] [--client ID]
//	                                  PutStart + PutEnd: place and commit an object, show its replicas
//	put-start KEY --size N [...]      PutStart only; prints the put-end command that commits it
//	put-end KEY [--tier T] [--client ID]      commit a put-start (T = MEMORY, NOF, DISK or DFS; default every tier)
//	put-revoke KEY [--tier T] [--client ID]   abandon a put-start
//	get KEY [--stale]                 where the replicas are, size, data type, lease
//	exists KEY... [--stale]           one row per key: readable or not (never an error for a missing key)
//	rm KEY [--force]                  remove an object (--force: even under a read lease)
//	rm --regex R [--force]            remove, page by page, every object whose key the Go regexp
//	                                  (RE2) R matches anywhere; one row per matching key
//	ls [--prefix P | --regex R] [--limit N] [--stale]
//	                                  the tenant's keys in byte order, page after page (--regex:
//	                                  the readable objects that match, with size and replicas,
//	                                  leased as get leases them)
//	replica-clear KEY... [--segment ID] [--client ID]
//	                                  drop the keys' unleased COMPLETE replicas on the client's
//	                                  segment (default: all its segments); an object left with none
//	                                  is erased; one row per key
//	rm-all [--force]                  remove every removable object of the tenant
//	group ls GROUP [--stale]          member keys of an explicit group
//	group rm GROUP [--force]          remove a group and all its members
//
// Operators:
//
//	tenant create NAME [--quota BYTES]   register a tenant (quota 0 = unlimited)
//	tenant rm NAME [--force]             unregister (--force erases its objects and groups)
//	tenant ls [--stale]                  tenants with requested and effective quota, usage, counts
//	tenant quota NAME [BYTES]            show the quota, or set it
//	segment mount --size S [--tier MEMORY|NOF|DISK|DFS] [--client ID] [--id UUID] [--name N] [--base B] [--endpoint E]
//	segment unmount ID [--client ID] [--grace D]
//	                                     the owner is looked up with ListSegments unless given; --grace
//	                                     closes the segment to new allocations now and unmounts it when D
//	                                     has passed or it holds nothing (segment ls shows it CLOSING)
//	segment ls [--tier T] [--client ID] [--stale]
//	disk mount --capacity S [--endpoint E] [--offload] [--client ID]
//	                                     register the client's local SSD: its LOCAL_DISK segment, whose
//	                                     id follows from the client's (kept while the client pings)
//	disk offload KEY... [--failed] [--tenant T] [--client ID]
//	                                     report the keys copied to the client's SSD: each gets a
//	                                     COMPLETE LOCAL_DISK replica of its size (never charged to quota)
//	disk evict KEY... [--tenant T] [--client ID]
//	                                     report the keys' SSD files removed; an object left with no
//	                                     replica is erased
//	disk unmount [--client ID]           drop the registration and exactly its LOCAL_DISK replicas
//	member ls                            NAME, ROLE (leader, voter, learner), addresses, APPLIED and LAG
//	                                     as each member answered the leader, LEVEL
//	member add [--learner] NAME PEERADDR | member promote [--max-lag N] NAME | member rm NAME
//	leader transfer [--to NAME]
//	status                               one row per endpoint: name, client and peer address, role,
//	                                     term, applied index, objects, leader; unreachable ones marked
//
// Certificates (Go's crypto, no cluster needed; in --certs-dir; an existing file is never
// overwritten, the verb fails naming it; V is days, 365d, or a Go duration, 8760h):
//
//	cert create-ca [--validity V]        the cluster CA: ca.crt, ca.key (default 10 years)
//	cert create-member --name N --hosts H1,H2 [--validity V]
//	                                     member N's node certificate (metad://member/N), for server and
//	                                     client use, valid for the IP addresses and DNS names H that
//	                                     clients and peers dial: member.N.crt, member.N.key (default 1 year)
//	cert create-client --name P [--validity V]
//	                                     principal P's client certificate (metad://principal/P):
//	                                     client.P.crt, client.P.key (default 1 year); P = root for the admin
//	cert ls                              every certificate of *.crt: file, identity ("ca" for a CA),
//	                                     not-after, and "expired" or "expires in <d>"
//
// Tools:
//
//	worker --segments N --segment-size S [--client ID] [--tier MEMORY|NOF] [--ping-interval D]
//	       [--duration D] [--unmount-on-exit]
//	    A simulated cache worker: takes a new random client id unless given, mounts N segments with
//	    fresh UUIDs at consecutive 2 MiB-aligned simulated base addresses, prints them, then pings
//	    every second until SIGINT/SIGTERM (or --duration), reporting leader changes and remounting
//	    any segment a Ping says the cluster no longer has (the worker was expired while cut off).
//	    --run-tasks runs the moves and copies the cluster assigns. --local-disk DIR [--disk-capacity S]
//	    registers DIR as the worker's local SSD (LOCAL_DISK); with --offload the worker takes the
//	    offload task each put on its segments queues, writes the object's file under DIR (one per
//	    object: <hex tenant>/<hex key>, the object's size of its key repeated) and reports it; with
//	    --promote it takes the promotions the leader queues for its disk-only objects (reads the
//	    file into the memory replica PromotionAllocStart places, simulated) and reports them.
//	bench --clients N --duration D --op put|get|mixed [--batch K] [--size S] [--keys K] [--tenant T]
//	      [--conns C] [--read-fraction F] [--mount S]
//	    N goroutines share C connections (default 8) for D. put writes unique new keys
//	    (PutStart then PutEnd, or their batch forms with --batch K > 1); get first pre-populates K
//	    keys, then reads random ones; mixed does both, F of the requests reads. --mount S mounts a
//	    memory segment for the run (kept alive by pings) when the cluster has none. Latency is kept
//	    in a fixed-size log-linear histogram (1.6 % resolution), so memory is bounded whatever D.
//
// bench prints, and with -o json emits as one object: op, op_unit, clients, conns, batch, size,
// duration_s, ops and ops_per_sec (an op is what op_unit names: for put one object stored, a
// PutStart and its PutEnd or one item of a batch pair, so ops_per_sec is object puts/s, the figure
// to compare with etcd's puts/s from ../shared/bench/etcd-baseline; for get and exist one
// request), rpcs and rpcs_per_sec (every RPC answered), items and items_per_sec (keys carried by
// the ops), puts/puts_per_sec (objects stored), gets/gets_per_sec (keys read), p50_ms, p99_ms,
// p999_ms, max_ms (per op, successful ops only; an object's from its start call's send to its end
// call's answer), object_put_p50_ms and object_put_p99_ms (put and mixed: per object), errors and
// error_reasons.
//
// # Conventions
//
// Sizes take a unit: 4096, 4K = 4KiB = 4096, 1GiB, 1MB = 10^6 (IEC and single letters are
// binary, SI with B decimal). Client and segment ids are UUIDs (canonical or 32 hex digits).
// Unless --client is given, put, put-start, put-end, put-revoke and segment mount act as a client
// id derived from the user and host names, so a put-start and a later put-end match.
//
// Output is a table (text/tabwriter) or, with -o json, one JSON document on stdout. Errors go to
// stderr as `error: <reason>: <message>`, where reason is the server's stable code
// (OBJECT_NOT_FOUND, NOT_LEADER, ...) or the gRPC code (UNAVAILABLE, DEADLINE_EXCEEDED) when there
// is none. Exit status: 0 success, 1 the operation failed, 2 a usage error.
package main
