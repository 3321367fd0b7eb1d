package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"metad/client"
)

// probeTenant holds the probe's keys.
const probeTenant = "default"

// probeWrite is one probe put. A plain value.
type probeWrite struct {
	Call, Return time.Duration
	OK           bool
}

// probe writes a fresh key with client.Put (the Go client with its own retries, as an
// application uses it) every interval, open loop: a new write starts on schedule even while
// earlier ones hang, so "the first write called after a fault" is at most interval after it.
// Each key is written once, so its Put is checked too (opClientPut) and must survive to the end.
// Start, then Stop.
type probe struct {
	cl       *client.Client
	ks       *keyspace
	hist     *History
	limit    time.Duration // one Put's deadline
	interval time.Duration

	stop chan struct{}
	done chan struct{}
	wg   sync.WaitGroup // the writes in flight

	mu     sync.Mutex // guards writes
	writes []probeWrite
}

func newProbe(cl *client.Client, ks *keyspace, hist *History, limit, interval time.Duration) *probe {
	return &probe{cl: cl, ks: ks, hist: hist, limit: limit, interval: interval,
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (p *probe) Start() { go p.loop() }

// Stop ends the schedule and waits for the writes in flight (each bounded by limit).
func (p *probe) Stop() {
	close(p.stop)
	<-p.done
	p.wg.Wait()
}

func (p *probe) loop() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for i := 0; ; i++ {
		p.wg.Add(1)
		go p.write(i)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

func (p *probe) write(i int) {
	defer p.wg.Done()
	key := fmt.Sprintf("probe-%05d", i)
	ref := p.ks.addProbe(probeTenant, key)
	size := uint64(64 + i%4096)
	ctx, cancel := context.WithTimeout(context.Background(), p.limit)
	call := p.hist.since()
	_, err := p.cl.Put(ctx, probeTenant, key, size, nil)
	ret := p.hist.since()
	cancel()
	op := &Op{Client: probeClient, Part: ref.Part, Call: call, Return: ret,
		In: input{Kind: opClientPut, Writer: probeClient, Size: size, Label: probeTenant + "/" + key}}
	if err != nil {
		op.Out.Res, op.Open, op.Detail = resUnknown, true, errText(err)
	}
	p.hist.add(op)
	p.mu.Lock()
	p.writes = append(p.writes, probeWrite{Call: call, Return: ret, OK: err == nil})
	p.mu.Unlock()
}

// Writes returns the probe's writes in call order.
func (p *probe) Writes() []probeWrite {
	p.mu.Lock()
	out := append([]probeWrite(nil), p.writes...)
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// unavailability fills each fault's Unavail: from its injection to the return of the first
// successful probe write called at or after it (-1 if none before the next fault's injection, or
// the end).
func unavailability(faults []*Fault, writes []probeWrite) {
	for i, f := range faults {
		f.Unavail = -1
		if f.At == 0 && f.Target == "" {
			continue // never injected
		}
		limit := time.Duration(1<<63 - 1)
		if i+1 < len(faults) && faults[i+1].At > 0 {
			limit = faults[i+1].At
		}
		for _, w := range writes {
			if w.OK && w.Call >= f.At && w.Call < limit {
				f.Unavail = w.Return - f.At
				break
			}
		}
	}
}
