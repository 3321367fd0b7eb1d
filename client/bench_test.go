package client

import (
	"context"
	"testing"

	"metad/proto/metadv1"
)

// BenchmarkGet measures a Get through the Client (retry loop, leader lookup, request building)
// against the baseline of the generated gRPC stub on the same connection, both to a fake node that
// answers at once over loopback. The difference is the client's own cost per call.
func BenchmarkGet(b *testing.B) {
	n := startFakeB(b)
	c, err := New(Config{Endpoints: []string{n.addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Get(ctx, "", "warm"); err != nil {
		b.Fatal(err)
	}
	stub := c.cur.Load().md
	run := func(b *testing.B, get func() error) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := get(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("raw-grpc", func(b *testing.B) {
		run(b, func() error {
			_, err := stub.Get(ctx, &metadv1.GetRequest{Key: []byte("key-0001")})
			return err
		})
	})
	b.Run("client", func(b *testing.B) {
		run(b, func() error {
			_, err := c.Get(ctx, "", "key-0001")
			return err
		})
	})
}
