package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// linResult is the linearizability verdict of one partition.
type linResult struct {
	Part    *partition
	Result  porcupine.CheckResult
	Ops     int
	Class   string // for an Illegal partition: the known anomaly that explains it, "" if none does
	Visual  string // HTML file written for an Illegal partition
	Explain string // where the longest linearization gets stuck, and the history around it
	Elapsed time.Duration
}

// checkLinearizable checks every partition on its own (in parallel, each bounded by timeout)
// and returns the partitions that are not Ok. An Illegal partition is checked again with the
// relaxations of the known anomalies (tolGroupNotFound, then also tolDirtyAbsent) to name the
// anomaly that explains it, and porcupine's visualization of its strict check and an
// explanation are written into dir.
func checkLinearizable(ops []*Op, parts []*partition, timeout time.Duration, dir string) []linResult {
	by := map[int][]*Op{}
	for _, op := range ops {
		by[op.Part] = append(by[op.Part], op)
	}
	ids := make([]int, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	model := newModel(parts)
	var mu sync.Mutex
	var bad []linResult
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				start := time.Now()
				res, info := porcupine.CheckOperationsVerbose(model, porcupineOps(by[id]), timeout)
				if res == porcupine.Ok {
					continue
				}
				lr := linResult{Part: parts[id], Result: res, Ops: len(by[id])}
				if res == porcupine.Illegal {
					lr.Visual = filepath.Join(dir, fmt.Sprintf("linearizability-p%d-%s.html", id, safeName(parts[id].label())))
					if err := porcupine.VisualizePath(model, info, lr.Visual); err != nil {
						lr.Visual = "(visualization failed: " + err.Error() + ")"
					}
					var b strings.Builder
					b.WriteString("strict model:\n")
					b.WriteString(explain(info, by[id], parts[id]))
					// The narrower relaxation first: a partition it explains is named after it.
					for _, c := range []struct {
						tol  tolerance
						name string
					}{
						{tolGroupNotFound, tolNames[tolGroupNotFound]},
						{tolGroupNotFound | tolRestoreFenced, tolNames[tolRestoreFenced]},
						{tolGroupNotFound | tolRestoreFenced | tolDirtyAbsent, tolNames[tolDirtyAbsent]},
					} {
						wres, winfo := porcupine.CheckOperationsVerbose(model, weakened(by[id], parts[id], c.tol), timeout)
						if wres == porcupine.Ok {
							lr.Class = c.name
							fmt.Fprintf(&b, "\nexplained by the known anomaly %s (see doc.go): linearizable with its relaxation\n", c.name)
							break
						}
						fmt.Fprintf(&b, "\nwith the relaxation of %s too: %s\n", c.name, wres)
						if wres == porcupine.Illegal {
							b.WriteString(explain(winfo, by[id], parts[id]))
						}
					}
					lr.Explain = b.String()
					_ = os.WriteFile(strings.TrimSuffix(lr.Visual, ".html")+".txt", []byte(lr.Explain), 0o644)
				}
				lr.Elapsed = time.Since(start)
				mu.Lock()
				bad = append(bad, lr)
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	sort.Slice(bad, func(i, j int) bool { return bad[i].Part.ID < bad[j].Part.ID })
	return bad
}

// weakened converts one partition's ops for the checker with the relaxations tol applied to the
// operations that could show the anomalies: answers of absence (and RemoveGroup's
// OBJECT_NOT_FOUND) that overlap in time another removal attempt of the same key (any outcome: a
// prepared removal marks its keys until its proposal's outcome is known).
func weakened(ops []*Op, p *partition, tol tolerance) []porcupine.Operation {
	end := func(op *Op) time.Duration {
		if op.Open {
			return time.Duration(math.MaxInt64)
		}
		return op.Return
	}
	// removal attempts per member, and restores
	rem := make([][]*Op, len(p.Keys))
	var restores []*Op
	for _, op := range ops {
		switch op.In.Kind {
		case opRestore:
			restores = append(restores, op)
		case opRemove:
			rem[op.In.Member] = append(rem[op.In.Member], op)
		case opRemoveGroup:
			for m := range p.Keys {
				rem[m] = append(rem[m], op)
			}
		}
	}
	overlaps := func(op *Op, m int) bool {
		for _, r := range rem[m] {
			if r != op && r.Call <= end(op) && op.Call <= end(r) {
				return true
			}
		}
		return false
	}
	duringRestore := func(op *Op) bool {
		for _, r := range restores {
			if r.Call <= end(op) && op.Call <= end(r) {
				return true
			}
		}
		return false
	}
	out := porcupineOps(ops)
	for i, op := range ops {
		var w tolerance
		if tol&tolRestoreFenced != 0 && (op.In.Kind == opRemove || op.In.Kind == opRemoveGroup) &&
			op.Out.Reason == rNotFound && duringRestore(op) {
			w |= tolRestoreFenced
		}
		switch {
		case op.In.Kind == opRemoveGroup && op.Out.Reason == rNotFound && tol&tolGroupNotFound != 0:
			for m := range p.Keys {
				if overlaps(op, m) {
					w |= tolGroupNotFound
				}
			}
		case tol&tolDirtyAbsent == 0:
		case op.In.Kind == opGet && op.Out.Reason == rNotFound,
			op.In.Kind == opExist && op.Out.Res == resOK && !op.Out.Exists,
			op.In.Kind == opRemove && op.Out.Reason == rNotFound:
			if overlaps(op, op.In.Member) {
				w |= tolDirtyAbsent
			}
		}
		if w != 0 {
			in := op.In
			in.Weak = w
			out[i].Input = in
		}
	}
	return out
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == 0 {
			return '_'
		}
		return r
	}, s)
}

// finalState is what the final linearizable read of a key found.
type finalState struct {
	Kind keyKind
	Size uint64
}

// lostWrites lists the acknowledged writes (PutEnd ok, probe Put ok) missing from the final read
// with nothing to explain it: no removal of the key (Remove, a batch item, RemoveGroup of its
// group, a SnapshotRestore) that succeeded or whose outcome is unknown and that could be ordered
// after the write.
func lostWrites(ops []*Op, parts []*partition, final map[keyRef]finalState) []string {
	type removal struct {
		ret  time.Duration
		open bool
	}
	removals := map[keyRef][]removal{}
	for _, op := range ops {
		if op.Out.Res == resReason || op.Out.Res == resNoop {
			continue
		}
		switch op.In.Kind {
		case opRemove:
			ref := keyRef{op.Part, op.In.Member}
			removals[ref] = append(removals[ref], removal{op.Return, op.Open})
		case opRemoveGroup, opRestore: // a restore puts back what the file has
			for m := range parts[op.Part].Keys {
				ref := keyRef{op.Part, m}
				removals[ref] = append(removals[ref], removal{op.Return, op.Open})
			}
		}
	}
	// sizes put by PutStart, per client and key: PutEnd completes the last one.
	var lost []string
	lastStart := map[string]uint64{}
	for _, op := range ops {
		ref := keyRef{op.Part, op.In.Member}
		var size uint64
		switch {
		case op.In.Kind == opPutStart && op.Out.Res == resOK:
			lastStart[fmt.Sprint(op.Client, ref)] = op.In.Size
			continue
		case op.In.Kind == opPutEnd && op.Out.Res == resOK:
			size = lastStart[fmt.Sprint(op.Client, ref)]
		case op.In.Kind == opClientPut && op.Out.Res == resOK:
			size = op.In.Size
		default:
			continue
		}
		fs, read := final[ref]
		if !read || (fs.Kind == present && fs.Size == size) {
			continue
		}
		explained := false
		for _, r := range removals[ref] {
			if r.open || r.ret >= op.Call {
				explained = true
				break
			}
		}
		if !explained {
			lost = append(lost, fmt.Sprintf("%s/%s: %s by c%d acknowledged at %.3fs (size %d); final read: %s",
				parts[op.Part].Tenant, parts[op.Part].Keys[op.In.Member], op.In.Kind, op.Client, op.Return.Seconds(), size, fs.describe()))
		}
	}
	return lost
}

// absentWhileWritten lists the reads that answered a key absent while it certainly existed: a
// Get or Remove answering OBJECT_NOT_FOUND that started after a PutStart of the key was answered
// OK and returned before that writer's next call on the key, a PutEnd, was answered OK. From the
// PutStart's answer on the write exists (in progress, then COMPLETE) unless something removes
// it, and the PutEnd's OK proves no leader change lost it: only a removal or a restore that
// overlaps the read, or may still commit, explains the absence. This is the check the model
// cannot make on its own, since it lets any read assume that a reservation was lost.
func absentWhileWritten(ops []*Op, parts []*partition) []string {
	type window struct{ from, to time.Duration } // PutStart returned .. PutEnd returned
	type span struct {
		call, ret time.Duration
		open      bool
	}
	windows := map[keyRef][]window{}
	removals := map[keyRef][]span{}
	started := map[string]time.Duration{} // client and key -> its PutStart's return, until its next call
	for _, op := range ops {              // by call time
		ref := keyRef{op.Part, op.In.Member}
		switch op.In.Kind {
		case opRemove:
			if op.Out.Res != resReason && op.Out.Res != resNoop {
				removals[ref] = append(removals[ref], span{op.Call, op.Return, op.Open})
			}
		case opRemoveGroup, opRestore:
			if op.Out.Res != resReason && op.Out.Res != resNoop {
				for m := range parts[op.Part].Keys {
					r := keyRef{op.Part, m}
					removals[r] = append(removals[r], span{op.Call, op.Return, op.Open})
				}
			}
		}
		id := fmt.Sprint(op.Client, ref)
		switch op.In.Kind {
		case opPutStart:
			delete(started, id)
			if op.Out.Res == resOK {
				started[id] = op.Return
			}
		case opPutEnd, opPutRevoke:
			if from, ok := started[id]; ok && op.In.Kind == opPutEnd && op.Out.Res == resOK {
				windows[ref] = append(windows[ref], window{from, op.Return})
			}
			delete(started, id)
		}
	}
	var out []string
	for _, op := range ops {
		if (op.In.Kind != opGet && op.In.Kind != opRemove) || op.Out.Res != resReason || op.Out.Reason != rNotFound {
			continue
		}
		ref := keyRef{op.Part, op.In.Member}
		for _, w := range windows[ref] {
			if op.Call <= w.from || op.Return >= w.to {
				continue
			}
			explained := false
			for _, r := range removals[ref] {
				if r.call < op.Return && (r.open || r.ret > w.from) {
					explained = true
					break
				}
			}
			if !explained {
				out = append(out, fmt.Sprintf("%s/%s: %s by c%d [%.3fs .. %.3fs] answered OBJECT_NOT_FOUND while a write of it existed (PutStart ok at %.3fs, PutEnd ok at %.3fs)",
					parts[op.Part].Tenant, parts[op.Part].Keys[op.In.Member], op.In.Kind, op.Client, op.Call.Seconds(), op.Return.Seconds(),
					w.from.Seconds(), w.to.Seconds()))
				break
			}
		}
	}
	return out
}

func (f finalState) describe() string {
	if f.Kind == present {
		return fmt.Sprintf("present, size %d", f.Size)
	}
	return f.Kind.String()
}

// nodeDigest is one node's state as seen by stale reads of everything the drill knows about.
type nodeDigest struct {
	Node     string
	Applied  uint64
	Text     string // canonical text
	Sum      string // sha256 of Text
	Snapshot string // sha256 of a snapshot saved from the node, "" when not served
	Err      error
}

// digestNode reads node n's own state (stale reads through its private port) into canonical text.
func digestNode(ctx context.Context, n *Node, cl *client.Client, ks *keyspace, withSnapshot bool) nodeDigest {
	d := nodeDigest{Node: n.Name}
	var b strings.Builder
	st, err := cl.Status(ctx, n.ClientListen)
	if err != nil {
		d.Err = fmt.Errorf("status: %w", err)
		return d
	}
	d.Applied = st.GetAppliedIndex()
	fmt.Fprintf(&b, "objects %d tenants %d segments %d\n", st.GetObjects(), st.GetTenants(), st.GetSegments())
	tenants, err := cl.ListTenants(ctx, client.Stale())
	if err != nil {
		d.Err = fmt.Errorf("tenants: %w", err)
		return d
	}
	for _, t := range tenants {
		fmt.Fprintf(&b, "tenant %s instance %d quota %d/%d charged %d objects %d groups %d state %s\n", t.GetName(),
			t.GetInstanceId(), t.GetRequestedQuotaBytes(), t.GetEffectiveQuotaBytes(), t.GetChargedBytes(),
			t.GetObjects(), t.GetGroups(), t.GetState())
	}
	segs, err := cl.ListSegments(ctx, client.SegmentFilter{}, client.Stale())
	if err != nil {
		d.Err = fmt.Errorf("segments: %w", err)
		return d
	}
	for _, s := range segs {
		fmt.Fprintf(&b, "segment %s used %d replicas %d size %d\n", client.FormatID(s.GetSegment().GetId()),
			s.GetUsedBytes(), s.GetReplicas(), s.GetSegment().GetSize())
	}
	for _, t := range ks.Tenants {
		keys, _ := ks.tenantKeys(t)
		resp, err := cl.BatchGet(ctx, t, keys, client.Stale())
		if err != nil {
			d.Err = fmt.Errorf("batch get %s: %w", t, err)
			return d
		}
		for i, r := range resp.GetResults() {
			fmt.Fprintf(&b, "key %s/%s %s", t, keys[i], client.ReasonName(r.GetStatus().GetReason()))
			if r.GetStatus().GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
				fmt.Fprintf(&b, " size %d type %d", r.GetSize(), r.GetDataType())
				for _, rp := range r.GetReplicas() {
					fmt.Fprintf(&b, " [%d %s %s+%d %d %s]", rp.GetReplicaId(), rp.GetTier(), client.FormatID(rp.GetSegmentId()),
						rp.GetOffset(), rp.GetSize(), rp.GetStatus())
				}
			}
			b.WriteByte('\n')
		}
		for _, g := range ks.Groups[t] {
			members, err := cl.ListGroup(ctx, t, g, client.Stale())
			fmt.Fprintf(&b, "group %s/%s %v %s\n", t, g, members, client.ReasonName(client.ReasonOf(err)))
		}
	}
	d.Text = b.String()
	sum := sha256.Sum256([]byte(d.Text))
	d.Sum = hex.EncodeToString(sum[:])
	if withSnapshot {
		var buf bytes.Buffer
		if _, err := cl.SnapshotSave(ctx, &buf, true); err == nil {
			s := sha256.Sum256(buf.Bytes())
			d.Snapshot = hex.EncodeToString(s[:])
		}
	}
	return d
}

// snapshotServed reports whether the node serves SnapshotSave (the API may not have it yet).
func snapshotServed(ctx context.Context, n *Node, cl *client.Client) (bool, string) {
	var buf bytes.Buffer
	_, err := cl.SnapshotSave(ctx, &buf, true)
	if err == nil {
		return true, ""
	}
	if status.Code(err) == codes.Unimplemented {
		return false, "SnapshotSave is not served (Unimplemented)"
	}
	return false, "SnapshotSave failed: " + errText(err)
}

// converge waits until every node has applied the same index at least min, the index holds
// across the digests, and returns the digests. It retries (bounded by ctx) while the index moves.
func converge(ctx context.Context, c *Cluster, cls []*client.Client, ks *keyspace, minIndex uint64, withSnapshot bool) ([]nodeDigest, error) {
	for {
		applied := make([]uint64, len(c.Nodes))
		same := true
		for i, n := range c.Nodes {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := cls[i].Status(sctx, n.ClientListen)
			cancel()
			if err != nil {
				same = false
				continue
			}
			applied[i] = st.GetAppliedIndex()
			if applied[i] < minIndex || applied[i] != applied[0] {
				same = false
			}
		}
		if same {
			ds := make([]nodeDigest, len(c.Nodes))
			stable := true
			for i, n := range c.Nodes {
				dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				ds[i] = digestNode(dctx, n, cls[i], ks, withSnapshot)
				cancel()
				if ds[i].Err != nil || ds[i].Applied != applied[0] {
					stable = false
				}
			}
			// The index must not have moved while the digests were read.
			for i, n := range c.Nodes {
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				st, err := cls[i].Status(sctx, n.ClientListen)
				cancel()
				if err != nil || st.GetAppliedIndex() != applied[0] {
					stable = false
				}
			}
			if stable {
				return ds, nil
			}
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("nodes did not converge on one applied index >= %d (last %v): %w", minIndex, applied, ctx.Err())
		case <-t.C:
		}
	}
}

// differing counts the nodes whose digest differs from the majority's (from node 0's when there
// is no majority).
func differing(ds []nodeDigest) (int, string) {
	count := map[string]int{}
	for _, d := range ds {
		count[d.Sum+d.Snapshot]++
	}
	ref, best := ds[0].Sum+ds[0].Snapshot, 0
	for s, n := range count {
		if n > best {
			ref, best = s, n
		}
	}
	return len(ds) - count[ref], ref
}

// explain says where an illegal partition's longest partial linearization gets stuck: the
// states the model can be in after it, the first operation (by return) that could not be placed,
// and the partition's history around that operation.
func explain(info porcupine.LinearizationInfo, ops []*Op, p *partition) string {
	var b strings.Builder
	var longest []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	done := map[*Op]bool{}
	states := []partState{{}}
	for _, lop := range longest {
		op := lop.Metadata.(*Op)
		done[op] = true
		var next []partState
		for _, st := range states {
			for _, n := range step(st, lop.Input.(input), op.Out, maxMembers) {
				if !slices.Contains(next, n) {
					next = append(next, n)
				}
			}
		}
		states = next
	}
	var stuck *Op
	for _, op := range ops {
		if done[op] || op.Open {
			continue
		}
		if stuck == nil || op.Return < stuck.Return {
			stuck = op
		}
	}
	fmt.Fprintf(&b, "partition p%d %s (keys %v): %d of %d operations linearized at most\n", p.ID, p.label(), p.Keys, len(longest), len(ops))
	fmt.Fprintf(&b, "model states after the longest linearization:\n")
	for _, st := range states {
		fmt.Fprintf(&b, "  %v\n", describeState(st, len(p.Keys)))
	}
	if stuck == nil {
		b.WriteString("no completed operation is left out (an unknown one is)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "first operation that cannot be placed (by return time):\n  %s\n", describeOp(stuck, p))
	fmt.Fprintf(&b, "\nhistory of the partition from 2 s before it to 0.5 s after (+ = unknown, may take effect any time later; * = linearized):\n")
	for _, op := range ops {
		if op.Return < stuck.Call-2*time.Second && !op.Open || op.Call > stuck.Return+500*time.Millisecond {
			continue
		}
		if op.Open && op.Call < stuck.Call-10*time.Second {
			continue
		}
		mark := " "
		if done[op] {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, describeOp(op, p))
	}
	return b.String()
}

func describeState(st partState, n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, st[i].String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeOp(op *Op, p *partition) string {
	ret := fmt.Sprintf("%.3f", op.Return.Seconds())
	if op.Open {
		ret += "+"
	}
	key := p.Keys[op.In.Member]
	if op.In.Kind == opRemoveGroup || op.In.Kind == opListGroup {
		key = p.Group
	}
	if op.In.Kind == opSnapshot || op.In.Kind == opRestore {
		key = describeState(op.In.Snap, len(p.Keys))
	}
	s := fmt.Sprintf("%8.3f %9s c%-4d %-11s %-10s", op.Call.Seconds(), ret, op.Client, op.In.Kind, key)
	if op.In.Kind == opPutStart || op.In.Kind == opClientPut {
		s += fmt.Sprintf(" size %d", op.In.Size)
	}
	if op.In.Force {
		s += " force"
	}
	s += " -> " + op.Out.String()
	switch {
	case op.Out.Res != resOK:
	case op.In.Kind == opGet:
		s += fmt.Sprintf(" size %d replicas %d", op.Out.Size, op.Out.Replicas)
	case op.In.Kind == opExist:
		s += fmt.Sprintf(" %v", op.Out.Exists)
	case op.In.Kind == opRemoveGroup:
		s += fmt.Sprintf(" %d removed", op.Out.Count)
	case op.In.Kind == opListGroup:
		s += fmt.Sprintf(" members %04b", op.Out.Listed)
	}
	if op.Detail != "" {
		s += "  # " + op.Detail
	}
	return s
}
