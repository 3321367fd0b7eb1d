package fsm

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// The state machine's benchmarks (docs/performance.md, `make bench-fsm`):
//   - BenchmarkApply: PutStart+PutEnd commands applied one per entry and 64 per entry.
//   - BenchmarkSnapshot1M: at 1M objects (40-byte keys, one MEMORY replica), the time Snapshot()
//     holds the apply goroutine, Persist, Inspect and Restore times, and snapshot bytes per object.

const benchSeg = 0x5e

func benchSetup(tb testing.TB, f *FSM, segBytes uint64) {
	tb.Helper()
	data, err := EncodeEnvelope(&metadv1.Envelope{Seed: 1, Commands: []*metadv1.Command{
		{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
			Id: uuid(benchSeg, 1), Name: "bench", Base: 1 << 32, Size: segBytes, Endpoint: "127.0.0.1:7000",
			Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: genClients[0]}}}},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data})
}

func benchKey(i int) []byte { return []byte(fmt.Sprintf("tenant-object-key-%022d", i)) } // 40 bytes

// putLogs returns entries carrying a PutStart then a PutEnd for n keys, perEntry commands an entry.
func putLogs(tb testing.TB, first uint64, n, perEntry int) []*raft.Log {
	tb.Helper()
	cfg := &metadv1.ReplicaConfig{MemoryReplicas: 1}
	var cmds []*metadv1.Command
	for i := range n {
		k := benchKey(i)
		cmds = append(cmds,
			&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: genClients[0], Key: k, Size: 64, Config: cfg}}},
			&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: genClients[0], Key: k}}})
	}
	var logs []*raft.Log
	for i := 0; i < len(cmds); i += perEntry {
		data, err := EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: 1e18, Seed: uint64(i), Commands: cmds[i:min(i+perEntry, len(cmds))]})
		if err != nil {
			tb.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: first + uint64(len(logs)), Term: 1, Type: raft.LogCommand, Data: data})
	}
	return logs
}

func BenchmarkApply(b *testing.B) {
	for _, per := range []int{1, 64} {
		b.Run(fmt.Sprintf("commands-per-entry=%d", per), func(b *testing.B) {
			const n = 50_000 // objects per round; 2 commands each
			logs := putLogs(b, 2, n, per)
			b.ResetTimer()
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				f := newFSM(b)
				benchSetup(b, f, 64<<20)
				b.StartTimer()
				start := time.Now()
				f.ApplyBatch(logs)
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(2*n*b.N)/elapsed.Seconds(), "commands/s")
		})
	}
}

var snap1M struct {
	once sync.Once
	f    *FSM
}

func fsm1M(b *testing.B) *FSM {
	snap1M.once.Do(func() {
		f := newFSM(b)
		benchSetup(b, f, 128<<20)
		const n = 1_000_000
		logs := putLogs(b, 2, n, 256)
		for i := 0; i < len(logs); i += 64 {
			f.ApplyBatch(logs[i:min(i+64, len(logs))])
		}
		if got := f.Store().Tenants().Lookup("default").Directory().Objects(); got != n {
			b.Fatalf("%d objects, want %d", got, n)
		}
		snap1M.f = f
	})
	return snap1M.f
}

// BenchmarkSnapshot1M reports, for 1M objects, how long Snapshot() holds the apply goroutine, how
// long the capture's store digest, Persist and Restore take (both include a digest), each again
// with object records encoded or decoded through protobuf messages (the baselines of the hand
// encoder and decoder) and the ratios, Snapshot's share of Persist, and bytes per object.
func BenchmarkSnapshot1M(b *testing.B) {
	f := fsm1M(b)
	b.ResetTimer()
	var capT, digestT, persistT, persistProtoT, inspectT, restoreT, protoT time.Duration
	var size int
	for range b.N {
		start := time.Now()
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		capT += time.Since(start)
		start = time.Now()
		snap.(*fsmSnapshot).capture.Digest()
		digestT += time.Since(start)
		var sink memSink
		sink.Grow(128 << 20)
		start = time.Now()
		if err := snap.Persist(&sink); err != nil {
			b.Fatal(err)
		}
		persistT += time.Since(start)
		snap.Release()

		// The same Persist encoding object records through protobuf messages: the baseline of
		// wire.RecordEncoder.AppendRecord, in the same run.
		snap, err = f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		var protoSink memSink
		protoSink.Grow(128 << 20)
		protoObjects = true
		start = time.Now()
		err = snap.Persist(&protoSink)
		persistProtoT += time.Since(start)
		protoObjects = false
		snap.Release()
		if err != nil || !bytes.Equal(protoSink.Bytes(), sink.Bytes()) {
			b.Fatalf("the persist through proto: %v (same bytes: %v)", err, bytes.Equal(protoSink.Bytes(), sink.Bytes()))
		}
		size = sink.Len()
		start = time.Now()
		if _, err := snapshot.Inspect(bytes.NewReader(sink.Bytes())); err != nil {
			b.Fatal(err)
		}
		inspectT += time.Since(start)
		g := newFSM(b)
		start = time.Now()
		if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
			b.Fatal(err)
		}
		restoreT += time.Since(start)

		// The same restore decoding object records with proto messages: the baseline of the
		// hand decoder (wire.DecodeObjectRecord), in the same run.
		objectDecoder = nil
		g = newFSM(b)
		start = time.Now()
		err = g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes())))
		objectDecoder = decodeObject
		if err != nil {
			b.Fatal(err)
		}
		protoT += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(capT.Milliseconds())/n, "snapshot-ms")
	b.ReportMetric(float64(digestT.Milliseconds())/n, "digest-ms")
	b.ReportMetric(float64(persistT.Milliseconds())/n, "persist-ms")
	b.ReportMetric(float64(persistProtoT.Milliseconds())/n, "persist-proto-ms")
	b.ReportMetric(persistT.Seconds()/persistProtoT.Seconds(), "persist-vs-proto")
	b.ReportMetric(float64(inspectT.Milliseconds())/n, "inspect-ms")
	b.ReportMetric(float64(restoreT.Milliseconds())/n, "restore-ms")
	b.ReportMetric(float64(protoT.Milliseconds())/n, "restore-proto-ms")
	b.ReportMetric(restoreT.Seconds()/protoT.Seconds(), "restore-vs-proto")
	b.ReportMetric(100*capT.Seconds()/persistT.Seconds(), "snapshot-%-of-persist")
	b.ReportMetric(float64(size)/1e6, "bytes/object")
}
