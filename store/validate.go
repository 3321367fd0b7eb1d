package store

import (
	"strings"
	"time"

	"metad/store/alloc"
)

// Limits of SEMANTICS section 1. The server checks them before proposing anything; the store checks
// them again so that a direct caller can never put a bad value into the replicated state.
const (
	DefaultTenant   = "default"
	MaxTenantLen    = 256
	MaxKeyLen       = 4096
	MaxGroupLen     = 256
	MaxObjectSize   = uint64(1) << 40
	MaxMemReplicas  = 8
	MaxNOFReplicas  = 8
	MaxDFSReplicas  = 8
	MaxSoftPinTTL   = 24 * time.Hour
	DefaultSoftPin  = 30 * time.Minute
	MaxBatch        = 4096
	MaxReadBatch    = 65536 // keys of a BatchGet or BatchExist
	MaxRequestBytes = 16 << 20
)

// NormalizeTenant maps the empty tenant id to DefaultTenant.
func NormalizeTenant(t string) string {
	if t == "" {
		return DefaultTenant
	}
	return t
}

// ValidateTenant checks a tenant id (after NormalizeTenant).
func ValidateTenant(t string) error { return validateName("tenant", t, MaxTenantLen) }

// validateName checks a name with the rules of a tenant id: 1..limit bytes, not starting with '_',
// no byte below 0x20 and no 0x7F. what names it in the error.
func validateName(what, n string, limit int) error {
	if len(n) == 0 || len(n) > limit {
		return errf(InvalidParams, "%s: length %d not in 1..%d", what, len(n), limit)
	}
	if n[0] == '_' {
		return errf(InvalidParams, "%s %q: must not start with '_'", what, n)
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x20 || c == 0x7f {
			return errf(InvalidParams, "%s %q: control byte 0x%02x at %d", what, n, c, i)
		}
	}
	return nil
}

// ValidateKey checks an object key: 1..4096 bytes, no NUL.
func ValidateKey(k string) error {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return errf(InvalidParams, "key: length %d not in 1..%d", len(k), MaxKeyLen)
	}
	if i := strings.IndexByte(k, 0); i >= 0 {
		return errf(InvalidParams, "key: NUL byte at %d", i)
	}
	return nil
}

// ValidateGroup checks a group id; empty means the object is its own singleton group.
func ValidateGroup(g string) error {
	if len(g) > MaxGroupLen {
		return errf(InvalidParams, "group: length %d over %d", len(g), MaxGroupLen)
	}
	if i := strings.IndexByte(g, 0); i >= 0 {
		return errf(InvalidParams, "group: NUL byte at %d", i)
	}
	return nil
}

// ValidateClient checks a client id (a non-zero UUID).
func ValidateClient(c alloc.ID) error {
	if c.IsZero() {
		return errf(InvalidParams, "client_id: must be a non-zero UUID")
	}
	return nil
}

// ValidateSize checks an object size: 1 .. 2^40 bytes.
func ValidateSize(n uint64) error {
	if n == 0 || n > MaxObjectSize {
		return errf(InvalidParams, "size: %d not in 1..%d", n, MaxObjectSize)
	}
	return nil
}

// Validate checks a replica configuration and fills defaults in place (soft pin ttl).
func (c *ReplicaConfig) Validate() error {
	if c.Memory < 1 || c.Memory > MaxMemReplicas {
		return errf(InvalidParams, "replicas.memory: %d not in 1..%d", c.Memory, MaxMemReplicas)
	}
	if c.NOF < 0 || c.NOF > MaxNOFReplicas {
		return errf(InvalidParams, "replicas.nof: %d not in 0..%d", c.NOF, MaxNOFReplicas)
	}
	if c.DFS < 0 || c.DFS > MaxDFSReplicas {
		return errf(InvalidParams, "replicas.dfs: %d not in 0..%d", c.DFS, MaxDFSReplicas)
	}
	seen := make(map[alloc.ID]struct{}, len(c.Preferred))
	for _, id := range c.Preferred {
		if id.IsZero() {
			return errf(InvalidParams, "replicas.preferred: zero segment id")
		}
		if _, dup := seen[id]; dup {
			return errf(InvalidParams, "replicas.preferred: segment %s named twice", id)
		}
		seen[id] = struct{}{}
	}
	switch c.SoftPin {
	case SoftPinNone, SoftPinDisable:
		if c.SoftPinTTL != 0 {
			return errf(InvalidParams, "soft_pin.ttl: set without action ENABLE")
		}
	case SoftPinEnable:
		if c.SoftPinTTL < 0 || c.SoftPinTTL > MaxSoftPinTTL {
			return errf(InvalidParams, "soft_pin.ttl: %s not in (0, %s]", c.SoftPinTTL, MaxSoftPinTTL)
		}
		if c.SoftPinTTL == 0 {
			c.SoftPinTTL = DefaultSoftPin
		}
	default:
		return errf(InvalidParams, "soft_pin.action: unknown %d", c.SoftPin)
	}
	return nil
}

// ValidateBatch checks the number of items of a batch: 1..MaxBatch (4096); field names the items as
// the request spells them ("keys", "items").
func ValidateBatch(field string, n int) error {
	if n < 1 || n > MaxBatch {
		return errf(InvalidParams, "%s: %d items not in 1..%d", field, n, MaxBatch)
	}
	return nil
}

// ValidateReadBatch checks the number of keys of a BatchGet or BatchExist: 1..MaxReadBatch (65,536).
func ValidateReadBatch(field string, n int) error {
	if n < 1 || n > MaxReadBatch {
		return errf(InvalidParams, "%s: %d items not in 1..%d", field, n, MaxReadBatch)
	}
	return nil
}

// ValidateDistinct checks that the n keys of a batch are distinct (SEMANTICS section 1: a repeated
// key rejects the whole request). key returns item i's key; field names the items as the request
// does, and the error names the first repeat and the item it repeats: "keys[3]: repeats keys[1]".
func ValidateDistinct(field string, n int, key func(i int) string) error {
	seen := make(map[string]int, n)
	for i := range n {
		k := key(i)
		if j, dup := seen[k]; dup {
			return errf(InvalidParams, "%s[%d]: repeats %s[%d]", field, i, field, j)
		}
		seen[k] = i
	}
	return nil
}
