package fsm

import (
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestBatchReplicaClearApply: the command drops the items' replicas on the client's segment (the
// object is erased with its last replica), answers the items the leader refused with their
// refusal, and is refused whole for a segment of another client, nothing changed.
func TestBatchReplicaClearApply(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	for _, k := range []string{"a", "b"} {
		if r := x.put(0, 0, 0, 0, k); r.Reason != store.OK {
			t.Fatalf("put %s: %+v", k, r)
		}
		if r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: genClients[0], Key: []byte(k)}}})[0]; r.Reason != store.OK {
			t.Fatalf("put end %s: %+v", k, r)
		}
	}
	clear := func(client []byte, seg []byte, items ...*metadv1.ObjectRef) store.Result {
		return x.apply(0, &metadv1.Command{Op: &metadv1.Command_BatchReplicaClear{BatchReplicaClear: &metadv1.BatchReplicaClear{
			Tenant: "default", TenantInstanceId: 1, ClientId: client, SegmentId: seg, Items: items}}})[0]
	}
	r := clear(genClients[1], uuid(0x5e, 1), &metadv1.ObjectRef{Key: []byte("a")})
	if r.Reason != store.SegmentOwnedByOtherClient {
		t.Fatalf("clear of another client's segment: %+v", r)
	}
	r = clear(genClients[0], nil,
		&metadv1.ObjectRef{Key: []byte("b"), ObjectId: ^uint64(0), Refused: metadv1.Reason_REASON_OBJECT_HAS_LEASE, RefusedMessage: "leased"},
		&metadv1.ObjectRef{Key: []byte("a")},
		&metadv1.ObjectRef{Key: []byte("zz")})
	if r.Reason != store.OK || len(r.Items) != 3 || r.Items[0].Reason != store.ObjectHasLease || r.Items[1].Reason != store.OK ||
		r.Items[2].Reason != store.ObjectNotFound || r.Count != 1 {
		t.Fatalf("BatchReplicaClear: %+v", r)
	}
	if _, err := x.f.Store().Peek("default", "a"); store.ReasonOf(err) != store.ObjectNotFound {
		t.Fatalf("a after its last replica was cleared: %v", err)
	}
	if _, err := x.f.Store().Peek("default", "b"); err != nil {
		t.Fatalf("b, refused, was touched: %v", err)
	}
}

// TestKeyedBatchRemoveKeepsKeys: a keyed BatchRemove (RemoveByRegex) answers each item with its
// key, and the key survives the session's encoding of the answer (snapshots keep it).
func TestKeyedBatchRemoveKeepsKeys(t *testing.T) {
	x := newSessionFixture(t, time.Minute, 8)
	if r := x.put(0, 0, 0, 0, "k"); r.Reason != store.OK {
		t.Fatalf("put: %+v", r)
	}
	if r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: genClients[0], Key: []byte("k")}}})[0]; r.Reason != store.OK {
		t.Fatalf("put end: %+v", r)
	}
	r := x.apply(0, &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{Tenant: "default", TenantInstanceId: 1,
		Keyed: true, Items: []*metadv1.ObjectRef{{Key: []byte("k")}, {Key: []byte("gone")}}}}})[0]
	if len(r.Items) != 2 || r.Items[0].Key != "k" || r.Items[0].Reason != store.OK || r.Items[1].Key != "gone" {
		t.Fatalf("keyed BatchRemove: %+v", r)
	}
	back, err := decodeResult(encodeResult(r))
	if err != nil || len(back.Items) != 2 || back.Items[0].Key != "k" || back.Items[1].Key != "gone" {
		t.Fatalf("decoded %+v, %v", back, err)
	}
}
