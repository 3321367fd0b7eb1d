package service_test

import (
	"context"
	"strings"
	"testing"

	metadv1 "metad/proto/metadv1"
)

// TestBadInputIsInvalidParams drives every rule of SEMANTICS section 1: each breach is
// INVALID_PARAMS with a message naming the field, and nothing proposed.
func TestBadInputIsInvalidParams(t *testing.T) {
	h := newHarness(t, nil)
	h.mount(t, clientA, segA)
	h.put(t, "", "exists", 64)

	cl := idb(clientA)
	key := []byte("k")
	long := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	put := func(mod func(r *metadv1.PutStartRequest)) func(context.Context) error {
		return func(ctx context.Context) error {
			r := &metadv1.PutStartRequest{ClientId: cl, Key: key, Size: 1}
			mod(r)
			_, err := h.svc.PutStart(ctx, r)
			return err
		}
	}
	cfg := func(c *metadv1.ReplicaConfig) func(context.Context) error {
		return put(func(r *metadv1.PutStartRequest) { r.Config = c })
	}
	keys := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte{'k', byte(i), byte(i >> 8)}
		}
		return out
	}
	seg := func(mod func(d *metadv1.SegmentDesc)) func(context.Context) error {
		return func(ctx context.Context) error {
			d := &metadv1.SegmentDesc{Id: idb(segB), Name: "s", Base: 4096, Size: 4096, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY}
			mod(d)
			_, err := h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: cl, Segment: d})
			return err
		}
	}
	const (
		enable = metadv1.SoftPinAction_SOFT_PIN_ACTION_ENABLE
		none   = metadv1.SoftPinAction_SOFT_PIN_ACTION_NONE
	)
	cases := []struct {
		name, field string
		call        func(context.Context) error
	}{
		{"tenant starts with _", "tenant", put(func(r *metadv1.PutStartRequest) { r.Tenant = "_sys" })},
		{"tenant too long", "tenant", put(func(r *metadv1.PutStartRequest) { r.Tenant = long(257, 't') })},
		{"tenant control byte", "tenant", put(func(r *metadv1.PutStartRequest) { r.Tenant = "a\x01b" })},
		{"tenant DEL byte", "tenant", put(func(r *metadv1.PutStartRequest) { r.Tenant = "a\x7fb" })},
		{"tenant bad on read", "tenant", func(ctx context.Context) error {
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{Tenant: "_x", Key: key})
			return err
		}},
		{"key empty", "key", put(func(r *metadv1.PutStartRequest) { r.Key = nil })},
		{"key too long", "key", put(func(r *metadv1.PutStartRequest) { r.Key = []byte(long(4097, 'k')) })},
		{"key with NUL", "key", put(func(r *metadv1.PutStartRequest) { r.Key = []byte("a\x00b") })},
		{"key empty on Get", "key", func(ctx context.Context) error {
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{})
			return err
		}},
		{"key NUL on Remove", "key", func(ctx context.Context) error {
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte{0}, Force: true})
			return err
		}},
		{"group too long", "group", put(func(r *metadv1.PutStartRequest) { r.Group = []byte(long(257, 'g')) })},
		{"group with NUL", "group", put(func(r *metadv1.PutStartRequest) { r.Group = []byte("g\x00") })},
		{"group empty on RemoveGroup", "group", func(ctx context.Context) error {
			_, err := h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Force: true})
			return err
		}},
		{"client id missing", "client_id", put(func(r *metadv1.PutStartRequest) { r.ClientId = nil })},
		{"client id 15 bytes", "client_id", put(func(r *metadv1.PutStartRequest) { r.ClientId = make([]byte, 15) })},
		{"client id zero", "client_id", put(func(r *metadv1.PutStartRequest) { r.ClientId = make([]byte, 16) })},
		{"client id not a UUID string", "client_id", put(func(r *metadv1.PutStartRequest) { r.ClientId = []byte(long(36, 'z')) })},
		{"client id on Ping", "client_id", func(ctx context.Context) error {
			_, err := h.svc.Ping(ctx, &metadv1.PingRequest{ClientId: []byte("x")})
			return err
		}},
		{"size zero", "size", put(func(r *metadv1.PutStartRequest) { r.Size = 0 })},
		{"size over 2^40", "size", put(func(r *metadv1.PutStartRequest) { r.Size = 1<<40 + 1 })},
		{"memory replicas 9", "config.memory_replicas", cfg(&metadv1.ReplicaConfig{MemoryReplicas: 9})},
		{"nof replicas 9", "config.nof_replicas", cfg(&metadv1.ReplicaConfig{NofReplicas: 9})},
		{"preferred segment twice", "config.preferred_segment_ids", cfg(&metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(segA), idb(segA)}})},
		{"preferred segment not 16 bytes", "config.preferred_segment_ids", cfg(&metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{{1, 2}}})},
		{"soft pin ttl over 24h", "config.soft_pin_ttl_ms", cfg(&metadv1.ReplicaConfig{SoftPin: enable, SoftPinTtlMs: 24*3600*1000 + 1})},
		{"soft pin ttl without ENABLE", "config.soft_pin_ttl_ms", cfg(&metadv1.ReplicaConfig{SoftPin: none, SoftPinTtlMs: 1000})},
		{"soft pin ttl with DISABLE", "config.soft_pin_ttl_ms", cfg(&metadv1.ReplicaConfig{SoftPin: metadv1.SoftPinAction_SOFT_PIN_ACTION_DISABLE, SoftPinTtlMs: 1})},
		{"soft pin unknown action", "config.soft_pin", cfg(&metadv1.ReplicaConfig{SoftPin: 256})},
		{"tier unknown", "tier", func(ctx context.Context) error {
			_, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: cl, Key: []byte("exists"), Tier: 9})
			return err
		}},
		{"batch empty", "keys", func(ctx context.Context) error {
			_, err := h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{})
			return err
		}},
		{"batch over 4096", "keys", func(ctx context.Context) error {
			_, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: keys(4097), Force: true})
			return err
		}},
		{"batch put over 4096", "items", func(ctx context.Context) error {
			ks := keys(4097)
			items := make([]*metadv1.BatchPutStartRequest_Item, len(ks))
			for i := range items {
				items[i] = &metadv1.BatchPutStartRequest_Item{Key: ks[i], Size: 1}
			}
			_, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: cl, Items: items})
			return err
		}},
		{"batch item with a bad key", "keys[1]", func(ctx context.Context) error {
			_, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: cl, Keys: [][]byte{key, nil}})
			return err
		}},
		{"batch item with a bad size", "items[0]", func(ctx context.Context) error {
			_, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: cl,
				Items: []*metadv1.BatchPutStartRequest_Item{{Key: key}}})
			return err
		}},
		{"segment base zero", "segment.base", seg(func(d *metadv1.SegmentDesc) { d.Base = 0 })},
		{"segment base unaligned", "segment.base", seg(func(d *metadv1.SegmentDesc) { d.Base = 4097 })},
		{"segment size zero", "segment.size", seg(func(d *metadv1.SegmentDesc) { d.Size = 0 })},
		{"segment size unaligned", "segment.size", seg(func(d *metadv1.SegmentDesc) { d.Size = 100 })},
		{"segment tier missing", "segment.tier", seg(func(d *metadv1.SegmentDesc) { d.Tier = metadv1.Tier_TIER_UNSPECIFIED })},
		{"segment id not 16 bytes", "segment.id", seg(func(d *metadv1.SegmentDesc) { d.Id = []byte("short") })},
		{"segment size over 2^48", "segment.size", seg(func(d *metadv1.SegmentDesc) { d.Size = 1<<48 + 64 })},
		{"segment name empty", "segment.name", seg(func(d *metadv1.SegmentDesc) { d.Name = "" })},
		{"segment name 1 MiB", "segment.name", seg(func(d *metadv1.SegmentDesc) { d.Name = long(1<<20, 'n') })},
		{"segment name control byte", "segment.name", seg(func(d *metadv1.SegmentDesc) { d.Name = "a\tb" })},
		{"segment endpoint empty", "segment.endpoint", seg(func(d *metadv1.SegmentDesc) { d.Endpoint = "" })},
		{"segment endpoint too long", "segment.endpoint", seg(func(d *metadv1.SegmentDesc) { d.Endpoint = long(1025, 'e') })},
		{"segment endpoint control byte", "segment.endpoint", seg(func(d *metadv1.SegmentDesc) { d.Endpoint = "h\x1b:1" })},
		{"member name with a control byte", "name", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n4\x01", PeerAddress: "127.0.0.1:7004"})
			return err
		}},
		{"member name too long", "name", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: long(65, 'n'), PeerAddress: "127.0.0.1:7004"})
			return err
		}},
		{"member address without a port", "peer_address", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n4", PeerAddress: "127.0.0.1"})
			return err
		}},
		{"member address port 0", "peer_address", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n4", PeerAddress: "127.0.0.1:0"})
			return err
		}},
		{"member address port over 65535", "peer_address", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n4", PeerAddress: "h:65536"})
			return err
		}},
		{"member address without a host", "peer_address", func(ctx context.Context) error {
			_, err := h.svc.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n4", PeerAddress: ":7004"})
			return err
		}},
		{"member name empty on remove", "name", func(ctx context.Context) error {
			_, err := h.svc.RemoveMember(ctx, &metadv1.RemoveMemberRequest{})
			return err
		}},
		{"tenant name on register", "name", func(ctx context.Context) error {
			_, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "_hidden"})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.b.Proposals.Load()
			err := tc.call(tctx(t))
			wantInvalid(t, err, tc.field)
			if d := h.b.Proposals.Load() - before; d != 0 {
				t.Fatalf("%d commands proposed", d)
			}
		})
	}
}
