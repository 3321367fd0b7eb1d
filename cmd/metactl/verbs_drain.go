package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	"metad/proto/metadv1"
)

// drainView is a drain job as drain status prints it.
type drainView struct {
	ID             uint64   `json:"drain_id"`
	State          string   `json:"state"`
	Segments       []string `json:"segment_ids"`
	Targets        []string `json:"target_segment_ids"`
	MaxConcurrency uint32   `json:"max_concurrency"`
	ObjectsLeft    uint64   `json:"objects_left"`
	Moved          uint64   `json:"moved"`
	Failed         uint64   `json:"failed"`
	InFlight       int      `json:"in_flight"`
	CreatedNs      int64    `json:"created_unix_nano"`
	UpdatedNs      int64    `json:"updated_unix_nano"`
}

func drainOf(j *metadv1.DrainJob) drainView {
	v := drainView{ID: j.GetDrainId(), State: strings.TrimPrefix(j.GetState().String(), "DRAIN_STATE_"),
		MaxConcurrency: j.GetMaxConcurrency(), ObjectsLeft: j.GetObjectsLeft(), Moved: j.GetMoved(), Failed: j.GetFailed(),
		InFlight: len(j.GetInFlightTaskIds()), CreatedNs: j.GetCreatedUnixNano(), UpdatedNs: j.GetUpdatedUnixNano(),
		Segments: []string{}, Targets: []string{}}
	for _, id := range j.GetSegmentIds() {
		v.Segments = append(v.Segments, uuidText(id))
	}
	for _, id := range j.GetTargetSegmentIds() {
		v.Targets = append(v.Targets, uuidText(id))
	}
	return v
}

// progress is one line of a drain's progress.
func (d drainView) progress() string {
	return fmt.Sprintf("drain %d %s: %d objects left, %d moved, %d failed, %d in flight", d.ID, d.State, d.ObjectsLeft,
		d.Moved, d.Failed, d.InFlight)
}

func parseSegmentList(v *verb, flag, list string) ([][]byte, error) {
	var out [][]byte
	for _, s := range client.SplitEndpoints(list) {
		u, err := client.ParseUUID(s)
		if err != nil {
			return nil, usagef(v, "--%s: %v", flag, err)
		}
		out = append(out, u.Bytes())
	}
	return out, nil
}

func runDrainStart(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	segs := fs.String("segments", "", "segments to drain, comma-separated ids")
	targets := fs.String("targets", "", "segments the moves go to, comma-separated ids (default: placed by each move)")
	conc := fs.Uint("max-concurrency", 16, "moves in flight at most, 1..1024")
	wait := fs.Bool("wait", false, "print the progress until the drain ends")
	interval := fs.Duration("interval", time.Second, "time between progress lines with --wait")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	ss, err := parseSegmentList(v, "segments", *segs)
	if err != nil {
		return err
	}
	ts, err := parseSegmentList(v, "targets", *targets)
	if err != nil {
		return err
	}
	switch {
	case len(ss) == 0:
		return usagef(v, "--segments names at least one segment")
	case *conc < 1 || *conc > 1024:
		return usagef(v, "--max-concurrency must be 1..1024")
	case *interval <= 0:
		return usagef(v, "--interval must be positive")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	j, err := c.StartDrain(ctx, ss, ts, uint32(*conc))
	cancel()
	if err != nil {
		return err
	}
	if *wait {
		return a.waitDrain(c, j.GetDrainId(), *interval)
	}
	view := drainOf(j)
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "drain %d started: %s closed to new allocations, %d objects to move; see: metactl drain status %d\n",
			view.ID, plural(len(view.Segments), "segment"), view.ObjectsLeft, view.ID)
	})
}

func runDrainStatus(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	wait := fs.Bool("wait", false, "print the progress until the drain ends (needs a JOB)")
	interval := fs.Duration("interval", time.Second, "time between progress lines with --wait")
	pos, err := a.parse(v, fs, args, 0, 1)
	if err != nil {
		return err
	}
	var id uint64
	if len(pos) == 1 {
		if id, err = strconv.ParseUint(pos[0], 10, 64); err != nil || id == 0 {
			return usagef(v, "JOB: want a drain id, got %q", pos[0])
		}
	}
	if *wait && id == 0 {
		return usagef(v, "--wait needs a JOB")
	}
	if *interval <= 0 {
		return usagef(v, "--interval must be positive")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	if *wait {
		return a.waitDrain(c, id, *interval)
	}
	ctx, cancel := a.callCtx()
	jobs, err := c.DrainStatus(ctx, id)
	cancel()
	if err != nil {
		return err
	}
	views := make([]drainView, 0, len(jobs))
	for _, j := range jobs {
		views = append(views, drainOf(j))
	}
	return a.printer().emit(views, func(tw *tabwriter.Writer) {
		row(tw, "ID", "STATE", "SEGMENTS", "LEFT", "MOVED", "FAILED", "IN-FLIGHT", "MAX")
		for _, d := range views {
			row(tw, d.ID, d.State, strings.Join(d.Segments, ","), d.ObjectsLeft, d.Moved, d.Failed, d.InFlight, d.MaxConcurrency)
		}
	})
}

// waitDrain prints drain id's progress every interval (a line when it changes) until it is no
// longer RUNNING, then prints the job as drain status does; a drain that was cancelled is an
// error. The drain runs in the cluster whether or not it is watched, so a poll that fails without
// an answer (UNAVAILABLE, or its --timeout passed: a busy or electing cluster) is reported and
// asked again at the next interval: the cluster gets one more --timeout to answer, and the wait
// gives up when it does not, or on an answer that refuses (DRAIN_NOT_FOUND).
func (a *app) waitDrain(c *client.Client, id uint64, interval time.Duration) error {
	events := a.stdout
	if a.output == "json" {
		events = a.stderr
	}
	last := ""
	var failingSince time.Time // when the first poll of the present run of failures failed
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ctx, cancel := a.callCtx()
		jobs, err := c.DrainStatus(ctx, id)
		cancel()
		if err != nil && a.ctx.Err() == nil && unanswered(err) {
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > a.timeout {
				return err
			}
			logf(events, "drain %d: progress not read (%v); asking again", id, err)
			select {
			case <-a.ctx.Done():
				return a.ctx.Err()
			case <-t.C:
			}
			continue
		}
		if err != nil {
			return err
		}
		failingSince = time.Time{}
		if len(jobs) != 1 {
			return fmt.Errorf("drain status %d answered %d jobs", id, len(jobs))
		}
		d := drainOf(jobs[0])
		if line := d.progress(); line != last {
			logf(events, "%s", line)
			last = line
		}
		if d.State != "RUNNING" {
			if err := a.printer().emit(d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "drain %d %s: %d moved, %d failed\n", d.ID, d.State, d.Moved, d.Failed)
			}); err != nil {
				return err
			}
			if d.State != "DONE" {
				return fmt.Errorf("drain %d ended %s", d.ID, d.State)
			}
			return nil
		}
		select {
		case <-a.ctx.Done():
			return a.ctx.Err()
		case <-t.C:
		}
	}
}

// unanswered reports whether err, a call's failure, came without an answer from the cluster: the
// call's retries ran out on UNAVAILABLE, or its deadline passed.
func unanswered(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func runDrainCancel(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || id == 0 {
		return usagef(v, "JOB: want a drain id, got %q", pos[0])
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	j, err := c.CancelDrain(ctx, id)
	if err != nil {
		return err
	}
	view := drainOf(j)
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "drain %d %s: %d moved, %d failed, %d objects left, %d moves in flight finish on their own\n",
			view.ID, view.State, view.Moved, view.Failed, view.ObjectsLeft, view.InFlight)
	})
}
