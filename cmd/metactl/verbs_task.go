package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"metad/client"
	"metad/proto/metadv1"
)

// taskFlags are the flags of the copy and move verbs.
type taskFlags struct {
	tenant, clientID, source, targets string
	replicas                          uint
}

func (f *taskFlags) register(fs *flag.FlagSet, start, move bool) {
	fs.StringVar(&f.tenant, "tenant", "", "tenant (default \"default\")")
	fs.StringVar(&f.clientID, "client", "", "copying client id (default: derived from user and host)")
	if !start {
		return
	}
	fs.StringVar(&f.source, "source", "", "segment id holding the COMPLETE replica to read (required)")
	if move {
		fs.StringVar(&f.targets, "to", "", "segment id to move to (default: placed on the source's tier)")
		return
	}
	fs.StringVar(&f.targets, "to", "", "comma-separated segment ids to copy to (default: placed on the source's tier)")
	fs.UintVar(&f.replicas, "replicas", 0, "targets to place when --to names none, 1..8 (0 = 1)")
}

// taskView is the result of copy start and move start.
type taskView struct {
	Tenant   string        `json:"tenant"`
	Key      string        `json:"key"`
	Kind     string        `json:"kind"`
	ClientID string        `json:"client_id"`
	Source   []replicaView `json:"source"`
	Targets  []replicaView `json:"targets"`
}

func runCopyStart(a *app, v *verb, args []string) error { return doTaskStart(a, v, args, false) }
func runMoveStart(a *app, v *verb, args []string) error { return doTaskStart(a, v, args, true) }

func doTaskStart(a *app, v *verb, args []string, move bool) error {
	fs := a.flags(v)
	var f taskFlags
	f.register(fs, true, move)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if f.replicas > 8 {
		return usagef(v, "--replicas is at most 8")
	}
	src, err := client.ParseUUID(f.source)
	if err != nil {
		return usagef(v, "--source: %v", err)
	}
	var targets [][]byte
	for _, s := range client.SplitEndpoints(f.targets) {
		u, err := client.ParseUUID(s)
		if err != nil {
			return usagef(v, "--to: %v", err)
		}
		targets = append(targets, u[:])
	}
	if move && len(targets) > 1 {
		return usagef(v, "--to names one segment for a move")
	}
	id, err := parseClientID(f.clientID, defaultClientID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	key, kind := pos[0], "copy"
	var source *metadv1.Replica
	var tgts []*metadv1.Replica
	if move {
		kind = "move"
		var target []byte
		if len(targets) == 1 {
			target = targets[0]
		}
		var t *metadv1.Replica
		source, t, err = c.MoveStart(ctx, f.tenant, key, src[:], target)
		tgts = []*metadv1.Replica{t}
	} else {
		source, tgts, err = c.CopyStart(ctx, f.tenant, key, src[:], targets, uint32(f.replicas))
	}
	if err != nil {
		return err
	}
	view := taskView{Tenant: a.tenantName(f.tenant), Key: key, Kind: kind, ClientID: id.String(),
		Source: replicaViews([]*metadv1.Replica{source}), Targets: replicaViews(tgts)}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s start %s in tenant %s: %s PROCESSING; finish with: metactl %s end %s --client %s\n\nsource:\n",
			kind, key, view.Tenant, plural(len(tgts), "target"), kind, key, view.ClientID)
		replicaTable(tw, view.Source)
		fmt.Fprintf(tw, "\ntargets:\n")
		replicaTable(tw, view.Targets)
	})
}

func runCopyEnd(a *app, v *verb, args []string) error    { return doTaskEnd(a, v, args, false, false) }
func runCopyRevoke(a *app, v *verb, args []string) error { return doTaskEnd(a, v, args, false, true) }
func runMoveEnd(a *app, v *verb, args []string) error    { return doTaskEnd(a, v, args, true, false) }
func runMoveRevoke(a *app, v *verb, args []string) error { return doTaskEnd(a, v, args, true, true) }

func doTaskEnd(a *app, v *verb, args []string, move, revoke bool) error {
	fs := a.flags(v)
	var f taskFlags
	f.register(fs, false, move)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := parseClientID(f.clientID, defaultClientID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	key, kind, action := pos[0], "copy", "ended"
	if move {
		kind = "move"
	}
	switch {
	case move && revoke:
		err = c.MoveRevoke(ctx, f.tenant, key)
	case move:
		err = c.MoveEnd(ctx, f.tenant, key)
	case revoke:
		err = c.CopyRevoke(ctx, f.tenant, key)
	default:
		err = c.CopyEnd(ctx, f.tenant, key)
	}
	if revoke {
		action = "revoked"
	}
	if err != nil {
		return err
	}
	view := map[string]any{"tenant": a.tenantName(f.tenant), "key": key, "kind": kind, action: true}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s of %s %s\n", kind, key, action)
	})
}

// scheduledView is a scheduled task as task show prints it.
type scheduledView struct {
	ID        uint64   `json:"task_id"`
	Kind      string   `json:"kind"`
	Tenant    string   `json:"tenant"`
	Key       string   `json:"key"`
	Source    string   `json:"source_segment_id"`
	Targets   []string `json:"target_segment_ids"`
	Replicas  uint32   `json:"replicas"`
	ClientID  string   `json:"client_id"`
	State     string   `json:"state"`
	CreatedNs int64    `json:"created_unix_nano"`
	UpdatedNs int64    `json:"updated_unix_nano"`
	Message   string   `json:"message"`
}

func scheduledOf(t *metadv1.ScheduledTask) scheduledView {
	v := scheduledView{ID: t.GetTaskId(), Kind: strings.ToLower(strings.TrimPrefix(t.GetKind().String(), "TASK_KIND_")),
		Tenant: t.GetTenant(), Key: string(t.GetKey()), Source: uuidText(t.GetSourceSegmentId()), Replicas: t.GetReplicas(),
		ClientID: uuidText(t.GetClientId()), State: strings.TrimPrefix(t.GetState().String(), "TASK_STATE_"),
		CreatedNs: t.GetCreatedUnixNano(), UpdatedNs: t.GetUpdatedUnixNano(), Message: t.GetMessage(), Targets: []string{}}
	for _, id := range t.GetTargetSegmentIds() {
		v.Targets = append(v.Targets, uuidText(id))
	}
	return v
}

func uuidText(b []byte) string {
	var u client.UUID
	if len(b) != len(u) {
		return ""
	}
	copy(u[:], b)
	return u.String()
}

func runTaskCreateCopy(a *app, v *verb, args []string) error { return doTaskCreate(a, v, args, false) }
func runTaskCreateMove(a *app, v *verb, args []string) error { return doTaskCreate(a, v, args, true) }

func doTaskCreate(a *app, v *verb, args []string, move bool) error {
	fs := a.flags(v)
	var f taskFlags
	f.register(fs, true, move)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if f.replicas > 8 {
		return usagef(v, "--replicas is at most 8")
	}
	var source []byte
	if f.source != "" {
		u, err := client.ParseUUID(f.source)
		if err != nil {
			return usagef(v, "--source: %v", err)
		}
		source = u[:]
	}
	var targets [][]byte
	for _, s := range client.SplitEndpoints(f.targets) {
		u, err := client.ParseUUID(s)
		if err != nil {
			return usagef(v, "--to: %v", err)
		}
		targets = append(targets, u[:])
	}
	if move && len(targets) > 1 {
		return usagef(v, "--to names one segment for a move")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	key, kind := pos[0], "copy"
	var id uint64
	if move {
		kind = "move"
		var target []byte
		if len(targets) == 1 {
			target = targets[0]
		}
		id, err = c.CreateMoveTask(ctx, f.tenant, key, source, target)
	} else {
		id, err = c.CreateCopyTask(ctx, f.tenant, key, source, targets, uint32(f.replicas))
	}
	if err != nil {
		return err
	}
	view := map[string]any{"task_id": id, "kind": kind, "tenant": a.tenantName(f.tenant), "key": key}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s task %d scheduled for %s in tenant %s; see: metactl task show %d\n", kind, id, key, view["tenant"], id)
	})
}

func runTaskShow(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil {
		return usagef(v, "TASK-ID: %v", err)
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	t, err := c.QueryTask(ctx, *tenant, id)
	if err != nil {
		return err
	}
	view := scheduledOf(t)
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "TASK\tKIND\tSTATE\tTENANT\tKEY\tSOURCE\tTARGETS\tCLIENT\tMESSAGE\n")
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", view.ID, view.Kind, view.State, view.Tenant, view.Key,
			view.Source, strings.Join(view.Targets, ","), view.ClientID, view.Message)
	})
}

// taskListView is the result of task ls.
type taskListView struct {
	Tenant    string          `json:"tenant"`
	Tasks     []scheduledView `json:"tasks"`
	Truncated bool            `json:"truncated"`
}

func runTaskLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	state := fs.String("state", "", "only tasks in this state: PENDING, PROCESSING, SUCCESS or FAILED (default: all)")
	after := fs.Uint64("after", 0, "only tasks with a larger id (the last id of the previous page)")
	limit := fs.Uint("limit", 0, "tasks per page, 1..4096 (0 = 1024)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	st := metadv1.TaskState_TASK_STATE_UNSPECIFIED
	if *state != "" {
		n, ok := metadv1.TaskState_value["TASK_STATE_"+strings.ToUpper(*state)]
		if !ok || n == 0 {
			return usagef(v, "--state: %q is not PENDING, PROCESSING, SUCCESS or FAILED", *state)
		}
		st = metadv1.TaskState(n)
	}
	if *limit > 4096 {
		return usagef(v, "--limit is at most 4096")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	tasks, more, err := c.ListTasks(ctx, *tenant, *after, uint32(*limit), st)
	if err != nil {
		return err
	}
	view := taskListView{Tenant: a.tenantName(*tenant), Tasks: []scheduledView{}, Truncated: more}
	for _, t := range tasks {
		view.Tasks = append(view.Tasks, scheduledOf(t))
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "TASK\tKIND\tSTATE\tKEY\tSOURCE\tCLIENT\tMESSAGE\n")
		for _, t := range view.Tasks {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, t.State, t.Key, t.Source, t.ClientID, t.Message)
		}
		if more {
			fmt.Fprintf(tw, "(more: --after %d)\n", view.Tasks[len(view.Tasks)-1].ID)
		}
	})
}
