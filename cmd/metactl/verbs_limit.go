package main

import (
	"fmt"
	"text/tabwriter"

	"metad/proto/metadv1"
)

// limitView is one limit record (or one principal's limits) as limit ls shows it; 0 is no limit.
type limitView struct {
	Principal   string `json:"principal,omitempty"`
	Role        string `json:"role,omitempty"`
	CallsPerSec uint32 `json:"calls_per_sec"`
	KeysPerSec  uint32 `json:"keys_per_sec"`
	Streams     uint32 `json:"streams"`
}

func limitViewOf(l *metadv1.Limit) limitView {
	return limitView{Principal: l.GetPrincipal(), Role: l.GetRole(), CallsPerSec: l.GetCallsPerSec(),
		KeysPerSec: l.GetKeysPerSec(), Streams: l.GetStreams()}
}

// target is a limit record's target as limit ls prints it.
func (l limitView) target() string {
	if l.Principal != "" {
		return "principal " + l.Principal
	}
	return "role " + l.Role
}

// limitNum prints a limit, "-" for none.
func limitNum(v uint32) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

func runLimitSet(a *app, v *verb, args []string) error { return limitChange(a, v, args, true) }

func runLimitRm(a *app, v *verb, args []string) error { return limitChange(a, v, args, false) }

// limitChange sets (or removes: every limit 0) the limits of --principal or --role.
func limitChange(a *app, v *verb, args []string, set bool) error {
	fs := a.flags(v)
	principal := fs.String("principal", "", "the principal the limits are of")
	role := fs.String("role", "", "the role the limits are of (admin, reader, worker:<client-id>, tenant:<tenant>), or * for every principal")
	var calls, keys, streams *uint
	if set {
		calls = fs.Uint("calls-per-sec", 0, "calls per second on each member (0: not set)")
		keys = fs.Uint("keys-per-sec", 0, "keys per second on each member: a batch's items, a scan page's bound (0: not set)")
		streams = fs.Uint("streams", 0, "watch streams open at once on each member (0: not set)")
	}
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if (*principal == "") == (*role == "") {
		return usagef(v, "give exactly one of --principal and --role")
	}
	l := &metadv1.Limit{Principal: *principal, Role: *role}
	if set {
		for _, f := range []struct {
			name string
			v    *uint
			to   *uint32
		}{{"calls-per-sec", calls, &l.CallsPerSec}, {"keys-per-sec", keys, &l.KeysPerSec}, {"streams", streams, &l.Streams}} {
			if *f.v > 1<<32-1 {
				return usagef(v, "--%s %d is too large", f.name, *f.v)
			}
			*f.to = uint32(*f.v)
		}
		if l.CallsPerSec == 0 && l.KeysPerSec == 0 && l.Streams == 0 {
			return usagef(v, "set at least one of --calls-per-sec, --keys-per-sec and --streams (limit rm removes a record)")
		}
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	if err := c.SetLimit(ctx, l); err != nil {
		return err
	}
	view := limitViewOf(l)
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		if !set {
			fmt.Fprintf(tw, "removed the limits of %s\n", view.target())
			return
		}
		fmt.Fprintf(tw, "limits of %s: calls/s %s, keys/s %s, streams %s (on each member)\n", view.target(),
			limitNum(view.CallsPerSec), limitNum(view.KeysPerSec), limitNum(view.Streams))
	})
}

func runLimitLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	principal := fs.String("principal", "", "also show the limits that apply to this principal")
	stale := fs.Bool("stale", false, "let any node answer from its own state")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.ListLimits(ctx, *principal, readOpts(*stale)...)
	if err != nil {
		return err
	}
	view := make([]limitView, 0, len(resp.GetLimits()))
	for _, l := range resp.GetLimits() {
		view = append(view, limitViewOf(l))
	}
	out := map[string]any{"limits": view}
	var eff *limitView
	if e := resp.GetEffective(); e != nil {
		ev := limitViewOf(e)
		eff, out["effective"] = &ev, ev
	}
	return a.printer().emit(out, func(tw *tabwriter.Writer) {
		row(tw, "TARGET", "CALLS/S", "KEYS/S", "STREAMS")
		for _, l := range view {
			row(tw, l.target(), limitNum(l.CallsPerSec), limitNum(l.KeysPerSec), limitNum(l.Streams))
		}
		if eff != nil {
			row(tw, "= "+eff.target()+" (applies)", limitNum(eff.CallsPerSec), limitNum(eff.KeysPerSec), limitNum(eff.Streams))
		}
		fmt.Fprintln(tw, "(each member enforces them on the calls it is sent; - is no limit)")
	})
}
