package kvfeed

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxBatch is the most events one message carries.
const MaxBatch = 64

// The media of the feed.
const (
	MediumCPU  = "cpu"
	MediumDisk = "disk"
)

// Event is one feed event before it is packed: what happened to which object. Immutable value.
type Event struct {
	Stored bool   // stored, else removed
	Tenant string // the object's tenant name
	Key    string
	Group  string // "" for a singleton: group_id nil
	Medium string // MediumCPU or MediumDisk
}

// storedWire is a stored event as it goes on the wire: the fields in the wire's key order, the
// always-nil ones as nil pointers or slices (no omitempty: every key is sent).
type storedWire struct {
	EventID         uint64   `msgpack:"event_id"`
	Timestamp       int64    `msgpack:"timestamp"`
	EventType       string   `msgpack:"event_type"`
	Type            string   `msgpack:"type"`
	ModelName       *string  `msgpack:"model_name"`
	BlockSize       *uint32  `msgpack:"block_size"`
	AdditionalSalt  *string  `msgpack:"additional_salt"`
	LoraName        *string  `msgpack:"lora_name"`
	TenantID        string   `msgpack:"tenant_id"`
	BackendID       string   `msgpack:"backend_id"`
	GroupID         *string  `msgpack:"group_id"`
	Medium          *string  `msgpack:"medium"`
	DpRank          *uint32  `msgpack:"dp_rank"`
	ObjectKey       string   `msgpack:"object_key"`
	SeqHashes       []uint64 `msgpack:"seq_hashes"`   // never nil: [] for a key that is not a hash
	BlockHashes     []int64  `msgpack:"block_hashes"` // never nil
	BaseBlockIdx    *uint32  `msgpack:"base_block_idx"`
	ParentHash      *uint64  `msgpack:"parent_hash"`
	TokenIDs        []uint32 `msgpack:"token_ids"`
	ParentBlockHash *uint64  `msgpack:"parent_block_hash"`
}

// removedWire is a removed event as it goes on the wire (see storedWire); base_block_idx is nil.
type removedWire struct {
	EventID        uint64   `msgpack:"event_id"`
	Timestamp      int64    `msgpack:"timestamp"`
	EventType      string   `msgpack:"event_type"`
	Type           string   `msgpack:"type"`
	ModelName      *string  `msgpack:"model_name"`
	BlockSize      *uint32  `msgpack:"block_size"`
	AdditionalSalt *string  `msgpack:"additional_salt"`
	LoraName       *string  `msgpack:"lora_name"`
	TenantID       string   `msgpack:"tenant_id"`
	BackendID      string   `msgpack:"backend_id"`
	GroupID        *string  `msgpack:"group_id"`
	Medium         *string  `msgpack:"medium"`
	DpRank         *uint32  `msgpack:"dp_rank"`
	ObjectKey      string   `msgpack:"object_key"`
	SeqHashes      []uint64 `msgpack:"seq_hashes"`
	BlockHashes    []int64  `msgpack:"block_hashes"`
	BaseBlockIdx   *uint32  `msgpack:"base_block_idx"`
}

// encoder packs batches. Not safe for concurrent use (the publisher's goroutine owns it).
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.UseCompactInts(true)
	return e
}

// batch packs evs (1..MaxBatch) as one payload at time tsMs (Unix ms), their event ids from
// firstID on, and returns a copy the caller owns.
func (e *encoder) batch(tsMs int64, firstID uint64, backend string, evs []Event) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.EncodeArrayLen(3); err != nil {
		return nil, err
	}
	if err := e.enc.EncodeInt(tsMs); err != nil {
		return nil, err
	}
	if err := e.enc.EncodeArrayLen(len(evs)); err != nil {
		return nil, err
	}
	for i := range evs {
		if err := e.event(tsMs, firstID+uint64(i), backend, &evs[i]); err != nil {
			return nil, err
		}
	}
	if err := e.enc.EncodeUint(0); err != nil { // the batch's dp_rank
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

var zero uint32

func (e *encoder) event(tsMs int64, id uint64, backend string, ev *Event) error {
	seq, blk := []uint64{}, []int64{}
	if h, ok := ParseHash(ev.Key); ok {
		seq, blk = []uint64{h}, []int64{int64(h)}
	}
	var group *string
	if ev.Group != "" {
		group = &ev.Group
	}
	medium := ev.Medium
	if ev.Stored {
		return e.enc.Encode(&storedWire{EventID: id, Timestamp: tsMs, EventType: "stored", Type: "BlockStored",
			TenantID: ev.Tenant, BackendID: backend, GroupID: group, Medium: &medium, ObjectKey: ev.Key,
			SeqHashes: seq, BlockHashes: blk, BaseBlockIdx: &zero})
	}
	return e.enc.Encode(&removedWire{EventID: id, Timestamp: tsMs, EventType: "removed", Type: "BlockRemoved",
		TenantID: ev.Tenant, BackendID: backend, GroupID: group, Medium: &medium, ObjectKey: ev.Key,
		SeqHashes: seq, BlockHashes: blk})
}

// ParseHash returns the hash a key stands for: the whole key as a decimal number, or as 0x or 0X
// and hex digits, that fits in 64 bits. Anything else (a sign, spaces, trailing characters, an
// empty key) is no hash.
func ParseHash(key string) (uint64, bool) {
	digits, base := key, 10
	if rest, ok := strings.CutPrefix(key, "0x"); ok {
		digits, base = rest, 16
	} else if rest, ok := strings.CutPrefix(key, "0X"); ok {
		digits, base = rest, 16
	}
	h, err := strconv.ParseUint(digits, base, 64) // with an explicit base: no sign, prefix or underscore
	return h, err == nil
}
