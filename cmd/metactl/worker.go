package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// workerView is what worker prints after mounting.
type workerView struct {
	ClientID string        `json:"client_id"`
	Segments []segmentView `json:"segments"`
}

// runWorker simulates a cache worker: it mounts its segments and pings until stopped. Segments
// are replicated, so it never remounts after a leader change; it remounts only segments a Ping
// says are missing (the client was expired while it could not reach the cluster).
func runWorker(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	n := fs.Int("segments", 1, "number of segments to mount")
	segSize := sizeFlag{n: 1 << 30}
	fs.Var(&segSize, "segment-size", "`size` of each segment, a multiple of 64, units allowed")
	clientS := fs.String("client", "", "client id (default: a new random UUID)")
	tierS := fs.String("tier", "MEMORY", "MEMORY or NOF")
	endpoint := fs.String("endpoint", "", "transport address of the segments (default: sim://<client id>)")
	interval := fs.Duration("ping-interval", time.Second, "time between pings")
	duration := fs.Duration("duration", 0, "stop after this long (0 = run until SIGINT or SIGTERM)")
	unmount := fs.Bool("unmount-on-exit", false, "unmount the segments when stopping (otherwise the cluster expires them after client_ttl)")
	runTasks := fs.Bool("run-tasks", false, "run the moves and copies the cluster assigns (drains, scheduled tasks); a simulated worker copies no bytes")
	taskInterval := fs.Duration("task-interval", 200*time.Millisecond, "time between fetches of assigned tasks with --run-tasks or --offload")
	diskDir := fs.String("local-disk", "", "keep this directory as the worker's local SSD: register it (LOCAL_DISK) and keep one file per offloaded object")
	diskCap := sizeFlag{n: 1 << 30}
	fs.Var(&diskCap, "disk-capacity", "`capacity` of the local SSD registration, units allowed (with --local-disk); past it the worker removes its oldest files and reports them")
	offload := fs.Bool("offload", false, "take offload tasks: write each object to the --local-disk directory and report it")
	promote := fs.Bool("promote", false, "take promotion tasks: read the object's file from the --local-disk directory into its new memory replica (simulated) and report it")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	switch {
	case *n < 1 || *n > 1024:
		return usagef(v, "--segments must be 1..1024")
	case segSize.n == 0 || segSize.n%64 != 0:
		return usagef(v, "--segment-size must be a positive multiple of 64")
	case *interval <= 0:
		return usagef(v, "--ping-interval must be positive")
	case *duration < 0:
		return usagef(v, "--duration must not be negative")
	case *taskInterval <= 0:
		return usagef(v, "--task-interval must be positive")
	case (*offload || *promote) && *diskDir == "":
		return usagef(v, "--offload and --promote need --local-disk")
	case *diskDir != "" && diskCap.n == 0:
		return usagef(v, "--disk-capacity must be positive")
	}
	tier, err := parseTier(*tierS)
	if err != nil || (tier != metadv1.Tier_TIER_MEMORY && tier != metadv1.Tier_TIER_NOF) {
		return usagef(v, "--tier: want MEMORY or NOF")
	}
	id, err := parseClientID(*clientS, client.NewUUID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	if *endpoint == "" {
		*endpoint = "sim://" + id.String()
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}

	// Consecutive simulated bases, 2 MiB apart at least (so 64-byte aligned).
	const hugePage = 2 << 20
	stride := (segSize.n + hugePage - 1) / hugePage * hugePage
	base := simulatedBase(stride * uint64(*n))
	segs := make([]*metadv1.SegmentDesc, *n)
	for i := range segs {
		sid := client.NewUUID()
		segs[i] = &metadv1.SegmentDesc{Id: sid.Bytes(), Name: fmt.Sprintf("worker-%s-%d", id.String()[:8], i),
			Base: base + uint64(i)*stride, Size: segSize.n, Endpoint: *endpoint, Tier: tier}
	}
	if err := a.mountAll(c, segs); err != nil {
		return err
	}
	var disk *localDisk
	if *diskDir != "" {
		disk = &localDisk{dir: *diskDir, capacity: diskCap.n, endpoint: *endpoint, offload: *offload,
			evicted: func(tenant string, keys []string) error {
				ctx, cancel := a.callCtx()
				defer cancel()
				_, err := c.EvictDiskReplica(ctx, tenant, keys)
				return err
			}}
		if err := disk.mount(a, c); err != nil {
			return err
		}
	}
	view := workerView{ClientID: id.String()}
	for _, s := range segs {
		sv := segView(s)
		sv.Owner = id.String()
		view.Segments = append(view.Segments, sv)
	}
	if err := a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "worker %s mounted %s of %s (%s):\n\n", id, plural(*n, "segment"), formatSize(segSize.n), tierName(tier))
		row(tw, "ID", "NAME", "TIER", "SIZE", "BASE", "ENDPOINT")
		for _, s := range view.Segments {
			row(tw, s.ID, s.Name, s.Tier, formatSize(s.Size), fmt.Sprintf("%#x", s.Base), s.Endpoint)
		}
	}); err != nil {
		return err
	}
	// Events go to stdout for people and to stderr when stdout is JSON.
	events := a.stdout
	if a.output == "json" {
		events = a.stderr
	}
	stopMsg := "until SIGINT or SIGTERM"
	if *duration > 0 {
		stopMsg = "for " + duration.String()
	}
	logf(events, "pinging every %v %s", *interval, stopMsg)

	ctx := a.ctx
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	tasksDone := make(chan struct{})
	if *runTasks || *offload || *promote {
		events = &lockedWriter{w: events} // two loops log from here on
		runner := client.TaskRunner{}
		if *offload {
			runner.Offload = disk.write
		}
		if *promote {
			runner.Promote = disk.read
		}
		go func() {
			defer close(tasksDone)
			a.taskLoop(ctx, c, *taskInterval, runner, disk, events)
		}()
	} else {
		close(tasksDone)
	}
	pings, failed := a.pingLoop(ctx, c, segs, disk, *interval, events)
	<-tasksDone
	logf(events, "stopping after %d pings (%d failed)", pings, failed)
	if *unmount {
		for _, s := range segs {
			uctx, cancel := context.WithTimeout(context.Background(), a.timeout)
			sid, _ := client.UUIDFromBytes(s.GetId())
			if _, err := c.UnmountSegment(uctx, sid); err != nil {
				fmt.Fprintf(a.stderr, "unmount %s: %s\n", sid, errorLine(err))
			} else {
				logf(events, "unmounted %s", sid)
			}
			cancel()
		}
	}
	return nil
}

// mountAll mounts segs (idempotent, so retried calls are safe).
func (a *app) mountAll(c *client.Client, segs []*metadv1.SegmentDesc) error {
	for _, s := range segs {
		ctx, cancel := a.callCtx()
		err := c.MountSegment(ctx, s)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// pingLoop pings every interval until ctx ends, reporting leader changes and remounting segments
// the cluster no longer has. It returns the pings sent and how many failed.
//
// One ping (its failovers included) may take at most a third of the client ttl the cluster
// reports (and --timeout): a ping stuck behind a paused or cut-off node gives up in time for the
// next one to reach the new leader long before the ttl runs out. The client's per-attempt bound
// normally moves the ping to another node within a second anyway.
func (a *app) pingLoop(ctx context.Context, c *client.Client, segs []*metadv1.SegmentDesc, disk *localDisk, interval time.Duration, events io.Writer) (int, int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var pings, failed int
	var leader string
	var term uint64
	limit := a.timeout
	for {
		pctx, cancel := context.WithTimeout(ctx, limit)
		resp, err := c.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return pings, failed
		}
		pings++
		if err != nil {
			failed++
			fmt.Fprintf(a.stderr, "%s ping failed: %s\n", time.Now().Format("15:04:05"), errorLine(err))
		} else {
			if ttl := time.Duration(resp.GetClientTtlMs()) * time.Millisecond; ttl > 0 {
				limit = min(a.timeout, max(ttl/3, time.Millisecond))
			}
			if resp.GetLeaderName() != leader || resp.GetTerm() != term {
				leader, term = resp.GetLeaderName(), resp.GetTerm()
				logf(events, "leader %s at %s (term %d)", orDash(leader), orDash(resp.GetLeaderAddress()), term)
			}
			if missing := missingSegments(segs, resp.GetSegmentIds()); len(missing) > 0 {
				logf(events, "the cluster lost %s of this worker (expired?); remounting", plural(len(missing), "segment"))
				if err := a.mountAll(c, missing); err != nil {
					fmt.Fprintf(a.stderr, "remount failed: %s\n", errorLine(err))
				}
			}
			if disk != nil && !slices.ContainsFunc(resp.GetSegmentIds(), func(id []byte) bool { return bytes.Equal(id, disk.id.Bytes()) }) {
				logf(events, "the cluster lost this worker's local disk (expired?); registering it again")
				if err := disk.mount(a, c); err != nil {
					fmt.Fprintf(a.stderr, "local disk remount failed: %s\n", errorLine(err))
				}
			}
		}
		select {
		case <-ctx.Done():
			return pings, failed
		case <-t.C:
		}
	}
}

// missingSegments returns the segments of segs whose ids are not in mounted.
func missingSegments(segs []*metadv1.SegmentDesc, mounted [][]byte) []*metadv1.SegmentDesc {
	var out []*metadv1.SegmentDesc
	for _, s := range segs {
		found := false
		for _, m := range mounted {
			if bytes.Equal(m, s.GetId()) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

// logf writes a timestamped event line.
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// taskLoop runs the tasks the cluster assigns to this worker (client.RunTasksWith: moves and
// copies with nothing to copy, offloads with runner's) every interval until ctx ends, logging each
// batch and each failure.
func (a *app) taskLoop(ctx context.Context, c *client.Client, interval time.Duration, runner client.TaskRunner, disk *localDisk, events io.Writer) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, a.timeout)
		n, err := c.RunTasksWith(cctx, 64, runner)
		cancel()
		if disk != nil {
			disk.settle() // the batch's offloads are reported
		}
		if n > 0 || (err != nil && ctx.Err() == nil) {
			msg := ""
			if err != nil {
				msg = ": " + errorLine(err)
			}
			logf(events, "ran %s%s", plural(n, "task"), msg)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lockedWriter serializes writes to w. Concurrency contract: mu guards w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
