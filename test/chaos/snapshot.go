package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// Snapshots in the model. A snapshot saved from the leader (SnapshotSave without allow_stale:
// taken after a barrier) is a linearizable read of every key at once, so it is recorded as one
// opSnapshot per partition whose input is what the file says about that partition's keys. A
// SnapshotRestore is a write of every key at once: one opRestore per partition, whose input is
// the restored file's view. The workload's client ids are mapped back from the writer UUIDs the
// file holds.

// writers maps client UUIDs to the model's client ids. Safe for concurrent use.
type writers struct {
	mu  sync.Mutex // guards ids
	ids map[client.UUID]int32
}

func newWriters() *writers { return &writers{ids: map[client.UUID]int32{}} }

func (w *writers) add(u client.UUID, id int32) {
	w.mu.Lock()
	w.ids[u] = id
	w.mu.Unlock()
}

// of returns the id of a writer UUID, -1 for one the drill did not create.
func (w *writers) of(b []byte) int32 {
	u, err := client.UUIDFromBytes(b)
	if err != nil {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.ids[u]; ok {
		return id
	}
	return -1
}

// snapState is what a snapshot file says: tenant -> key -> state (absent keys are missing).
type snapState map[string]map[string]keyState

// decodeSnapshot reads and verifies a snapshot file into the model's view.
func decodeSnapshot(data []byte, ws *writers) (snapState, *metadv1.SnapshotHeader, error) {
	r, err := snapshot.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	out := snapState{}
	tenant := ""
	var rec metadv1.Record
	for {
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			return out, r.Header(), nil
		}
		if err != nil {
			return nil, nil, err
		}
		switch x := rec.Record.(type) {
		case *metadv1.Record_Tenant:
			tenant = x.Tenant.GetName()
			if out[tenant] == nil {
				out[tenant] = map[string]keyState{}
			}
		case *metadv1.Record_Object:
			o := x.Object
			k := keyState{Kind: pending, Writer: ws.of(o.GetWriterClientId()), Size: o.GetSize()}
			for _, rp := range o.GetReplicas() {
				if rp.GetStatus() == metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
					k.Kind = present
					if rp.GetTier() != metadv1.Tier_TIER_LOCAL_DISK { // as a Get counts them (countReplicas)
						k.Replicas++
					}
				}
			}
			// The workload's copies and moves; an offload's or a promotion's pin is the tiers'
			// own (the model does not see it).
			if task := o.GetTask(); task != nil {
				switch task.GetKind() {
				case metadv1.TaskKind_TASK_KIND_COPY:
					k.Task, k.TaskBy = copyTask, ws.of(task.GetClientId())
				case metadv1.TaskKind_TASK_KIND_MOVE:
					k.Task, k.TaskBy = moveTask, ws.of(task.GetClientId())
				}
			}
			out[tenant][string(o.GetKey())] = k
		}
	}
}

// partitionOf returns what s says about partition p.
func (s snapState) partitionOf(p *partition) partState {
	var st partState
	for i, k := range p.Keys {
		st[i] = s[p.Tenant][k]
	}
	return st
}

// addSnapshotOps records one operation of kind per partition of ks for a snapshot call: the
// snapshot's view of the partition as input and res as its outcome.
func addSnapshotOps(hist *History, ks *keyspace, kind opKind, s snapState, res result, detail string, call, ret time.Duration) {
	var ops []*Op
	for _, p := range ks.partitions() {
		op := &Op{Client: snapshotClient, Part: p.ID, Call: call, Return: ret, Detail: detail,
			In: input{Kind: kind, Writer: snapshotClient, Snap: s.partitionOf(p), Label: p.label()}, Out: output{Res: res}}
		op.Open = res == resUnknown
		ops = append(ops, op)
	}
	hist.add(ops...)
}

// saveSnapshot saves a snapshot through the proxies with the client's retries (a read: retrying
// is harmless) and records it as a read of every key. It returns the file.
func saveSnapshot(ctx context.Context, cl *client.Client, hist *History, ks *keyspace, ws *writers) ([]byte, *metadv1.SnapshotHeader, error) {
	var buf bytes.Buffer
	call := hist.since()
	_, err := cl.SnapshotSave(ctx, &buf, false)
	ret := hist.since()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot save: %s", errText(err))
	}
	s, h, err := decodeSnapshot(buf.Bytes(), ws)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot save: the file does not verify: %w", err)
	}
	addSnapshotOps(hist, ks, opSnapshot, s, resOK, "", call, ret)
	return buf.Bytes(), h, nil
}

// restoreSnapshot restores data with one attempt on the leader's endpoint (no retries: two
// installs of one file are two writes), as root in a secure cluster, and records it as a write of
// every key.
func restoreSnapshot(ctx context.Context, c *Cluster, leaderEndpoint string, data []byte, hist *History, ks *keyspace, ws *writers) error {
	s, _, err := decodeSnapshot(data, ws)
	if err != nil {
		return err
	}
	cl, err := client.New(c.Root(client.Config{Endpoints: []string{leaderEndpoint}, MaxRetries: -1}))
	if err != nil {
		return err
	}
	defer cl.Close()
	call := hist.since()
	_, err = cl.SnapshotRestore(ctx, bytes.NewReader(data))
	ret := hist.since()
	cls, _ := classify(err)
	res := map[errClass]result{clsOK: resOK, clsReason: resReason, clsUnknown: resUnknown, clsNoop: resNoop}[cls]
	addSnapshotOps(hist, ks, opRestore, s, res, errText(err), call, ret)
	if err != nil {
		return fmt.Errorf("snapshot restore (%s): %s", res, errText(err))
	}
	return nil
}
