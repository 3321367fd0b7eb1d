package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// sample is one node's answer to one Status poll. A plain value.
type sample struct {
	At      time.Duration
	Node    int
	Up      bool // answered
	Leader  bool // says it leads
	Term    uint64
	Named   string // the leader it names
	Applied uint64
}

// monitor polls every node's Status through its private port every interval and keeps the
// answers: who led in which term, and when. Start, then Stop.
type monitor struct {
	c        *Cluster
	cls      []*client.Client
	hist     *History
	interval time.Duration

	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the loop returns

	mu      sync.Mutex // guards samples
	samples []sample
}

func newMonitor(c *Cluster, cls []*client.Client, hist *History, interval time.Duration) *monitor {
	return &monitor{c: c, cls: cls, hist: hist, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
}

func (m *monitor) Start() { go m.loop() }

func (m *monitor) Stop() {
	close(m.stop)
	<-m.done
}

func (m *monitor) loop() {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		m.poll()
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

// poll asks every node once, concurrently.
func (m *monitor) poll() {
	out := make([]sample, len(m.c.Nodes))
	var wg sync.WaitGroup
	for i, n := range m.c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			at := m.hist.since()
			st, err := m.cls[i].Status(ctx, n.ClientListen)
			s := sample{At: at, Node: i}
			if err == nil {
				s.Up, s.Leader, s.Term = true, st.GetRole() == metadv1.NodeRole_NODE_ROLE_LEADER, st.GetTerm()
				s.Named, s.Applied = st.GetLeaderName(), st.GetAppliedIndex()
			}
			out[i] = s
		}()
	}
	wg.Wait()
	m.mu.Lock()
	m.samples = append(m.samples, out...)
	m.mu.Unlock()
}

// Samples returns the samples so far, in time order.
func (m *monitor) Samples() []sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]sample(nil), m.samples...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// leaderClaims maps each term to the nodes that said they led in it.
func leaderClaims(ss []sample) map[uint64][]int {
	out := map[uint64][]int{}
	for _, s := range ss {
		if !s.Leader {
			continue
		}
		found := false
		for _, n := range out[s.Term] {
			found = found || n == s.Node
		}
		if !found {
			out[s.Term] = append(out[s.Term], s.Node)
		}
	}
	return out
}

// twoLeaderTerms lists the terms in which more than one node said it led.
func twoLeaderTerms(ss []sample, names func(int) string) []string {
	var out []string
	claims := leaderClaims(ss)
	var terms []uint64
	for t := range claims {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	for _, t := range terms {
		if ns := claims[t]; len(ns) > 1 {
			var s []string
			for _, n := range ns {
				s = append(s, names(n))
			}
			out = append(out, fmt.Sprintf("term %d: %v", t, s))
		}
	}
	return out
}

// span is a stretch of time during which node led (-1: no leader seen).
type span struct {
	From, To time.Duration
	Node     int
	Term     uint64
}

// leaderSpans turns the samples into who led when: at each poll, the node that says it leads in
// the highest term.
func leaderSpans(ss []sample, end time.Duration) []span {
	var out []span
	for i := 0; i < len(ss); {
		j := i
		at := ss[i].At
		leader, term := -1, uint64(0)
		// One poll's samples are within the poll's 250 ms timeout of each other.
		for j < len(ss) && ss[j].At-at < 50*time.Millisecond {
			if ss[j].Leader && ss[j].Term >= term {
				leader, term = ss[j].Node, ss[j].Term
			}
			j++
		}
		if n := len(out); n > 0 && out[n-1].Node == leader && out[n-1].Term == term {
			out[n-1].To = at
		} else {
			if n > 0 {
				out[n-1].To = at
			}
			out = append(out, span{From: at, To: at, Node: leader, Term: term})
		}
		i = j
	}
	if n := len(out); n > 0 {
		out[n-1].To = end
	}
	return out
}
