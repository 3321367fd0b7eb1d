package watch

import (
	"context"
	"fmt"
	"testing"

	"metad/store"
)

// BenchmarkCursor: the events one subscriber reads per second from a full window, in batches of
// 1024, against the cost of appending them (what apply pays per event).
func BenchmarkCursor(b *testing.B) {
	const n = 1 << 16
	st := &store.ObjectState{Size: 4096, Replicas: []store.Replica{{ID: 1, Status: store.Complete}}}
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = Event{Rev: Rev{uint64(i + 1), 0}, Kind: Stored, Change: store.Change{Tenant: "default", Key: fmt.Sprintf("key-%08d", i), After: st}}
	}
	b.Run("append", func(b *testing.B) {
		w := NewWindow(Limits{Events: n, Bytes: 1 << 40}, 0)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e := evs[i%n]
			e.Rev = Rev{uint64(i + 1), 0}
			w.Append(uint64(i+1), []Event{e})
		}
	})
	b.Run("read", func(b *testing.B) {
		w := NewWindow(Limits{Events: n, Bytes: 1 << 40}, 0)
		for i := range evs {
			w.Append(uint64(i+1), evs[i:i+1])
		}
		done := make(chan struct{})
		close(done)
		buf := make([]Event, 0, 1024)
		read := 0
		b.ReportAllocs()
		for b.Loop() {
			c, _ := w.Subscribe(Rev{1, 0}, Filter{Tenant: "default"})
			for {
				var err error
				buf, err = c.Next(context.Background(), buf[:0], 1024, done)
				if err != nil {
					b.Fatal(err)
				}
				if len(buf) == 0 {
					break
				}
				read += len(buf)
			}
			c.Close()
		}
		b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "events/s")
	})
}
