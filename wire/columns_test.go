package wire

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Any token list survives ColumnsTo, a wire round trip and ColumnsFrom unchanged, in order.
func TestTokenColumnsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tenants := []string{"default", "alpha", "beta"}
		toks := rapid.SliceOf(rapid.Custom(func(t *rapid.T) store.ObjectToken {
			return store.ObjectToken{
				Tenant:   rapid.SampledFrom(tenants).Draw(t, "tenant"),
				Instance: rapid.Uint64Range(1, 3).Draw(t, "instance"),
				Key:      rapid.StringN(0, 40, -1).Draw(t, "key"),
				ObjectID: rapid.Uint64().Draw(t, "id"),
				Version:  rapid.Uint64().Draw(t, "version"),
			}
		})).Draw(t, "tokens")
		wire, err := proto.Marshal(ColumnsTo(toks))
		if err != nil {
			t.Fatal(err)
		}
		var c metadv1.TokenColumns
		if err := proto.Unmarshal(wire, &c); err != nil {
			t.Fatal(err)
		}
		// Decoding over a list left from an earlier entry (as applyEvict does) changes nothing.
		dst := make([]store.ObjectToken, rapid.IntRange(0, 8).Draw(t, "dst"), 16)
		for i := range dst {
			dst[i] = store.ObjectToken{Tenant: "stale", Key: "stale", ObjectID: 7, Version: 7}
		}
		got, err := ColumnsFrom(&c, dst)
		if err != nil {
			t.Fatal(err)
		}
		if len(toks) == 0 {
			toks = nil
		}
		if len(got) == 0 {
			got = nil
		}
		if !slices.Equal(got, toks) {
			t.Fatalf("round trip: got %v, want %v", got, toks)
		}
		if len(c.GetTenants()) > len(tenants)*3 {
			t.Fatalf("%d tenant entries for at most %d distinct (tenant, instance) pairs", len(c.GetTenants()), len(tenants)*3)
		}
	})
}
