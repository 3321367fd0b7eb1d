package main

import (
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// tenantName shows the tenant a request names ("" is "default").
// tenantName is the tenant a request with --tenant t acts on, as the output names it. Without
// --tenant, the cluster picks it: "default", except for a caller that authenticates as a principal
// of its own (--api-key or --cert) holding exactly one tenant role, whose calls act on that tenant
// (docs/design.md, "Security"); metactl cannot tell which, and says so.
func (a *app) tenantName(t string) string {
	switch {
	case t != "":
		return t
	case a.sec.APIKey != "" || a.sec.Cert != "":
		return ownTenant
	}
	return "default"
}

// ownTenant is how the output names the tenant a principal's call without --tenant acts on.
const ownTenant = "(the caller's own, or default)"

// putFlags are the flags of put and put-start.
type putFlags struct {
	tenant, group, clientID, preferred, host string
	size                                     sizeFlag
	replicas, nof, dfs, dataType             uint
	softPin                                  time.Duration
	hardPin                                  bool
}

func (p *putFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.tenant, "tenant", "", "tenant (default \"default\")")
	fs.Var(&p.size, "size", "object `size` in bytes, units allowed (required)")
	fs.StringVar(&p.group, "group", "", "explicit group to join")
	fs.UintVar(&p.replicas, "replicas", 0, "memory replicas, 1..8 (0 = server default, 1)")
	fs.UintVar(&p.nof, "nof", 0, "NOF replicas, 0..8")
	fs.UintVar(&p.dfs, "dfs", 0, "DFS replicas (extents of DFS pools), 0..8")
	fs.StringVar(&p.preferred, "prefer", "", "comma-separated segment ids to place on first")
	fs.StringVar(&p.host, "host", "", "the writer's `host`: place memory replicas on its segments first, then as usual (local-first)")
	fs.DurationVar(&p.softPin, "soft-pin", 0, "soft-pin the object for this long once written (0 = no soft pin)")
	fs.BoolVar(&p.hardPin, "hard-pin", false, "never evict the object")
	fs.UintVar(&p.dataType, "data-type", 0, "opaque client tag returned by get")
	fs.StringVar(&p.clientID, "client", "", "writing client id (default: derived from user and host)")
}

// options checks the flags and builds the client's PutOptions and writer id.
func (p *putFlags) options(v *verb) (*client.PutOptions, client.UUID, error) {
	if !p.size.set || p.size.n == 0 {
		return nil, client.UUID{}, usagef(v, "--size is required and must be positive")
	}
	if p.replicas > 8 || p.nof > 8 || p.dfs > 8 {
		return nil, client.UUID{}, usagef(v, "--replicas, --nof and --dfs are at most 8")
	}
	if p.dataType > 1<<32-1 {
		return nil, client.UUID{}, usagef(v, "--data-type must fit in 32 bits")
	}
	id, err := parseClientID(p.clientID, defaultClientID())
	if err != nil {
		return nil, id, usagef(v, "--client: %v", err)
	}
	o := &client.PutOptions{Group: p.group, MemoryReplicas: uint32(p.replicas), NOFReplicas: uint32(p.nof), DFSReplicas: uint32(p.dfs),
		HardPin: p.hardPin, DataType: uint32(p.dataType), Host: p.host}
	if p.softPin < 0 {
		return nil, id, usagef(v, "--soft-pin must not be negative")
	}
	if p.softPin > 0 {
		o.SoftPin, o.SoftPinTTL = metadv1.SoftPinAction_SOFT_PIN_ACTION_ENABLE, p.softPin
	}
	for _, s := range client.SplitEndpoints(p.preferred) {
		u, err := client.ParseUUID(s)
		if err != nil {
			return nil, id, usagef(v, "--prefer: %v", err)
		}
		o.PreferredSegments = append(o.PreferredSegments, u)
	}
	return o, id, nil
}

// putView is the result of put and put-start.
type putView struct {
	Tenant   string        `json:"tenant"`
	Key      string        `json:"key"`
	Size     uint64        `json:"size"`
	ClientID string        `json:"client_id"`
	Replicas []replicaView `json:"replicas"`
}

func runPut(a *app, v *verb, args []string) error      { return doPut(a, v, args, true) }
func runPutStart(a *app, v *verb, args []string) error { return doPut(a, v, args, false) }

func doPut(a *app, v *verb, args []string, commit bool) error {
	fs := a.flags(v)
	var pf putFlags
	pf.register(fs)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	opts, id, err := pf.options(v)
	if err != nil {
		return err
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	key := pos[0]
	var reps []*metadv1.Replica
	if commit {
		reps, err = c.Put(ctx, pf.tenant, key, pf.size.n, opts)
	} else {
		reps, err = c.PutStart(ctx, pf.tenant, key, pf.size.n, opts)
	}
	if err != nil {
		return err
	}
	view := putView{Tenant: a.tenantName(pf.tenant), Key: key, Size: pf.size.n, ClientID: id.String(), Replicas: replicaViews(reps)}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		if commit {
			fmt.Fprintf(tw, "put %s: %s in tenant %s, %s\n\n", key, formatSize(view.Size), view.Tenant, plural(len(reps), "replica"))
		} else {
			fmt.Fprintf(tw, "put-start %s: %s in tenant %s, %s PROCESSING; commit with: metactl put-end %s --client %s\n\n",
				key, formatSize(view.Size), view.Tenant, plural(len(reps), "replica"), key, view.ClientID)
		}
		replicaTable(tw, view.Replicas)
	})
}

// endFlags are the flags of put-end and put-revoke.
type endFlags struct {
	tenant, tier, clientID string
}

func (e *endFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.tenant, "tenant", "", "tenant (default \"default\")")
	fs.StringVar(&e.tier, "tier", "", "only this tier's replicas, MEMORY, NOF, DISK or DFS (default: every tier)")
	fs.StringVar(&e.clientID, "client", "", "writing client id (default: derived from user and host)")
}

func runPutEnd(a *app, v *verb, args []string) error    { return doPutEnd(a, v, args, false) }
func runPutRevoke(a *app, v *verb, args []string) error { return doPutEnd(a, v, args, true) }

func doPutEnd(a *app, v *verb, args []string, revoke bool) error {
	fs := a.flags(v)
	var ef endFlags
	ef.register(fs)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	tier, err := parseTier(ef.tier)
	if err != nil {
		return usagef(v, "--tier: %v", err)
	}
	if tier == metadv1.Tier_TIER_LOCAL_DISK {
		return usagef(v, "--tier: LOCAL_DISK replicas are never written by a put (an offload report adds them)")
	}
	id, err := parseClientID(ef.clientID, defaultClientID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	action := "committed"
	if revoke {
		action = "revoked"
		err = c.PutRevoke(ctx, ef.tenant, pos[0], tier)
	} else {
		err = c.PutEnd(ctx, ef.tenant, pos[0], tier)
	}
	if err != nil {
		return err
	}
	view := map[string]any{"tenant": a.tenantName(ef.tenant), "key": pos[0], "tier": tierName(tier), action: true}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s %s (tier %s)\n", action, pos[0], tierName(tier))
	})
}

// getView is the result of get.
type getView struct {
	Tenant     string        `json:"tenant"`
	Key        string        `json:"key"`
	Size       uint64        `json:"size"`
	DataType   uint32        `json:"data_type"`
	LeaseTTLMs uint64        `json:"lease_ttl_ms"`
	Replicas   []replicaView `json:"replicas"`
}

func runGet(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	stale := fs.Bool("stale", false, "let any node answer from its own state (no read barrier, no lease)")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	resp, err := c.Get(ctx, *tenant, pos[0], opts...)
	if err != nil {
		return err
	}
	view := getView{Tenant: a.tenantName(*tenant), Key: pos[0], Size: resp.GetSize(), DataType: resp.GetDataType(),
		LeaseTTLMs: resp.GetLeaseTtlMs(), Replicas: replicaViews(resp.GetReplicas())}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		lease := "no lease (stale read)"
		if view.LeaseTTLMs > 0 {
			lease = "leased for " + msText(view.LeaseTTLMs)
		}
		fmt.Fprintf(tw, "%s: %s in tenant %s, data type %d, %s, %s\n\n", pos[0], formatSize(view.Size), view.Tenant,
			view.DataType, plural(len(view.Replicas), "replica"), lease)
		replicaTable(tw, view.Replicas)
	})
}

// existView is one key's answer in exists.
type existView struct {
	Key    string `json:"key"`
	Exists bool   `json:"exists"`
}

func runExists(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	stale := fs.Bool("stale", false, "let any node answer from its own state (no read barrier, no lease)")
	pos, err := a.parse(v, fs, args, 1, -1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	var exists []bool
	if len(pos) == 1 {
		ok, err := c.Exist(ctx, *tenant, pos[0], opts...)
		if err != nil {
			return err
		}
		exists = []bool{ok}
	} else {
		resp, err := c.BatchExist(ctx, *tenant, pos, opts...)
		if err != nil {
			return err
		}
		exists = resp.GetExists()
	}
	view := make([]existView, len(pos))
	for i, k := range pos {
		view[i] = existView{Key: k, Exists: exists[i]}
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY", "EXISTS")
		for _, e := range view {
			row(tw, e.Key, e.Exists)
		}
	})
}

func runRm(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	force := fs.Bool("force", false, "remove even under a read lease")
	regex := fs.String("regex", "", "remove every object whose key this Go regexp (RE2) matches anywhere, page by page")
	pos, err := a.parse(v, fs, args, 0, 1)
	if err != nil {
		return err
	}
	if (*regex == "") == (len(pos) == 0) {
		return usagef(v, "give either one KEY or --regex")
	}
	if *regex != "" {
		return runRmRegex(a, *tenant, *regex, *force)
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	if err := c.Remove(ctx, *tenant, pos[0], *force); err != nil {
		return err
	}
	view := map[string]any{"tenant": a.tenantName(*tenant), "key": pos[0], "removed": true}
	return a.printer().emit(view, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "removed %s\n", pos[0]) })
}

func runRmAll(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	force := fs.Bool("force", false, "remove leased objects too")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.RemoveAll(ctx, *tenant, *force)
	if err != nil {
		return err
	}
	view := map[string]any{"tenant": a.tenantName(*tenant), "removed": resp.GetRemoved(), "skipped": resp.GetSkipped()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "removed %d objects of tenant %s, skipped %d (leased or being written)\n",
			resp.GetRemoved(), a.tenantName(*tenant), resp.GetSkipped())
	})
}

func runGroupLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	stale := fs.Bool("stale", false, "let any node answer from its own state")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	keys, err := c.ListGroup(ctx, *tenant, pos[0], opts...)
	if err != nil {
		return err
	}
	shown := make([]string, len(keys))
	for i, k := range keys {
		shown[i] = displayKey([]byte(k))
	}
	view := map[string]any{"tenant": a.tenantName(*tenant), "group": pos[0], "keys": shown}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY")
		for _, k := range shown {
			row(tw, k)
		}
	})
}

func runGroupRm(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	force := fs.Bool("force", false, "remove even if a member is leased")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	n, err := c.RemoveGroup(ctx, *tenant, pos[0], *force)
	if err != nil {
		return err
	}
	view := map[string]any{"tenant": a.tenantName(*tenant), "group": pos[0], "removed": n}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "removed group %s: %s\n", pos[0], plural(int(n), "object"))
	})
}
