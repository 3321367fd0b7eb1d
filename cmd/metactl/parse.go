package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"metad/client"
	"metad/proto/metadv1"
)

// sizeUnits maps a size suffix (lower case) to its multiplier. Single letters and the IEC forms
// are binary (1K = 1KiB = 1024); the SI forms with a B are decimal (1KB = 1000).
var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	"p": 1 << 50, "pi": 1 << 50, "pib": 1 << 50, "pb": 1e15,
}

// parseSize parses a byte count: a non-negative integer with an optional suffix, case-insensitive,
// spaces allowed before it: 4096, 4K, 4KiB, 1GiB, 1 GB (= 10^9), 2TiB.
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit (4096, 4KiB, 1GiB)", s)
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)", s, t[i:])
	}
	hi, lo := bits.Mul64(n, mult)
	if hi != 0 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return lo, nil
}

// formatSize renders a byte count for people: exact binary units when they divide it (4 KiB),
// otherwise one decimal (1.5 GiB), plain bytes below 1 KiB.
func formatSize(n uint64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	u, shift := 0, uint(10)
	for u < len(units)-1 && n>>(shift+10) > 0 {
		u, shift = u+1, shift+10
	}
	whole, rem := n>>shift, n&(1<<shift-1)
	if rem == 0 {
		return fmt.Sprintf("%d %s", whole, units[u])
	}
	return fmt.Sprintf("%d.%d %s", whole, rem*10>>shift, units[u]) // rem < 2^60: no overflow
}

// sizeFlag is a flag.Value holding a size parsed by parseSize.
type sizeFlag struct {
	n   uint64
	set bool
}

func (f *sizeFlag) String() string {
	if f == nil {
		return "0"
	}
	return strconv.FormatUint(f.n, 10)
}

func (f *sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	f.n, f.set = n, true
	return nil
}

// parseTier parses MEMORY, NOF, LOCAL_DISK, DISK or DFS (any case, TIER_ prefix allowed, "-" for "_");
// "" is TIER_UNSPECIFIED.
func parseTier(s string) (metadv1.Tier, error) {
	u := strings.ReplaceAll(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "TIER_"), "-", "_")
	switch u {
	case "":
		return metadv1.Tier_TIER_UNSPECIFIED, nil
	case "MEMORY", "MEM", "DRAM":
		return metadv1.Tier_TIER_MEMORY, nil
	case "NOF":
		return metadv1.Tier_TIER_NOF, nil
	case "LOCAL_DISK", "SSD":
		return metadv1.Tier_TIER_LOCAL_DISK, nil
	case "DISK", "SHARED_FS":
		return metadv1.Tier_TIER_DISK, nil
	case "DFS":
		return metadv1.Tier_TIER_DFS, nil
	}
	return 0, fmt.Errorf("invalid tier %q: want MEMORY, NOF, LOCAL_DISK, DISK or DFS", s)
}

// tierName is the display name of a tier (MEMORY, NOF, LOCAL_DISK, DISK, DFS), or "all" for
// TIER_UNSPECIFIED.
func tierName(t metadv1.Tier) string {
	if t == metadv1.Tier_TIER_UNSPECIFIED {
		return "all"
	}
	return strings.TrimPrefix(t.String(), "TIER_")
}

// parseClientID parses a client id (a UUID); "" gives def.
func parseClientID(s string, def client.UUID) (client.UUID, error) {
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	u, err := client.ParseUUID(strings.TrimSpace(s))
	if err != nil {
		return u, fmt.Errorf("invalid client id: %w", err)
	}
	if u.IsZero() {
		return u, errors.New("invalid client id: the zero UUID is not a client")
	}
	return u, nil
}

// defaultClientID is the id metactl writes and mounts as unless --client says otherwise: a UUID
// derived from the user and host names (RFC 9562 version 8 layout), so that `put-start` and
// `put-end` run separately on one machine act as the same client.
func defaultClientID() client.UUID {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = strconv.Itoa(os.Getuid())
	}
	sum := sha256.Sum256([]byte("metactl:" + user + "@" + host))
	var u client.UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	return u
}

// displayKey renders a key or group id: as is when it is printable UTF-8, otherwise Go-quoted.
func displayKey(b []byte) string {
	if utf8.Valid(b) {
		printable := true
		for _, r := range string(b) {
			if !unicode.IsPrint(r) {
				printable = false
				break
			}
		}
		if printable && len(b) > 0 {
			return string(b)
		}
	}
	return strconv.Quote(string(b))
}

// parseInterspersed parses args with fs, allowing flags after positional arguments
// (`put KEY --size 4KiB`), and returns the positional arguments in order. Everything after a
// "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// readOpts are the read options a verb's --stale flag asks for: a stale read from any node, or
// none (a linearizable read through the leader).
func readOpts(stale bool) []client.ReadOption {
	if stale {
		return []client.ReadOption{client.Stale()}
	}
	return nil
}
