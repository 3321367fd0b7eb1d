package client

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultEndpoints(t *testing.T) {
	t.Setenv(EnvEndpoints, "")
	want := []string{"127.0.0.1:6001", "127.0.0.1:6002", "127.0.0.1:6003"}
	if got := DefaultEndpoints(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultEndpoints() = %v", got)
	}
	t.Setenv(EnvEndpoints, " h1:1, ,h2:2 ")
	if got := DefaultEndpoints(); !reflect.DeepEqual(got, []string{"h1:1", "h2:2"}) {
		t.Fatalf("from env: %v", got)
	}
	if got := DefaultConfig().Endpoints; !reflect.DeepEqual(got, []string{"h1:1", "h2:2"}) {
		t.Fatalf("DefaultConfig().Endpoints = %v", got)
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	t.Setenv(EnvEndpoints, "")
	c := Config{}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.DialTimeout != DefaultDialTimeout || c.RetryBackoff != (Backoff{DefaultBackoffInitial, DefaultBackoffMax}) ||
		c.MaxRetries != DefaultMaxRetries || len(c.Endpoints) != 3 {
		t.Fatalf("defaults: %+v", c)
	}
	if d := (Config{RetryBackoff: Backoff{Initial: 2 * time.Second}}).withDefaults(); d.RetryBackoff.Max != 2*time.Second {
		t.Fatalf("Max below a large Initial: %v", d.RetryBackoff)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "client: no endpoints"},
		{Config{Endpoints: []string{"nohost"}}, `client: endpoint "nohost": want host:port (no scheme, no path)`},
		{Config{Endpoints: []string{"https://127.0.0.1:7601"}}, `client: endpoint "https://127.0.0.1:7601": want host:port (no scheme, no path)`},
		{Config{Endpoints: []string{"h:1/x"}}, `client: endpoint "h:1/x": want host:port (no scheme, no path)`},
		{Config{Endpoints: []string{"h:0"}}, `client: endpoint "h:0": port "0" not in 1..65535`},
		{Config{Endpoints: []string{"h:70000"}}, `client: endpoint "h:70000": port "70000" not in 1..65535`},
		{Config{Endpoints: []string{":7601"}}, `client: endpoint ":7601": no host`},
		{Config{Endpoints: []string{"[::1:x]:7601"}}, `client: endpoint "[::1:x]:7601": host "::1:x" is not an IPv6 address`},
		{Config{Endpoints: []string{"a:1", "a:1"}}, `client: endpoint "a:1" listed twice`},
		{Config{Endpoints: []string{"a:1"}, DialTimeout: -1, RetryBackoff: Backoff{1, 1}}, "client: DialTimeout must be positive, got -1ns"},
		{Config{Endpoints: []string{"a:1"}, DialTimeout: 1}, "client: RetryBackoff.Initial must be positive, got 0s"},
		{Config{Endpoints: []string{"a:1"}, DialTimeout: 1, RetryBackoff: Backoff{2, 1}},
			"client: RetryBackoff.Max (1ns) is less than RetryBackoff.Initial (2ns)"},
	}
	for _, b := range bad {
		if err := b.cfg.Validate(); err == nil || err.Error() != b.want {
			t.Errorf("Validate(%+v) = %v, want %q", b.cfg, err, b.want)
		}
	}
	if _, err := New(Config{Endpoints: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("New with a bad endpoint: %v", err)
	}
	for _, ok := range []string{"127.0.0.1:7601", "[::1]:7601", "node-1.example:7601", "localhost:1"} {
		if err := (Config{Endpoints: []string{ok}}).withDefaults().Validate(); err != nil {
			t.Errorf("Validate of endpoint %q: %v", ok, err)
		}
	}
}

func TestNewAssignsClientID(t *testing.T) {
	c, err := New(Config{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.ClientID().IsZero() {
		t.Fatal("zero client id")
	}
	id := NewUUID()
	c2, err := New(Config{Endpoints: []string{"127.0.0.1:1"}, ClientID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.ClientID() != id || c2.Leader() != "127.0.0.1:1" {
		t.Fatalf("ClientID %v Leader %v", c2.ClientID(), c2.Leader())
	}
}

func TestUUID(t *testing.T) {
	u := NewUUID()
	if u.IsZero() || u[6]>>4 != 4 || u[8]>>6 != 2 {
		t.Fatalf("NewUUID %v is not version 4", u)
	}
	for _, s := range []string{u.String(), strings.ToUpper(u.String()), strings.ReplaceAll(u.String(), "-", "")} {
		got, err := ParseUUID(s)
		if err != nil || got != u {
			t.Fatalf("ParseUUID(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "xyz", "0123456789abcdef0123456789abcdeg", "01234567-89ab-cdef-0123-456789abcdef0", "01234567+89ab-cdef-0123-456789abcdef"} {
		if _, err := ParseUUID(s); err == nil {
			t.Errorf("ParseUUID(%q) accepted", s)
		}
	}
	if got := MustUUID(t, "00112233-4455-6677-8899-aabbccddeeff").String(); got != "00112233-4455-6677-8899-aabbccddeeff" {
		t.Fatal(got)
	}
	if _, err := UUIDFromBytes([]byte{1, 2}); err == nil {
		t.Fatal("UUIDFromBytes of 2 bytes")
	}
	if FormatID(u.Bytes()) != u.String() || FormatID([]byte{0xab}) != "ab" {
		t.Fatal("FormatID")
	}
}

func MustUUID(t *testing.T, s string) UUID {
	t.Helper()
	u, err := ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestJitterRange(t *testing.T) {
	for range 1000 {
		if d := jitter(100 * time.Millisecond); d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("jitter(100ms) = %v", d)
		}
	}
	if d := jitter(1); d < 0 || d > 1 {
		t.Fatalf("jitter(1ns) = %v", d)
	}
}
