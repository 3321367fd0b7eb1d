package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// watchView is one event as watch prints it (one line; -o json: one JSON object a line). Time is
// the leader's clock at the entry (RFC 3339); Segment is a segment event's segment.
type watchView struct {
	Revision string        `json:"revision"`
	Kind     string        `json:"kind"`
	Time     string        `json:"time"`
	Tenant   string        `json:"tenant"`
	Key      string        `json:"key"`
	Group    string        `json:"group,omitempty"`
	Size     uint64        `json:"size"`
	Replicas []replicaView `json:"replicas"`
	Segment  *watchSegment `json:"segment,omitempty"`
}

// watchSegment is a segment event's segment, as it was mounted.
type watchSegment struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Tier     string `json:"tier"`
	Base     uint64 `json:"base"`
	Size     uint64 `json:"size"`
	Endpoint string `json:"endpoint"`
	Owner    string `json:"owner_client_id"`
}

// watchKinds is the kinds --kinds takes, for its usage.
var watchKinds = func() string {
	var names []string
	for n := int32(1); ; n++ {
		name, ok := metadv1.WatchEventKind_name[n]
		if !ok {
			return strings.Join(names, ", ")
		}
		names = append(names, strings.TrimPrefix(name, "WATCH_EVENT_KIND_"))
	}
}()

// runWatch prints the changes of objects, groups and segments as they happen, one a line, until
// interrupted (or --count events): from the next change, or from --from INDEX[.POS]. The client
// resumes on another member when one fails; a start no member retains ends it with
// WATCH_COMPACTED.
func runWatch(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	all := fs.Bool("all-tenants", false, "every tenant (reader or admin role)")
	prefix := fs.String("prefix", "", "only keys and groups that start with this (no segment events)")
	kinds := fs.String("kinds", "", "only these kinds, comma-separated: "+watchKinds)
	from := fs.String("from", "", "first revision, INDEX or INDEX.POS (default: the next change)")
	count := fs.Uint("count", 0, "stop after this many events (0: until interrupted)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	opts := client.WatchOptions{Tenant: *tenant, AllTenants: *all, Progress: 5 * time.Second}
	if *prefix != "" {
		opts.Prefix = []byte(*prefix)
	}
	for _, k := range strings.Split(*kinds, ",") {
		if k = strings.TrimSpace(strings.ToUpper(k)); k == "" {
			continue
		}
		n, ok := metadv1.WatchEventKind_value["WATCH_EVENT_KIND_"+k]
		if !ok || n == 0 {
			return usagef(v, "--kinds: unknown kind %q (%s)", k, watchKinds)
		}
		opts.Kinds = append(opts.Kinds, metadv1.WatchEventKind(n))
	}
	if *from != "" {
		r, err := parseRevision(*from)
		if err != nil {
			return usagef(v, "--from: %v", err)
		}
		opts.Start = r
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	// The lines go out through a writer goroutine, so that a signal ends the watch even while the
	// output blocks (a pipe nobody reads): the process exits with the writer still blocked.
	lines := make(chan []byte, 1024)
	written := make(chan error, 1)
	go func() {
		var werr error
		for b := range lines {
			if werr == nil {
				_, werr = a.stdout.Write(b)
			}
		}
		written <- werr
	}()
	seen := uint(0)
	errDone := fmt.Errorf("done")
	err = c.Watch(a.ctx, opts, func(resp *metadv1.WatchResponse) error {
		for _, e := range resp.GetEvents() {
			ev := watchViewOf(e)
			var b []byte
			if a.output == "json" {
				j, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				b = append(j, '\n')
			} else {
				b = []byte(watchLine(&ev) + "\n")
			}
			select {
			case lines <- b:
			case <-a.ctx.Done():
				return a.ctx.Err()
			}
			if seen++; *count > 0 && seen >= *count {
				return errDone
			}
		}
		return nil
	})
	close(lines)
	if a.ctx.Err() != nil {
		// Interrupted: the events received are written if the output takes them within a second,
		// else dropped.
		select {
		case <-written:
		case <-time.After(time.Second):
		}
		return nil
	}
	if werr := <-written; werr != nil {
		return werr
	}
	if err == errDone {
		return nil
	}
	return err
}

// watchLine is an event as a table line: revision, kind, tenant, then the key, size and replicas
// of an object, the group of a group event, the segment (id, name, tier, endpoint) of a segment's.
func watchLine(ev *watchView) string {
	head := ev.Revision + "\t" + ev.Kind + "\t" + ev.Tenant + "\t"
	switch {
	case ev.Segment != nil:
		s := ev.Segment
		return head + s.ID + "\t" + s.Name + "\t" + s.Tier + ":" + s.Endpoint
	case ev.Key == "":
		return head + ev.Group
	}
	reps := make([]string, len(ev.Replicas))
	for i, r := range ev.Replicas {
		reps[i] = r.Tier + ":" + r.SegmentID + "@" + strconv.FormatUint(r.Offset, 10)
	}
	return head + ev.Key + "\t" + strconv.FormatUint(ev.Size, 10) + "\t" + strings.Join(reps, ",")
}

func watchViewOf(e *metadv1.WatchEvent) watchView {
	v := watchView{Revision: client.RevisionString(e.GetRevision()),
		Kind: strings.TrimPrefix(e.GetKind().String(), "WATCH_EVENT_KIND_"), Tenant: e.GetTenant(),
		Key: displayKey(e.GetKey()), Size: e.GetSize(), Replicas: replicaViews(e.GetReplicas())}
	if ns := e.GetTimeUnixNano(); ns != 0 {
		v.Time = time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
	}
	if len(e.GetGroup()) > 0 {
		v.Group = displayKey(e.GetGroup())
	}
	if d := e.GetSegment(); d != nil {
		s := segView(d)
		v.Segment = &watchSegment{ID: s.ID, Name: s.Name, Tier: s.Tier, Base: s.Base, Size: s.Size, Endpoint: s.Endpoint, Owner: s.Owner}
	}
	return v
}

// parseRevision reads INDEX or INDEX.POS.
func parseRevision(s string) (*metadv1.Revision, error) {
	idx, pos, hasPos := strings.Cut(s, ".")
	i, err := strconv.ParseUint(idx, 10, 64)
	if err != nil || i == 0 {
		return nil, fmt.Errorf("%q: want INDEX or INDEX.POS, INDEX at least 1", s)
	}
	r := &metadv1.Revision{Index: i}
	if hasPos {
		p, err := strconv.ParseUint(pos, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q: want INDEX or INDEX.POS", s)
		}
		r.Position = uint32(p)
	}
	return r, nil
}
