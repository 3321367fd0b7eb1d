package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"metad/client"
	"metad/proto/metadv1"
)

// lsView is one key that ls lists; with --regex, where its replicas are.
type lsView struct {
	Key      string `json:"key"`
	Size     uint64 `json:"size,omitempty"`
	Replicas int    `json:"replicas,omitempty"`
}

// runLs lists a tenant's keys in byte order, page after page: all of them, those with a prefix,
// or (--regex) the readable objects whose keys the pattern matches, which leases them as get does.
func runLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	prefix := fs.String("prefix", "", "only keys that start with this")
	regex := fs.String("regex", "", "only readable objects whose keys this Go regexp (RE2) matches anywhere")
	limit := fs.Uint("limit", 0, "show at most this many keys (0 = all)")
	stale := fs.Bool("stale", false, "let any node answer from its own state (no read barrier, no lease)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if *prefix != "" && *regex != "" {
		return usagef(v, "--prefix and --regex exclude each other (anchor the regexp with ^ instead)")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	page := uint32(0)
	if *limit > 0 && *limit < 1024 {
		page = uint32(*limit)
	}
	var view []lsView
	var token []byte
	for {
		var next []byte
		if *regex != "" {
			resp, err := c.GetByRegexPage(ctx, *tenant, *regex, token, page, opts...)
			if err != nil {
				return err
			}
			for _, it := range resp.GetItems() {
				view = append(view, lsView{Key: displayKey(it.GetKey()), Size: it.GetSize(), Replicas: len(it.GetReplicas())})
			}
			next = resp.GetNextPageToken()
		} else {
			keys, n, err := c.ListObjectKeysPage(ctx, *tenant, *prefix, token, page, opts...)
			if err != nil {
				return err
			}
			for _, k := range keys {
				view = append(view, lsView{Key: displayKey([]byte(k))})
			}
			next = n
		}
		if *limit > 0 && uint(len(view)) >= *limit {
			view = view[:*limit]
			break
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	if view == nil {
		view = []lsView{}
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		if *regex == "" {
			row(tw, "KEY")
			for _, k := range view {
				row(tw, k.Key)
			}
			return
		}
		row(tw, "KEY", "SIZE", "REPLICAS")
		for _, k := range view {
			row(tw, k.Key, formatSize(k.Size), k.Replicas)
		}
	})
}

// rmResultView is one key's outcome in rm --regex and replica-clear: its reason by the stable
// name errors carry (OBJECT_HAS_LEASE), and the message.
type rmResultView struct {
	Key    string `json:"key"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

func resultView(key []byte, st *metadv1.Status) rmResultView {
	r := rmResultView{Key: displayKey(key), OK: st.GetReason() == metadv1.Reason_REASON_UNSPECIFIED}
	if !r.OK {
		r.Reason, r.Error = strings.TrimPrefix(st.GetReason().String(), "REASON_"), st.GetMessage()
	}
	return r
}

// runRmRegex is rm --regex: RemoveByRegex page after page, one line per matching key.
func runRmRegex(a *app, tenant, pattern string, force bool) error {
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	results, err := c.RemoveByRegex(ctx, tenant, pattern, force)
	view := make([]rmResultView, len(results))
	removed := 0
	for i, r := range results {
		view[i] = resultView(r.GetKey(), r.GetStatus())
		if view[i].OK {
			removed++
		}
	}
	if err != nil {
		return err
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY", "RESULT")
		for _, r := range view {
			res := "removed"
			if !r.OK {
				res = r.Error
			}
			row(tw, r.Key, res)
		}
		fmt.Fprintf(tw, "removed %s of %d matching\n", plural(removed, "object"), len(view))
	})
}

// runReplicaClear drops the replicas of the keys that live on the client's segments (one, or all).
func runReplicaClear(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tenant := fs.String("tenant", "", "tenant (default \"default\")")
	segment := fs.String("segment", "", "the segment to clear (default: every segment of the client)")
	clientID := fs.String("client", "", "the client that owns the segments (default: derived from user and host)")
	pos, err := a.parse(v, fs, args, 1, -1)
	if err != nil {
		return err
	}
	id, err := parseClientID(*clientID, defaultClientID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	var seg client.UUID
	if *segment != "" {
		if seg, err = client.ParseUUID(*segment); err != nil {
			return usagef(v, "--segment: %v", err)
		}
	}
	c, err := a.client(id)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	sts, err := c.BatchReplicaClear(ctx, *tenant, pos, seg)
	if err != nil {
		return err
	}
	view := make([]rmResultView, len(sts))
	for i, st := range sts {
		view[i] = resultView([]byte(pos[i]), st)
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY", "RESULT")
		for _, r := range view {
			res := "cleared"
			if !r.OK {
				res = r.Error
			}
			row(tw, r.Key, res)
		}
	})
}
