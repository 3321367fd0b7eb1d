// Package wire converts between the protobuf messages of proto/metadv1 (the gRPC API, the Raft log
// commands and the snapshot records) and the store's values (package store and store/alloc). It is
// the only place that knows both shapes: the state machine (fsm), the leader's service (service),
// the gRPC adapter (server) and the eviction kernel (evict) convert through it.
//
// Every conversion is total: a malformed value (an id that is not 16 bytes, an unknown enum)
// becomes a value the store rejects with INVALID_PARAMS, the same way on every node; nothing here
// panics, reads the clock or draws randomness, so the apply path may use all of it.
package wire
