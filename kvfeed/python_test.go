package kvfeed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/store/alloc"
	"metad/watch"
)

// pythonWithZMQ returns a python3 that imports zmq and msgpack (Debian's python3-zmq and
// python3-msgpack), or skips the test.
func pythonWithZMQ(t *testing.T) string {
	t.Helper()
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	if p, err := exec.LookPath("/usr/bin/python3"); err == nil && !slices.Contains(cands, p) {
		cands = append(cands, p)
	}
	for _, py := range cands {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := exec.CommandContext(ctx, py, "-c", "import zmq, msgpack").Run()
		cancel()
		if err == nil {
			return py
		}
	}
	t.Skipf("no python3 with the zmq and msgpack modules (tried %v): apt-get install python3-zmq python3-msgpack", cands)
	return ""
}

// pyMessage is a line of testdata/subscriber.py.
type pyMessage struct {
	Error  string              `json:"error"`
	Seq    uint64              `json:"seq"`
	Gap    bool                `json:"gap"`
	Events [][]json.RawMessage `json:"events"`
}

// TestPythonSubscriber: a Python subscriber (pyzmq and msgpack, as a router decodes the old
// master's feed) reads the feed: three frames, the envelope, payloads that pack back to the same
// bytes, the hashes of a hex key (unsigned and signed), groups, and a gap after lost events.
func TestPythonSubscriber(t *testing.T) {
	py := pythonWithZMQ(t)
	w := watch.NewWindow(watch.Limits{Events: 8, Bytes: 1 << 20}, 0)
	p := newPublisher(t, w, nil)
	reg := prometheus.NewRegistry()
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/subscriber.py", "tcp://"+p.Addr().String(), "end", "30")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan pyMessage, 1024) // sent by the reader below, closed at the script's end
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m pyMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m.Error = fmt.Sprintf("bad line %q: %v", sc.Text(), err)
			}
			lines <- m
		}
	}()
	next := func(d time.Duration) (pyMessage, bool) {
		t.Helper()
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the subscriber ended: %s", stderr.String())
			}
			if m.Error != "" {
				t.Fatalf("the subscriber: %s", m.Error)
			}
			return m, true
		case <-time.After(d):
			return pyMessage{}, false
		}
	}
	// until reads lines until one holds an event of key, within 20 s, and returns their events
	// (probes left out) and whether any of them came after a gap.
	until := func(key string) (evs [][]json.RawMessage, gap bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			m, ok := next(time.Until(deadline))
			if !ok {
				break
			}
			gap = gap || m.Gap
			found := false
			for _, e := range m.Events {
				if !strings.HasPrefix(string(e[2]), `"probe-`) {
					evs = append(evs, e)
				}
				found = found || string(e[2]) == `"`+key+`"`
			}
			if found {
				return evs, gap
			}
		}
		t.Fatalf("no event of %s within 20 s: %s", key, stderr.String())
		return nil, false
	}
	idx := uint64(0)
	appendOne := func(e watch.Event) {
		idx++
		e.Rev = watch.Rev{Index: idx}
		w.Append(idx, []watch.Event{e})
	}
	// The slow joiner: probe until the script has a message, within 20 s.
	joined := false
	for deadline := time.Now().Add(20 * time.Second); !joined && time.Now().Before(deadline); {
		appendOne(storedEvent(watch.Rev{}, fmt.Sprintf("probe-%d", idx), alloc.TierMemory))
		_, joined = next(50 * time.Millisecond)
	}
	if !joined {
		t.Fatalf("the subscriber got nothing within 20 s: %s", stderr.String())
	}

	hashed := storedEvent(watch.Rev{}, "0xd2a8c3f1e4b50617", alloc.TierMemory)
	appendOne(hashed)
	grouped := storedEvent(watch.Rev{}, "sglang_0_k", alloc.TierNOF)
	grouped.Change.Group, grouped.Change.Tenant = "sglang-hicache:e3b0", "tenant-a"
	appendOne(grouped)
	evs, gap := until("sglang_0_k")
	var got []string
	for _, e := range evs {
		got = append(got, joinRaw(e[:7]))
	}
	want := []string{
		`"stored" "default" "0xd2a8c3f1e4b50617" "cpu" null [15179597987743860247] [-3267146085965691369]`,
		`"stored" "tenant-a" "sglang_0_k" "disk" "sglang-hicache:e3b0" [] []`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || gap {
		t.Fatalf("events (gap %v)\n%s\nwant\n%s", gap, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// 20 events in one entry: the cursor falls out of the window of 8, and the script sees a gap.
	idx++
	var burst []watch.Event
	for i := range 20 {
		burst = append(burst, storedEvent(watch.Rev{Index: idx, Pos: uint32(i)}, fmt.Sprintf("lost-%d", i), alloc.TierMemory))
	}
	w.Append(idx, burst)
	waitGaps(t, reg, 1)
	appendOne(storedEvent(watch.Rev{}, "end", alloc.TierMemory))
	evs, gap = until("end")
	if !gap {
		t.Fatal("no gap seen after lost events")
	}
	for _, e := range evs {
		if strings.Contains(string(e[2]), "lost-") {
			t.Fatalf("a lost event was published: %s", e[2])
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("subscriber: %v: %s", err, stderr.String())
	}
}

// joinRaw is the JSON values joined by spaces.
func joinRaw(vs []json.RawMessage) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, string(v))
	}
	return strings.Join(parts, " ")
}

// lockedBuffer is a bytes.Buffer safe for concurrent use (a command's stderr read while it runs).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
