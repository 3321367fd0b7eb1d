package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"text/tabwriter"

	"metad/client"
	"metad/proto/metadv1"
)

func TestPrinterTableAndJSON(t *testing.T) {
	seg := client.NewUUID()
	reps := replicaViews([]*metadv1.Replica{
		{ReplicaId: 3, Tier: metadv1.Tier_TIER_MEMORY, SegmentId: seg.Bytes(), SegmentEndpoint: "w1:7000", BaseAddress: 0x1000,
			Offset: 128, Size: 5000, Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE},
		{ReplicaId: 4, Tier: metadv1.Tier_TIER_NOF, SegmentId: []byte{1, 2}, Size: 1 << 20, Status: metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING},
		{ReplicaId: 5, Tier: metadv1.Tier_TIER_LOCAL_DISK, SegmentId: []byte{3}, SegmentEndpoint: "w2:9000", Size: 64,
			Status: metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE, OwnerClientId: []byte{4}},
	})
	var tbl bytes.Buffer
	p := &printer{w: &tbl}
	if err := p.emit(reps, func(tw *tabwriter.Writer) { replicaTable(tw, reps) }); err != nil {
		t.Fatal(err)
	}
	want := "REPLICA  TIER        SEGMENT                               ENDPOINT  BASE    OFFSET  SIZE     STATUS      OWNER\n" +
		"3        MEMORY      " + seg.String() + "  w1:7000   0x1000  128     4.8 KiB  COMPLETE    -\n" +
		"4        NOF         0102                                  -         0x0     0       1 MiB    PROCESSING  -\n" +
		"5        LOCAL_DISK  03                                    w2:9000   0x0     0       64 B     COMPLETE    04\n"
	if tbl.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", tbl.String(), want)
	}

	var js bytes.Buffer
	p = &printer{w: &js, json: true}
	if err := p.emit(reps, func(*tabwriter.Writer) { t.Fatal("table called for JSON output") }); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[0]["segment_id"] != seg.String() || back[0]["size"] != float64(5000) || back[1]["status"] != "PROCESSING" ||
		back[0]["base_address"] != float64(0x1000) || back[0]["owner_client_id"] != nil || back[2]["owner_client_id"] != "04" {
		t.Fatalf("json: %s", js.String())
	}
}

func TestSmallFormatters(t *testing.T) {
	if plural(1, "replica") != "1 replica" || plural(0, "object") != "0 objects" || plural(2, "group") != "2 groups" {
		t.Error("plural")
	}
	if quotaText(0) != "unlimited" || quotaText(1<<30) != "1 GiB" {
		t.Error("quotaText")
	}
	if msText(10000) != "10s" || msText(1500) != "1.5s" {
		t.Error("msText")
	}
	if roleName(metadv1.NodeRole_NODE_ROLE_LEADER) != "leader" || roleName(0) != "unknown" {
		t.Error("roleName")
	}
	if orDash("") != "-" || orDash("x") != "x" {
		t.Error("orDash")
	}
}

func TestBenchTable(t *testing.T) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	benchTable(tw, &benchResult{Op: "get", Clients: 64, Conns: 8, Batch: 16, Size: 4096, DurationS: 10, Ops: 1000, OpsPerSec: 100,
		Items: 16000, ItemsPerSec: 1600, Gets: 15990, GetsPerSec: 1599, P50Ms: 1, P99Ms: 2.5, P999Ms: 9, MaxMs: 12, Errors: 10,
		ErrorReasons: map[string]uint64{"OBJECT_NOT_FOUND": 7, "DEADLINE_EXCEEDED": 3}}, nil)
	tw.Flush()
	out := b.String()
	for _, want := range []string{
		"op        get (batch 16, size 4 KiB)",
		"clients   64 on 8 connections",
		"ops       1000 (100 ops/s)",
		"items     16000 (1600 items/s)",
		"gets      15990 (1599 keys/s)",
		"latency   p50 1.000ms  p99 2.500ms  p999 9.000ms  max 12.000ms",
		"errors    10 (DEADLINE_EXCEEDED 3, OBJECT_NOT_FOUND 7)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bench table lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulatedBaseAndMissingSegments(t *testing.T) {
	for range 100 {
		b := simulatedBase(4 << 30)
		if b == 0 || b%64 != 0 || b < 1<<40 || b+4<<30 > 1<<46 {
			t.Fatalf("simulatedBase = %#x", b)
		}
	}
	if simulatedBase(1<<62) != 1<<40 {
		t.Fatal("simulatedBase of a huge span")
	}
	if align64(1) != 64 || align64(64) != 64 || align64(65) != 128 {
		t.Fatal("align64")
	}
	a, b := client.NewUUID(), client.NewUUID()
	segs := []*metadv1.SegmentDesc{{Id: a.Bytes()}, {Id: b.Bytes()}}
	if m := missingSegments(segs, [][]byte{b.Bytes()}); len(m) != 1 || !bytes.Equal(m[0].GetId(), a[:]) {
		t.Fatalf("missingSegments: %v", m)
	}
	if m := missingSegments(segs, [][]byte{a.Bytes(), b.Bytes()}); len(m) != 0 {
		t.Fatalf("missingSegments with all mounted: %v", m)
	}
}
