package fsm

import (
	"strings"
	"testing"
)

// TestMemberRules: the member name and address rules, with the messages callers pass on.
func TestMemberRules(t *testing.T) {
	names := []struct{ name, want string }{
		{"n1", ""},
		{strings.Repeat("n", 64), ""},
		{"", "member name: length 0 not in 1..64"},
		{strings.Repeat("n", 65), "member name: length 65 not in 1..64"},
		{"_n", `member name "_n": must not start with '_'`},
		{"n\x01", `member name "n\x01": control byte 0x01 at 1`},
		{"n\x7f", `member name "n\x7f": control byte 0x7f at 1`},
	}
	for _, c := range names {
		if got := errText(ValidateMemberName(c.name)); got != c.want {
			t.Errorf("ValidateMemberName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	addrs := []struct{ addr, want string }{
		{"127.0.0.1:6101", ""},
		{"[::1]:80", ""},
		{"", "address: length 0 not in 1..1024"},
		{strings.Repeat("h", 1023) + ":1", "address: length 1025 not in 1..1024"},
		{"h\x01:1", `address "h\x01:1": control byte 0x01 at 1`},
		{"h", `address "h": want host:port (address h: missing port in address)`},
		{":1", `address ":1": empty host`},
		{"h:0", `address "h:0": port "0" not in 1..65535`},
		{"h:65536", `address "h:65536": port "65536" not in 1..65535`},
		{"h:x", `address "h:x": port "x" not in 1..65535`},
	}
	for _, c := range addrs {
		if got := errText(ValidateMemberAddress(c.addr)); got != c.want {
			t.Errorf("ValidateMemberAddress(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
