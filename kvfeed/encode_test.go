package kvfeed

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// workedExample is the old master's payload for a fresh publisher (backend "store-node-1", clock
// 1739145600000 ms) whose first batch holds a stored event of key 0xd2a8c3f1e4b50617 on a memory
// replica and a removed event of key 12345 that had a disk replica, default tenant, no group.
const workedExample = `
93cf00000194ed27dc0092de0014a86576656e745f696401a974696d65737461
6d70cf00000194ed27dc00aa6576656e745f74797065a673746f726564a47479
7065ab426c6f636b53746f726564aa6d6f64656c5f6e616d65c0aa626c6f636b
5f73697a65c0af6164646974696f6e616c5f73616c74c0a96c6f72615f6e616d
65c0a974656e616e745f6964a764656661756c74aa6261636b656e645f6964ac
73746f72652d6e6f64652d31a867726f75705f6964c0a66d656469756da36370
75a764705f72616e6bc0aa6f626a6563745f6b6579b230786432613863336631
6534623530363137aa7365715f68617368657391cfd2a8c3f1e4b50617ac626c
6f636b5f68617368657391d3d2a8c3f1e4b50617ae626173655f626c6f636b5f
69647800ab706172656e745f68617368c0a9746f6b656e5f696473c0b1706172
656e745f626c6f636b5f68617368c0de0011a86576656e745f696402a974696d
657374616d70cf00000194ed27dc00aa6576656e745f74797065a772656d6f76
6564a474797065ac426c6f636b52656d6f766564aa6d6f64656c5f6e616d65c0
aa626c6f636b5f73697a65c0af6164646974696f6e616c5f73616c74c0a96c6f
72615f6e616d65c0a974656e616e745f6964a764656661756c74aa6261636b65
6e645f6964ac73746f72652d6e6f64652d31a867726f75705f6964c0a66d6564
69756da46469736ba764705f72616e6bc0aa6f626a6563745f6b6579a5313233
3435aa7365715f68617368657391cd3039ac626c6f636b5f68617368657391cd
3039ae626173655f626c6f636b5f696478c000`

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkedExampleBytes: the encoder packs the old master's worked example byte for byte.
func TestWorkedExampleBytes(t *testing.T) {
	want := mustHex(t, workedExample)
	got, err := newEncoder().batch(1739145600000, 1, "store-node-1", []Event{
		{Stored: true, Tenant: "default", Key: "0xd2a8c3f1e4b50617", Medium: MediumCPU},
		{Stored: false, Tenant: "default", Key: "12345", Medium: MediumDisk},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 595 || !bytes.Equal(got, want) {
		t.Fatalf("payload (%d bytes)\n%x\nwant (%d bytes)\n%x", len(got), got, len(want), want)
	}
}

// TestEventShapes: a group is a string, a key that is no hash has empty (not nil) hash arrays, a
// stored event has 20 keys and a removed one 17, in the wire's order, and the trailer is 0.
func TestEventShapes(t *testing.T) {
	long := strings.Repeat("e3b0c442", 8) + "_0_k" // an SGLang HiCache key: 68 bytes, str8
	payload, err := newEncoder().batch(1, 7, "b", []Event{
		{Stored: true, Tenant: "tenant-a", Key: long, Group: "sglang-hicache:x", Medium: MediumCPU},
		{Stored: false, Tenant: "tenant-a", Key: long, Group: "sglang-hicache:x", Medium: MediumCPU},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(payload, append([]byte{0xd9, byte(len(long))}, long...)) {
		t.Fatalf("key not packed as str8: %x", payload)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(payload))
	if n, err := dec.DecodeArrayLen(); err != nil || n != 3 {
		t.Fatalf("envelope: %d %v", n, err)
	}
	if ts, err := dec.DecodeInt64(); err != nil || ts != 1 {
		t.Fatalf("ts %d %v", ts, err)
	}
	if n, err := dec.DecodeArrayLen(); err != nil || n != 2 {
		t.Fatalf("events: %d %v", n, err)
	}
	order := map[int]string{
		20: "event_id timestamp event_type type model_name block_size additional_salt lora_name tenant_id backend_id group_id medium dp_rank object_key seq_hashes block_hashes base_block_idx parent_hash token_ids parent_block_hash",
		17: "event_id timestamp event_type type model_name block_size additional_salt lora_name tenant_id backend_id group_id medium dp_rank object_key seq_hashes block_hashes base_block_idx",
	}
	for i, size := range []int{20, 17} {
		n, err := dec.DecodeMapLen()
		if err != nil || n != size {
			t.Fatalf("event %d: %d keys (%v), want %d", i, n, err, size)
		}
		var keys []string
		vals := map[string]any{}
		for range n {
			k, err := dec.DecodeString()
			if err != nil {
				t.Fatal(err)
			}
			v, err := dec.DecodeInterface()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
			vals[k] = v
		}
		if strings.Join(keys, " ") != order[size] {
			t.Fatalf("event %d keys %v", i, keys)
		}
		if vals["event_id"] != uint64(7+i) && vals["event_id"] != int8(7+i) {
			t.Errorf("event %d id %T %v", i, vals["event_id"], vals["event_id"])
		}
		if vals["group_id"] != "sglang-hicache:x" || vals["tenant_id"] != "tenant-a" || vals["backend_id"] != "b" {
			t.Errorf("event %d: %v", i, vals)
		}
		for _, k := range []string{"seq_hashes", "block_hashes"} {
			if a, ok := vals[k].([]any); !ok || len(a) != 0 {
				t.Errorf("event %d %s = %#v, want []", i, k, vals[k])
			}
		}
	}
	if dp, err := dec.DecodeUint32(); err != nil || dp != 0 {
		t.Fatalf("trailer %d %v", dp, err)
	}
}

func TestParseHash(t *testing.T) {
	for key, want := range map[string]uint64{"0XFF": 255, "0x2a": 42, "12345": 12345, "0": 0,
		"18446744073709551615": 1<<64 - 1, "0xffffffffffffffff": 1<<64 - 1} {
		if got, ok := ParseHash(key); !ok || got != want {
			t.Errorf("ParseHash(%q) = %d %v, want %d", key, got, ok, want)
		}
	}
	for _, key := range []string{"", "123abc", "not-a-hash", "0x", "+5", "-1", " 5", "1_000", "18446744073709551616", "0x1p3", "0x0x1"} {
		if h, ok := ParseHash(key); ok {
			t.Errorf("ParseHash(%q) = %d, want no hash", key, h)
		}
	}
}
