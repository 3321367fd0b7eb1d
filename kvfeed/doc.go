// Package kvfeed publishes this member's object changes as the old master's KV-cache event feed:
// the ZMQ PUB stream that Mooncake's master ("mooncake-store", release format) sends, byte for byte,
// so that a router written for that feed reads metad's unchanged.
//
// # Role and call sequence
//
// A Publisher binds one ZMQ PUB socket (bind only; send high-water mark 10000 messages) at an
// endpoint (tcp://host:port or ipc://path), subscribes to the member's watch window from the next
// change (every tenant), and on its own goroutine turns each watch event into feed events, packs
// them into batches and sends each batch as one message. It only reads the window: apply never
// waits for it. Close stops the goroutine and the socket.
//
//	p, err := kvfeed.New(kvfeed.Config{Endpoint: "tcp://127.0.0.1:5557", BackendID: "n1"}, f.Window(), log)
//	err = p.RegisterMetrics(reg)
//	defer p.Close()
//
// # Messages
//
// Every message has exactly three frames: an empty topic (0 bytes: a subscriber subscribes to the
// empty prefix), the message's sequence number as an 8-byte big-endian unsigned integer, and a
// msgpack payload. The payload is an array of three: the batch time (integer Unix milliseconds of
// the wall clock, taken when the batch is packed), an array of 1 to 64 event maps, and the integer
// 0 (the batch's data-parallel rank). Integers take their smallest msgpack form; no msgpack
// extension type is used.
//
// Each event is a map with string keys, in this order (values in brackets):
//
//	event_id         per-publisher counter from 1, +1 per event, never reused
//	timestamp        the batch time
//	event_type       "stored" or "removed"
//	type             "BlockStored" or "BlockRemoved"
//	model_name       nil
//	block_size       nil
//	additional_salt  nil
//	lora_name        nil
//	tenant_id        the object's tenant name (a string, never nil)
//	backend_id       Config.BackendID
//	group_id         the object's explicit group, nil for a singleton
//	medium           "cpu" (MEMORY replicas) or "disk" (NOF replicas)
//	dp_rank          nil
//	object_key       the object key, verbatim
//	seq_hashes       [the key as an unsigned 64-bit hash] when the whole key is a decimal number or
//	                 0x/0X and hex digits that fit in 64 bits, else [] (never nil)
//	block_hashes     as seq_hashes, the hash cast to a signed 64-bit integer (negative from 2^63)
//	base_block_idx   0 for stored, nil for removed
//	parent_hash      nil (stored only)
//	token_ids        nil (stored only)
//	parent_block_hash nil (stored only)
//
// A stored event has 20 keys, a removed one 17 (msgpack map16 headers). Token ids, block size,
// model, LoRA and parent hash are never known to metad and always nil; replica locations are not
// on the wire.
//
// # When events are sent
//
//   - An object becomes readable (watch Stored): one stored event per medium among its COMPLETE
//     replicas ("cpu" first, then "disk").
//   - A readable object's COMPLETE replicas change (watch Changed): one stored event per medium it
//     newly has. A medium it loses while it stays readable sends nothing: a removed event means the
//     object is gone to every known consumer (they do not read medium), and the old master does not
//     retract a medium either.
//   - An object stops being readable (watch Removed or Evicted, whatever the cause: remove, batch
//     remove, eviction, unmount, expiry): one removed event, its medium "cpu" if the object had a
//     COMPLETE MEMORY replica before, else "disk".
//
// Changes that touch only PROCESSING replicas, tasks, pins or sizes send nothing, and neither does
// anything about tenants, segments, members or sessions. There is no "cleared" event, no replay
// socket and no snapshot: objects the member already holds when the publisher starts are not
// announced.
//
// # Sequence numbers and gaps
//
// The first message has sequence number 1 and each message the next one, per process: a restart
// (or a new leader: every member publishes its own feed) starts again at 1. Events never get a
// gap in their ids; loss shows only in the sequence. When the publisher's cursor falls out of the
// watch window (it was slower than the writes) or the state is replaced by a snapshot (a restore,
// a follower's install), the events in between are lost: the publisher subscribes again from the
// next change and skips one sequence number, so the next message's number is the last one's plus
// 2. A consumer that checks for seq == last+1 (as Dynamo's reader does) sees the gap, clears its
// index and rebuilds it from the events that follow. Messages the socket drops (more than 10000
// queued for the subscribers) also show as gaps. The socket's queue is shared and written to each
// subscriber in turn: one that stops reading holds up the others until its connection closes (the
// publisher itself never waits: it falls behind the window instead, a gap).
//
// Metrics: metad_kvfeed_messages_published_total, metad_kvfeed_events_published_total and
// metad_kvfeed_gaps_total.
package kvfeed
