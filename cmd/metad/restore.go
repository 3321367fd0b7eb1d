package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"metad/datadir"
	"metad/ha"
	"metad/store"
)

// `metad restore` makes a new cluster member's data dir from a snapshot file, offline:
//
//	metad restore --snapshot FILE --data-dir DIR --name NAME --initial-cluster n1=HOST:PORT,n2=...
//
// Run it for every member of the new cluster with the same file and --initial-cluster, then start
// each member with `metad` on its data dir. Exit status: 0 done, 1 refused or failed (the data dir
// is left as it was), 2 a usage error.

// restoreConfig is what `metad restore` reads; the names are the daemon's where they are shared.
type restoreConfig struct {
	Snapshot       string
	DataDir        string
	Name           string
	InitialCluster string
	LogStore       string
	LeaseTTL       time.Duration
	LogLevel       string
}

func (c *restoreConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Snapshot, "snapshot", c.Snapshot, "the snapshot file to restore (from metactl snapshot save)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "the new member's data dir: must not exist or be empty")
	fs.StringVar(&c.Name, "name", c.Name, "the new member's name; one of --initial-cluster")
	fs.StringVar(&c.InitialCluster, "initial-cluster", c.InitialCluster, "the new cluster's members: n1=127.0.0.1:6101,n2=...")
	fs.StringVar(&c.LogStore, "log-store", c.LogStore, "the Raft log store to create: wal or boltdb (empty: wal, as metad creates in a new data dir)")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "read lease of the store the snapshot is checked into (as the daemon's)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
}

func runRestore(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := restoreConfig{LeaseTTL: DefaultConfig().LeaseTTL, LogLevel: "info"}
	if err := loadSubcommand("restore", args, getenv, stderr, c.flags); err != nil {
		return usageExit(stderr, "restore", err)
	}
	peers, storeCfg, err := c.validate()
	if err != nil {
		return usageExit(stderr, "restore", err)
	}
	log := newLogger(stderr, c.LogLevel).With("cmd", "restore", "node", c.Name)
	h, err := datadir.Restore(datadir.RestoreOptions{Snapshot: c.Snapshot, DataDir: c.DataDir, Name: c.Name, Peers: peers, Store: storeCfg,
		LogStore: c.LogStore}, log)
	if err != nil {
		fmt.Fprintf(stderr, "metad restore: %v\n", err)
		if errors.Is(err, ha.ErrInvalidSnapshot) {
			fmt.Fprintf(stderr, "metad restore: nothing was written to %s\n", c.DataDir)
		}
		return 1
	}
	fmt.Fprintf(stdout, "restored %s for member %s of a new %d-member cluster: snapshot at index %d, term %d: %s, %s, %s\n",
		c.DataDir, c.Name, len(peers), h.GetIndex(), h.GetTerm(), plural(h.GetObjects(), "object"), plural(h.GetTenants(), "tenant"),
		plural(h.GetSegments(), "segment"))
	fmt.Fprintf(stdout, "start it with: metad --name %s --data-dir %s --initial-cluster %s [--listen-client ... --listen-peer ...]\n",
		c.Name, c.DataDir, c.InitialCluster)
	return 0
}

func (c *restoreConfig) validate() ([]ha.Peer, store.Config, error) {
	var errs []error
	for _, req := range []struct{ name, v string }{{"snapshot", c.Snapshot}, {"data-dir", c.DataDir}, {"name", c.Name}, {"initial-cluster", c.InitialCluster}} {
		if req.v == "" {
			errs = append(errs, fmt.Errorf("%s: must be set", req.name))
		}
	}
	peers, err := ha.ParseInitialCluster(c.InitialCluster)
	if err != nil {
		errs = append(errs, err)
	}
	if c.Name != "" && len(peers) > 0 && !containsPeer(peers, c.Name) {
		errs = append(errs, fmt.Errorf("initial-cluster: does not include this member %q", c.Name))
	}
	cfg, err := storeConfig(c.LeaseTTL)
	if err != nil {
		errs = append(errs, err)
	}
	if err := checkLogLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return peers, cfg, errors.Join(errs...)
}

// plural is "1 object" or "2 objects".
func plural(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func containsPeer(peers []ha.Peer, name string) bool {
	for _, p := range peers {
		if p.Name == name {
			return true
		}
	}
	return false
}

func storeConfig(leaseTTL time.Duration) (store.Config, error) {
	cfg := store.DefaultConfig()
	if leaseTTL <= 0 {
		return cfg, fmt.Errorf("lease-ttl: must be positive, got %s", leaseTTL)
	}
	cfg.LeaseTTL = leaseTTL
	return cfg, nil
}

func checkLogLevel(l string) error {
	switch l {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("log-level %q: want debug, info, warn or error", l)
}

func usageExit(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "metad %s: %v\n", cmd, err)
	return 2
}

// loadSubcommand parses a subcommand's settings with the daemon's precedence: defaults < the YAML
// file (--config or METAD_CONFIG) < environment (METAD_ and the name) < flags. The YAML file may
// be the daemon's own: its settings that the subcommand does not use are ignored, and any other key
// is an error.
func loadSubcommand(cmd string, args []string, getenv func(string) string, stderr io.Writer, bind func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet("metad "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	bind(fs)
	var file string
	fs.StringVar(&file, "config", getenv("METAD_CONFIG"), "YAML file with the daemon's settings; the ones this command uses are read from it")
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--config" || a == "-config" {
			if i+1 < len(args) {
				file = args[i+1]
			}
		} else if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "config="); ok && strings.HasPrefix(a, "-") {
			file = v
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("config file %s: %w", file, err)
		}
		daemon := flag.NewFlagSet("metad", flag.ContinueOnError)
		dc := DefaultConfig()
		dc.flags(daemon)
		for k, v := range m {
			switch {
			case k == "config":
				return fmt.Errorf("config file %s: unknown setting %q", file, k)
			case fs.Lookup(k) != nil:
				if err := fs.Set(k, fmt.Sprint(v)); err != nil {
					return fmt.Errorf("config file %s: %s: %w", file, k, err)
				}
			case daemon.Lookup(k) == nil:
				return fmt.Errorf("config file %s: unknown setting %q", file, k)
			}
		}
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && f.Name != "config" {
			if err := fs.Set(f.Name, v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s: %w", envName(f.Name), err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}
