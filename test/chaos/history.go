package chaos

import (
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded operation on one key (a batch call is recorded as one Op per item, all with
// the batch's call and return times). A plain value once recorded.
type Op struct {
	Client int // workload client (probe and final reader have their own ids)
	Part   int // partition id
	In     input
	Out    output
	Call   time.Duration // since the drill's start
	Return time.Duration // since the drill's start; Unknown ops: when the answer came, see Open
	// Open marks an operation whose outcome is unknown: porcupine sees it return at the end of
	// time, since its command may commit at any later moment.
	Open bool
	// Detail is the error text of an unknown or failed call, for the report.
	Detail string
}

// History is safe for concurrent use: every workload goroutine appends to it.
type History struct {
	start time.Time
	tiers bool // a tiers drill: every operation is marked input.Tiers

	mu  sync.Mutex // guards ops
	ops []*Op
}

func newHistory(start time.Time) *History { return &History{start: start} }

// since is the drill clock: time since start, from the monotonic clock.
func (h *History) since() time.Duration { return time.Since(h.start) }

// add records ops.
func (h *History) add(ops ...*Op) {
	if h.tiers {
		for _, op := range ops {
			op.In.Tiers = true
		}
	}
	h.mu.Lock()
	h.ops = append(h.ops, ops...)
	h.mu.Unlock()
}

// Ops returns a copy of the recorded operations sorted by call time.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	out := append([]*Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// porcupineOps converts ops for the checker. Unknown operations return at math.MaxInt64.
func porcupineOps(ops []*Op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := int64(op.Return)
		if op.Open {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op.In, Output: op.Out,
			Call: int64(op.Call), Return: ret, Metadata: op})
	}
	return out
}

// writeHistory writes one line per operation, in call order.
func writeHistory(w io.Writer, ops []*Op, parts []*partition) error {
	for _, op := range ops {
		ret := fmt.Sprintf("%.3f", op.Return.Seconds())
		if op.Open {
			ret += "+"
		}
		line := fmt.Sprintf("%9.3f %9s c%-3d p%-4d %-11s %-28s m%d size=%-7d force=%-5v -> %s",
			op.Call.Seconds(), ret, op.Client, op.Part, op.In.Kind, parts[op.Part].label(), op.In.Member,
			op.In.Size, op.In.Force, op.Out)
		switch {
		case op.Out.Res != resOK:
		case op.In.Kind == opGet:
			line += fmt.Sprintf(" size=%d replicas=%d", op.Out.Size, op.Out.Replicas)
		case op.In.Kind == opExist:
			line += fmt.Sprintf(" exists=%v", op.Out.Exists)
		case op.In.Kind == opRemoveGroup:
			line += fmt.Sprintf(" removed=%d", op.Out.Count)
		case op.In.Kind == opListGroup:
			line += fmt.Sprintf(" listed=%04b", op.Out.Listed)
		}
		if op.Detail != "" {
			line += "  # " + op.Detail
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
