package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"metad/datadir"
)

// `metad recover` rewrites the Raft configuration of a stopped node's data dir, for a cluster
// that has lost its quorum for good:
//
//	metad recover --data-dir DIR --peers peers.json
//
// peers.json lists the members of the recovered cluster, like Consul's:
// [{"id": "n1", "address": "127.0.0.1:6101"}]. Exit status: 0 done, 1 refused or failed, 2 a usage
// error.

// recoverConfig is what `metad recover` reads; the names are the daemon's where they are shared.
type recoverConfig struct {
	DataDir  string
	Peers    string
	Name     string
	LeaseTTL time.Duration
	LogLevel string
}

func (c *recoverConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "the stopped node's data dir")
	fs.StringVar(&c.Peers, "peers", c.Peers, `JSON file of the recovered cluster's members: [{"id":"n1","address":"127.0.0.1:6101"}]`)
	fs.StringVar(&c.Name, "name", c.Name, "this node's name; if set, the peers file must list it")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "read lease of the store the state is replayed into (as the daemon's)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
}

func runRecover(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := recoverConfig{LeaseTTL: DefaultConfig().LeaseTTL, LogLevel: "info"}
	if err := loadSubcommand("recover", args, getenv, stderr, c.flags); err != nil {
		return usageExit(stderr, "recover", err)
	}
	peers, err := c.validate()
	if err != nil {
		return usageExit(stderr, "recover", err)
	}
	storeCfg, _ := storeConfig(c.LeaseTTL)
	log := newLogger(stderr, c.LogLevel).With("cmd", "recover")
	res, err := datadir.Recover(c.DataDir, peers, storeCfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "metad recover: %v\n", err)
		return 1
	}
	var names []string
	for _, p := range peers {
		names = append(names, p.ID+"="+p.Address)
	}
	fmt.Fprintf(stdout, "recovered %s: the cluster is now %s; state at index %d, term %d: %s, %s\n",
		c.DataDir, strings.Join(names, ","), res.Index, res.Term, plural(uint64(max(res.Objects, 0)), "object"), plural(uint64(res.Tenants), "tenant"))
	fmt.Fprintf(stdout, "start metad on %s as before; then add members with: metactl member add NAME PEERADDR\n", c.DataDir)
	return 0
}

func (c *recoverConfig) validate() ([]datadir.RecoveryPeer, error) {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must be set"))
	}
	var peers []datadir.RecoveryPeer
	if c.Peers == "" {
		errs = append(errs, errors.New("peers: must be set"))
	} else if raw, err := os.ReadFile(c.Peers); err != nil {
		errs = append(errs, fmt.Errorf("peers: %w", err))
	} else if peers, err = datadir.ParsePeersFile(raw); err != nil {
		errs = append(errs, fmt.Errorf("peers %s: %w", c.Peers, err))
	} else if c.Name != "" && !slices.ContainsFunc(peers, func(p datadir.RecoveryPeer) bool { return p.ID == c.Name }) {
		errs = append(errs, fmt.Errorf("peers %s: does not list this node %q", c.Peers, c.Name))
	}
	if _, err := storeConfig(c.LeaseTTL); err != nil {
		errs = append(errs, err)
	}
	if err := checkLogLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return peers, errors.Join(errs...)
}
