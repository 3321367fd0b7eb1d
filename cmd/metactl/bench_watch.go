package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// benchWatchers is bench's --watchers: watch streams of the run's own objects (the tenant, the key
// prefix bench-RUNID/, STORED only), opened before the load starts, each on its own connection to
// one of the --watch-endpoints members in turn (a router's subscription: protobuf decoded, nothing
// printed). Each event's delivery lag is its receive time minus its entry's leader time
// (WatchEvent.time_unix_nano): the bench and the members must share a clock, as they do on one
// machine.
type benchWatchers struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	subs   []*benchWatcher
}

// benchWatcher is one stream. n is written by its goroutine and read by the caller; lat and err
// are the goroutine's until done.
type benchWatcher struct {
	n   atomic.Uint64 // STORED events received
	r   atomic.Uint64 // responses with events received
	lat hist
	err error
}

// startWatchers opens n streams and returns once each has answered its first response (the
// stream is open at a revision before any of the load's puts).
func startWatchers(a *app, n int, endpoints []string, tenant, prefix string) (*benchWatchers, error) {
	ctx, cancel := context.WithCancel(a.ctx)
	ws := &benchWatchers{cancel: cancel}
	opened := make(chan struct{}, n)
	opts := client.WatchOptions{Tenant: tenant, Prefix: []byte(prefix), Progress: time.Second,
		Kinds: []metadv1.WatchEventKind{metadv1.WatchEventKind_WATCH_EVENT_KIND_STORED}}
	for i := range n {
		// This stream's member first; the client moves on to the others only if it fails.
		order := append(append([]string(nil), endpoints[i%len(endpoints):]...), endpoints[:i%len(endpoints)]...)
		c, err := a.clientAt(order, client.NewUUID())
		if err != nil {
			ws.stop()
			return nil, err
		}
		w := &benchWatcher{}
		ws.subs = append(ws.subs, w)
		ws.done.Add(1)
		go func() {
			defer ws.done.Done()
			first := true
			w.err = c.Watch(ctx, opts, func(resp *metadv1.WatchResponse) error {
				if first {
					first = false
					opened <- struct{}{}
				}
				now := time.Now().UnixNano()
				for _, e := range resp.GetEvents() {
					w.lat.record(time.Duration(now - e.GetTimeUnixNano()))
				}
				w.n.Add(uint64(len(resp.GetEvents())))
				if len(resp.GetEvents()) > 0 {
					w.r.Add(1)
				}
				return nil
			})
			if first {
				opened <- struct{}{} // failed before it opened: err says why
			}
		}()
	}
	deadline := time.After(a.timeout)
	for range n {
		select {
		case <-opened:
		case <-deadline:
			ws.stop()
			return nil, fmt.Errorf("bench: %d watch streams did not open within %v", n, a.timeout)
		}
	}
	for _, w := range ws.subs {
		if w.n.Load() == 0 && w.err != nil {
			ws.stop()
			return nil, fmt.Errorf("bench: a watch stream failed to open: %w", w.err)
		}
	}
	return ws, nil
}

// finish waits until every stream has received want events or grace has passed (events still in
// flight when the load ends count, with their lag), stops the streams and fills res's watch
// figures.
func (ws *benchWatchers) finish(want uint64, grace time.Duration, res *benchResult) {
	end := time.Now().Add(grace)
	for time.Now().Before(end) && !ws.allReached(want) {
		time.Sleep(10 * time.Millisecond)
	}
	ws.stop()
	var lat hist
	res.Watchers = len(ws.subs)
	for _, w := range ws.subs {
		lat.merge(&w.lat)
		res.WatchEvents += w.n.Load()
		res.WatchResponses += w.r.Load()
	}
	res.WatchMissing = want*uint64(len(ws.subs)) - min(res.WatchEvents, want*uint64(len(ws.subs)))
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	res.WatchLagP50Ms, res.WatchLagP99Ms = ms(lat.quantile(0.5)), ms(lat.quantile(0.99))
	res.WatchLagMaxMs = ms(time.Duration(lat.max))
}

func (ws *benchWatchers) allReached(want uint64) bool {
	for _, w := range ws.subs {
		if w.n.Load() < want {
			return false
		}
	}
	return true
}

func (ws *benchWatchers) stop() {
	ws.cancel()
	ws.done.Wait()
}

// pacer spreads ops over time at a fixed rate (bench's --rate) shared by every load goroutine,
// with no catching up after a stall: a goroutine that finds the schedule behind the clock starts
// it again from now.
type pacer struct {
	next     atomic.Int64 // unix ns of the next free slot
	interval int64        // ns per op
}

func newPacer(perSec float64) *pacer {
	return &pacer{interval: int64(1e9 / perSec)}
}

// wait takes n slots and sleeps until the first of them.
func (p *pacer) wait(n int) {
	for {
		cur, now := p.next.Load(), time.Now().UnixNano()
		at := max(cur, now)
		if p.next.CompareAndSwap(cur, at+int64(n)*p.interval) {
			time.Sleep(time.Duration(at - now))
			return
		}
	}
}
