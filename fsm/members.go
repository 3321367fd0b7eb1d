package fsm

import (
	"fmt"
	"net"
	"strconv"
)

// The rules of the member records (SEMANTICS section 1). A member's name is its Raft server id and
// follows the rules of a tenant id, 1..MaxMemberNameLen bytes; its address is host:port. Apply
// enforces the name rule on SetMember (entries written under rulesLimits); package server checks
// both before it forwards a membership request, and package ha before it proposes a record or
// changes Raft's configuration. An error of these rules only describes what is wrong; each caller
// refuses with it as INVALID_PARAMS in its own terms.
const (
	MaxMemberNameLen    = 64
	MaxMemberAddressLen = 1024
)

// ValidateMemberName checks a cluster member's name (its Raft server id): like a tenant id, 1..64
// bytes, not starting with '_', no byte below 0x20 and no 0x7F.
func ValidateMemberName(n string) error {
	if len(n) == 0 || len(n) > MaxMemberNameLen {
		return fmt.Errorf("member name: length %d not in 1..%d", len(n), MaxMemberNameLen)
	}
	if n[0] == '_' {
		return fmt.Errorf("member name %q: must not start with '_'", n)
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("member name %q: control byte 0x%02x at %d", n, c, i)
		}
	}
	return nil
}

// ValidateMemberAddress checks a member's address: host:port (net.SplitHostPort) of at most 1024
// bytes, a host that is not empty, a decimal port in 1..65535, and no byte below 0x20 or 0x7F.
func ValidateMemberAddress(a string) error {
	if len(a) == 0 || len(a) > MaxMemberAddressLen {
		return fmt.Errorf("address: length %d not in 1..%d", len(a), MaxMemberAddressLen)
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("address %q: control byte 0x%02x at %d", a, c, i)
		}
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("address %q: want host:port (%v)", a, err)
	}
	if host == "" {
		return fmt.Errorf("address %q: empty host", a)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("address %q: port %q not in 1..65535", a, port)
	}
	return nil
}
