package main

import (
	"fmt"
	"text/tabwriter"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// The LOCAL_DISK tier's verbs: what a worker that keeps objects on its local SSD tells the cluster
// (metactl disk mount, offload, evict, unmount), for operators and drills.

// diskClient parses --client and returns the client acting for it.
func diskClient(a *app, v *verb, clientS string) (*client.Client, client.UUID, error) {
	id, err := parseClientID(clientS, defaultClientID())
	if err != nil {
		return nil, id, usagef(v, "--client: %v", err)
	}
	c, err := a.client(id)
	return c, id, err
}

func runDiskMount(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	var capacity sizeFlag
	fs.Var(&capacity, "capacity", "SSD `capacity` in bytes, units allowed (required)")
	endpoint := fs.String("endpoint", "metactl", "the owner's endpoint, through which readers fetch its files (opaque to metad)")
	offload := fs.Bool("offload", false, "the client takes offload tasks")
	clientS := fs.String("client", "", "owning client id (default: derived from user and host)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if !capacity.set || capacity.n == 0 {
		return usagef(v, "--capacity is required and must be positive")
	}
	c, owner, err := diskClient(a, v, *clientS)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	id, created, err := c.MountLocalDisk(ctx, capacity.n, *endpoint, *offload)
	if err != nil {
		return err
	}
	view := struct {
		SegmentID string `json:"segment_id"`
		Owner     string `json:"owner_client_id"`
		Created   bool   `json:"created"`
	}{id.String(), owner.String(), created}
	if err := a.printer().emit(view, func(tw *tabwriter.Writer) {
		what := "registered"
		if !created {
			what = "already registered:"
		}
		fmt.Fprintf(tw, "%s local disk %s (%s) of client %s\n", what, view.SegmentID, formatSize(align64(capacity.n)), view.Owner)
	}); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "note: the registration stays only while client %s pings (see metactl worker --client)\n", owner)
	return nil
}

func runDiskUnmount(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	clientS := fs.String("client", "", "owning client id (default: derived from user and host)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, owner, err := diskClient(a, v, *clientS)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.UnmountLocalDisk(ctx)
	if err != nil {
		return err
	}
	return a.printer().emit(resp, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "unmounted the local disk of client %s: %s dropped, %s erased\n", owner,
			plural(int(resp.GetReplicasDropped()), "replica"), plural(int(resp.GetObjectsErased()), "object"))
	})
}

// runDiskOffload reports the keys as offloaded to the client's SSD: each one's size is read first
// (a linearizable Get), so the report names the object the client copied.
func runDiskOffload(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	failed := fs.Bool("failed", false, "report the offloads failed (nothing is recorded)")
	clientS := fs.String("client", "", "owning client id (default: derived from user and host)")
	pos, err := a.parse(v, fs, args, 1, -1)
	if err != nil {
		return err
	}
	c, _, err := diskClient(a, v, *clientS)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	results := make([]client.OffloadResult, len(pos))
	for i, k := range pos {
		results[i] = client.OffloadResult{Key: k, Success: !*failed}
		if *failed {
			continue
		}
		g, err := c.Get(ctx, *tenant, k) // linearizable: a stale read may not have the object yet
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		results[i].Size = g.GetSize()
	}
	sts, err := c.NotifyOffload(ctx, *tenant, results)
	if err != nil {
		return err
	}
	return emitDiskResults(a, pos, sts, "recorded")
}

func runDiskEvict(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	clientS := fs.String("client", "", "owning client id (default: derived from user and host)")
	pos, err := a.parse(v, fs, args, 1, -1)
	if err != nil {
		return err
	}
	c, _, err := diskClient(a, v, *clientS)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	sts, err := c.EvictDiskReplica(ctx, *tenant, pos)
	if err != nil {
		return err
	}
	return emitDiskResults(a, pos, sts, "dropped")
}

// emitDiskResults prints one result per key: done, or the item's error.
func emitDiskResults(a *app, keys []string, sts []*metadv1.Status, done string) error {
	view := make([]rmResultView, len(sts))
	for i, st := range sts {
		view[i] = resultView([]byte(keys[i]), st)
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY", "RESULT")
		for _, r := range view {
			res := done
			if !r.OK {
				res = r.Error
			}
			row(tw, r.Key, res)
		}
	})
}
