package chaos

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"metad/test/e2e"
)

// envSeed returns CHAOS_SEED, or a random seed.
func envSeed(t *testing.T) uint64 {
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		return v
	}
	return rand.Uint64() % 1_000_000_000
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	if s := os.Getenv(name); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		return d
	}
	return def
}

func envConfig(t *testing.T, seed uint64, def time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Duration = envDuration(t, "CHAOS_DURATION", def)
	kinds, err := ParseKinds(os.Getenv("CHAOS_FAULTS"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kinds = kinds
	if dir := os.Getenv("CHAOS_REPORT_DIR"); dir != "" {
		cfg.ReportDir = filepath.Join(dir, strconv.FormatUint(seed, 10))
	}
	cfg.KeepHistory = os.Getenv("CHAOS_HISTORY") != ""
	cfg.Insecure = os.Getenv("CHAOS_INSECURE") != ""
	cfg.Tiers = os.Getenv("CHAOS_TIERS") != ""
	for _, k := range strings.Split(os.Getenv("CHAOS_KNOWN"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		known := false
		for _, n := range tolNames {
			known = known || n == k
		}
		if !known {
			t.Fatalf("CHAOS_KNOWN: unknown anomaly %q (known: group-not-found, dirty-absent, restore-fenced)", k)
		}
		cfg.Tolerate = append(cfg.Tolerate, k)
	}
	cfg.Logf = t.Logf
	return cfg
}

// report fails t for every broken invariant of r, naming the seed and the report.
func report(t *testing.T, r *Result) {
	t.Helper()
	var sum bytes.Buffer
	_ = writeSummary(&sum, r, r.Config)
	if !r.Failed() {
		t.Logf("seed %d passed; report in %s\n%s", r.Seed, r.Dir, sum.String())
		return
	}
	t.Errorf("seed %d FAILED (rerun with CHAOS_SEED=%d); report in %s\n%s", r.Seed, r.Seed, r.Dir, sum.String())
}

// skipUnlessDrill skips a process-level drill under -short and where the fault network cannot run.
func skipUnlessDrill(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a process-level drill; skipped with -short")
	}
	if !Supported() {
		t.Skip("the fault network needs Linux /proc")
	}
}

// TestDrillShort is one seeded drill of 40 s of faults (CHAOS_SEED picks the seed,
// CHAOS_DURATION the fault phase, CHAOS_FAULTS the kinds). It runs in `make test`.
func TestDrillShort(t *testing.T) {
	skipUnlessDrill(t)
	seed := envSeed(t)
	t.Logf("chaos seed %d (rerun with CHAOS_SEED=%d)", seed, seed)
	cfg := envConfig(t, seed, 40*time.Second)
	cfg.CheckTimeout = 15 * time.Second // keep the short drill short: an undecided partition is reported, not failed
	r, err := Run(t, cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	report(t, r)
}

// TestDrillTiers is one seeded tiers drill (tiers.go) of 30 s of faults: objects offloaded to the
// workers' SSDs, evicted from memory to disk and promoted back while the faults run, checked as
// every drill is. It fails unless its reads saw objects on disk alone and promoted back. It runs
// in `make test`; CHAOS_TIERS=1 makes the other drills tiers drills too.
func TestDrillTiers(t *testing.T) {
	skipUnlessDrill(t)
	seed := envSeed(t)
	t.Logf("tiers drill, chaos seed %d (rerun with CHAOS_SEED=%d)", seed, seed)
	cfg := envConfig(t, seed, 30*time.Second)
	cfg.Tiers = true
	cfg.CheckTimeout = 15 * time.Second
	if cfg.ReportDir == "" { // CHAOS_REPORT_DIR unset
		cfg.ReportDir = filepath.Join("report", "tiers-"+strconv.FormatUint(seed, 10))
	}
	r, err := Run(t, cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	report(t, r)
	if c := r.Tiers; c.DiskOnly == 0 || c.Promoted == 0 {
		t.Errorf("seed %d: the tiers drill did not move objects between the tiers: %s", seed, c)
	}
}

// TestDrillMany runs CHAOS_SEEDS drills of CHAOS_DURATION each (seeds CHAOS_SEED, +1, ...) and
// prints the summary table; the summary also goes to <report dir>/summary.txt. Skipped unless
// CHAOS_SEEDS or CHAOS_DURATION is set:
//
//	CHAOS_SEEDS=20 CHAOS_DURATION=60s go test -run TestDrillMany -timeout 60m ./test/chaos/
func TestDrillMany(t *testing.T) {
	if os.Getenv("CHAOS_SEEDS") == "" && os.Getenv("CHAOS_DURATION") == "" {
		t.Skip("set CHAOS_SEEDS and CHAOS_DURATION to run many drills")
	}
	if !Supported() {
		t.Skip("the fault network needs Linux /proc")
	}
	n := 20
	if s := os.Getenv("CHAOS_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("CHAOS_SEEDS=%q: want a positive count", s)
		}
		n = v
	}
	base := envSeed(t)
	var rs []*Result
	for i := range n {
		seed := base + uint64(i)
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r, err := Run(t, envConfig(t, seed, 60*time.Second))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			rs = append(rs, r)
			report(t, r)
		})
	}
	var sum bytes.Buffer
	if err := Summary(&sum, rs); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary of %d drills from seed %d:\n%s", len(rs), base, sum.String())
	dir := os.Getenv("CHAOS_REPORT_DIR")
	if dir == "" {
		dir = "report"
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "summary.txt"), sum.Bytes(), 0o644)
	}
}

// TestUpgradeDrill is the rolling-upgrade drill: a cluster of the previous release
// (test/e2e/previous-release) under the drill's workload is upgraded one node at a time to this
// tree's metad, each release's metactl calling a member of the other between steps, and checked as
// every drill is (linearizability, lost writes, the nodes' states). CHAOS_UPGRADE_GAP sets the time
// between steps (default 3 s); `make chaos` runs it with a longer one.
func TestUpgradeDrill(t *testing.T) {
	skipUnlessDrill(t)
	bin, name := e2e.BuildRelease(t)
	seed := envSeed(t)
	t.Logf("upgrade drill from %s, seed %d (rerun with CHAOS_SEED=%d)", name, seed, seed)
	cfg := envConfig(t, seed, 0)
	cfg.Release, cfg.ReleaseName = bin, name
	cfg.UpgradeGap = envDuration(t, "CHAOS_UPGRADE_GAP", 3*time.Second)
	cfg.CheckTimeout = 15 * time.Second
	if cfg.ReportDir == "" {
		cfg.ReportDir = filepath.Join("report", "upgrade-"+strconv.FormatUint(seed, 10))
	}
	r, err := Run(t, cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for _, f := range r.Faults {
		if f.Kind == Upgrade && f.Err != "" {
			t.Errorf("%s: %s", f, f.Err)
		}
	}
	report(t, r)
}
