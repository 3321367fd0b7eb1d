package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	"metad/proto/metadv1"
)

func TestParseSize(t *testing.T) {
	good := map[string]uint64{
		"0": 0, "4096": 4096, "4K": 4096, "4k": 4096, "4Ki": 4096, "4KiB": 4096, "4kib": 4096, "4KB": 4000,
		"1M": 1 << 20, "1MiB": 1 << 20, "1MB": 1e6, "1GiB": 1 << 30, "1 GiB": 1 << 30, "1G": 1 << 30, "1GB": 1e9,
		"2TiB": 2 << 40, "1T": 1 << 40, "1PiB": 1 << 50, "64B": 64, " 128 ": 128, "16383PiB": 16383 << 50,
		"18446744073709551615": 1<<64 - 1,
	}
	for s, want := range good {
		got, err := parseSize(s)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "KiB", "-1", "1.5GiB", "4XB", "1 2", "18446744073709551616", "16384PiB", "1e3", "0x40"} {
		if n, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, n)
		}
	}
}

func TestFormatSize(t *testing.T) {
	cases := map[uint64]string{
		0: "0 B", 64: "64 B", 1023: "1023 B", 1024: "1 KiB", 4096: "4 KiB", 1536: "1.5 KiB", 1 << 20: "1 MiB",
		1<<30 + 1<<29: "1.5 GiB", 1 << 30: "1 GiB", 1<<30 - 1: "1023.9 MiB", 5 << 40: "5 TiB", 1 << 62: "4 EiB", 1<<64 - 1: "15.9 EiB",
	}
	for n, want := range cases {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
	// Whatever formatSize prints exactly, parseSize reads back.
	for _, n := range []uint64{1024, 4096, 1 << 20, 3 << 30, 7 << 40} {
		s := strings.ReplaceAll(formatSize(n), " ", "")
		if back, err := parseSize(s); err != nil || back != n {
			t.Errorf("round trip of %d via %q = %d, %v", n, s, back, err)
		}
	}
}

func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f sizeFlag
	fs.Var(&f, "size", "")
	if err := fs.Parse([]string{"--size", "2KiB"}); err != nil || f.n != 2048 || !f.set || f.String() != "2048" {
		t.Fatalf("--size 2KiB: %+v %v", f, err)
	}
	if err := fs.Parse([]string{"--size=lots"}); err == nil || !strings.Contains(err.Error(), `invalid size "lots"`) {
		t.Fatalf("--size=lots: %v", err)
	}
}

func TestParseTier(t *testing.T) {
	good := map[string]metadv1.Tier{
		"": metadv1.Tier_TIER_UNSPECIFIED, "MEMORY": metadv1.Tier_TIER_MEMORY, "memory": metadv1.Tier_TIER_MEMORY,
		"TIER_MEMORY": metadv1.Tier_TIER_MEMORY, "nof": metadv1.Tier_TIER_NOF, "NOF": metadv1.Tier_TIER_NOF,
		"local-disk": metadv1.Tier_TIER_LOCAL_DISK, "disk": metadv1.Tier_TIER_DISK, "TIER_DFS": metadv1.Tier_TIER_DFS,
	}
	for s, want := range good {
		if got, err := parseTier(s); err != nil || got != want {
			t.Errorf("parseTier(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := parseTier("tape"); err == nil {
		t.Error("parseTier(tape) accepted")
	}
	if tierName(metadv1.Tier_TIER_NOF) != "NOF" || tierName(0) != "all" {
		t.Error("tierName")
	}
}

func TestParseClientID(t *testing.T) {
	def := client.NewUUID()
	if got, err := parseClientID("", def); err != nil || got != def {
		t.Fatalf("empty: %v %v", got, err)
	}
	u := client.NewUUID()
	for _, s := range []string{u.String(), strings.ToUpper(u.String()), strings.ReplaceAll(u.String(), "-", ""), " " + u.String() + " "} {
		if got, err := parseClientID(s, def); err != nil || got != u {
			t.Errorf("parseClientID(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"worker-1", "00000000-0000-0000-0000-000000000000", u.String()[:35]} {
		if _, err := parseClientID(s, def); err == nil || !strings.HasPrefix(err.Error(), "invalid client id") {
			t.Errorf("parseClientID(%q) = %v, want an error", s, err)
		}
	}
}

func TestDefaultClientIDIsStable(t *testing.T) {
	a, b := defaultClientID(), defaultClientID()
	if a != b || a.IsZero() || a[6]>>4 != 8 || a[8]>>6 != 2 {
		t.Fatalf("defaultClientID: %v %v", a, b)
	}
	t.Setenv("USER", "someone-else")
	if defaultClientID() == a {
		t.Fatal("defaultClientID ignores the user")
	}
}

func TestParseInterspersed(t *testing.T) {
	cases := []struct {
		args []string
		pos  []string
		size string
		f    bool
	}{
		{[]string{"k1", "--size", "4KiB"}, []string{"k1"}, "4KiB", false},
		{[]string{"--size", "1", "k1", "-f", "k2"}, []string{"k1", "k2"}, "1", true},
		{[]string{"k1", "--", "-weird", "--size"}, []string{"k1", "-weird", "--size"}, "", false},
		{[]string{"--size=3", "--", "--f"}, []string{"--f"}, "3", false},
		{nil, nil, "", false},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		size := fs.String("size", "", "")
		f := fs.Bool("f", false, "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || *size != tc.size || *f != tc.f {
			t.Errorf("%v: pos %q size %q f %v err %v; want %q %q %v", tc.args, pos, *size, *f, err, tc.pos, tc.size, tc.f)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"k", "--nope"}); err == nil {
		t.Error("unknown flag after a positional accepted")
	}
}

func TestGlobalFlagsAfterVerb(t *testing.T) {
	a := &app{stdout: io.Discard, stderr: io.Discard, endpoints: "a:1", output: "table", timeout: time.Second}
	v := findVerb([]string{"get"})
	fs := a.flags(v)
	stale := fs.Bool("stale", false, "")
	pos, err := a.parse(v, fs, []string{"k", "-o", "json", "--stale", "--endpoints", "b:2,c:3", "--timeout", "3s"}, 1, 1)
	if err != nil || pos[0] != "k" || a.output != "json" || !*stale || a.endpoints != "b:2,c:3" || a.timeout != 3*time.Second {
		t.Fatalf("parse: %v %v %+v", pos, err, a)
	}
	// A verb flag set does not reset globals it does not see.
	a2 := &app{stdout: io.Discard, stderr: io.Discard, endpoints: "x:1", output: "json", timeout: time.Minute}
	if _, err := a2.parse(v, a2.flags(v), []string{"k"}, 1, 1); err != nil || a2.endpoints != "x:1" || a2.output != "json" || a2.timeout != time.Minute {
		t.Fatalf("globals reset: %+v %v", a2, err)
	}
}

func TestFindVerb(t *testing.T) {
	for _, words := range [][]string{{"put"}, {"tenant", "quota"}, {"segment", "mount"}, {"leader", "transfer"}, {"bench"}} {
		if v := findVerb(words); v == nil || v.name != strings.Join(words, " ") {
			t.Errorf("findVerb(%v) = %v", words, v)
		}
	}
	if findVerb([]string{"tenant", "nope"}) != nil || findVerb([]string{"nope"}) != nil {
		t.Error("findVerb found a verb that does not exist")
	}
	if got := subVerbs("segment"); !reflect.DeepEqual(got, []string{"ls", "mount", "unmount"}) {
		t.Errorf("subVerbs(segment) = %v", got)
	}
	for _, v := range verbs {
		if v.run == nil || v.summary == "" {
			t.Errorf("verb %q is incomplete", v.name)
		}
		if g, _, ok := strings.Cut(v.name, " "); ok && !groups[g] {
			t.Errorf("verb %q is in no group", v.name)
		}
	}
}

func TestDisplayKey(t *testing.T) {
	cases := map[string]string{"k1": "k1", "with space": "with space", "": `""`, "a\x01b": `"a\x01b"`, "\xff": `"\xff"`, "ключ": "ключ"}
	for in, want := range cases {
		if got := displayKey([]byte(in)); got != want {
			t.Errorf("displayKey(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestErrorLine(t *testing.T) {
	withDetail := func(code codes.Code, r metadv1.Reason, msg string) error {
		st, _ := status.New(code, msg).WithDetails(&metadv1.ErrorDetail{Reason: r})
		return st.Err()
	}
	cases := []struct {
		err  error
		want string
	}{
		{withDetail(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, `tenant "default" key "k" not found`),
			`error: OBJECT_NOT_FOUND: tenant "default" key "k" not found`},
		{status.Error(codes.Unavailable, "connection refused"), "error: UNAVAILABLE: connection refused"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "error: DEADLINE_EXCEEDED: context deadline exceeded"},
		{status.Error(codes.Internal, "boom"), "error: INTERNAL: boom"},
		{&client.ItemError{Reason: metadv1.Reason_REASON_INVALID_WRITE, Message: "no write"}, "error: INVALID_WRITE: no write"},
		{&cliError{reason: "SEGMENT_NOT_FOUND", msg: "segment x is not mounted"}, "error: SEGMENT_NOT_FOUND: segment x is not mounted"},
		{errors.New("plain"), "error: plain"},
	}
	for _, tc := range cases {
		if got := errorLine(tc.err); got != tc.want {
			t.Errorf("errorLine(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	for in, want := range map[string]string{"FailedPrecondition": "FAILED_PRECONDITION", "OK": "OK", "Canceled": "CANCELED"} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
	}
	if got := reasonLabel(fmt.Errorf("x")); got != "OTHER" {
		t.Errorf("reasonLabel of a plain error = %q", got)
	}
}
