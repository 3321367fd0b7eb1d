package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// keyView is an API key as key ls shows it (never its secret or hash).
type keyView struct {
	KeyID     string `json:"key_id"`
	Principal string `json:"principal"`
	CreatedMs int64  `json:"created_ms"`
	ExpiresMs int64  `json:"expires_ms"` // 0: never
}

// roleView is one principal's role bindings as role ls shows them.
type roleView struct {
	Principal string   `json:"principal"`
	Roles     []string `json:"roles"`
}

// msTime shows a Unix millisecond time in UTC; 0 is never.
func msTime(ms int64) string {
	if ms == 0 {
		return "never"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func runKeyCreate(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	principal := fs.String("principal", "", "the principal the key authenticates as (required)")
	ttl := fs.Duration("ttl", 0, "lifetime of the key, e.g. 720h (0 = never expires; at most ten years)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if *principal == "" {
		return usagef(v, "--principal is required")
	}
	if *ttl < 0 {
		return usagef(v, "--ttl must not be negative")
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	k, err := c.CreateKey(ctx, *principal, *ttl)
	if err != nil {
		return err
	}
	view := map[string]any{"key_id": k.GetKeyId(), "principal": *principal, "expires_ms": k.GetExpiresMs(), "token": k.GetToken()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "created key %s for %s (expires %s)\n", k.GetKeyId(), *principal, msTime(k.GetExpiresMs()))
		fmt.Fprintf(tw, "token: %s\n", k.GetToken())
		fmt.Fprintf(tw, "the token is shown this once: the cluster keeps only its hash\n")
	})
}

func runKeyLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
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
	opts := readOpts(*stale)
	keys, err := c.ListKeys(ctx, opts...)
	if err != nil {
		return err
	}
	view := make([]keyView, 0, len(keys))
	for _, k := range keys {
		view = append(view, keyView{KeyID: k.GetKeyId(), Principal: k.GetPrincipal(), CreatedMs: k.GetCreatedMs(), ExpiresMs: k.GetExpiresMs()})
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "KEY", "PRINCIPAL", "CREATED", "EXPIRES")
		for _, k := range view {
			row(tw, k.KeyID, k.Principal, msTime(k.CreatedMs), msTime(k.ExpiresMs))
		}
	})
}

func runKeyRevoke(a *app, v *verb, args []string) error {
	fs := a.flags(v)
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
	if err := c.RevokeKey(ctx, pos[0]); err != nil {
		return err
	}
	return a.printer().emit(map[string]any{"key_id": pos[0], "revoked": true}, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "revoked key %s\n", pos[0])
	})
}

func runRoleGrant(a *app, v *verb, args []string) error {
	return roleChange(a, v, args, true)
}

func runRoleRevoke(a *app, v *verb, args []string) error {
	return roleChange(a, v, args, false)
}

// roleChange grants (or revokes) the role of PRINCIPAL ROLE.
func roleChange(a *app, v *verb, args []string, grant bool) error {
	fs := a.flags(v)
	pos, err := a.parse(v, fs, args, 2, 2)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	call, done := c.RevokeRole, "revoked"
	if grant {
		call, done = c.GrantRole, "granted"
	}
	if err := call(ctx, pos[0], pos[1]); err != nil {
		return err
	}
	return a.printer().emit(map[string]any{"principal": pos[0], "role": pos[1], done: true}, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s role %s of %s\n", done, pos[1], pos[0])
	})
}

func runRoleLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
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
	opts := readOpts(*stale)
	resp, err := c.ListRoles(ctx, opts...)
	if err != nil {
		return err
	}
	view := make([]roleView, 0, len(resp.GetBindings()))
	for _, b := range resp.GetBindings() {
		view = append(view, roleView{Principal: b.GetPrincipal(), Roles: b.GetRoles()})
	}
	out := map[string]any{"auth_revision": resp.GetAuthRevision(), "bindings": view}
	return a.printer().emit(out, func(tw *tabwriter.Writer) {
		row(tw, "PRINCIPAL", "ROLES")
		for _, b := range view {
			row(tw, b.Principal, strings.Join(b.Roles, ","))
		}
		fmt.Fprintf(tw, "(root is admin without a binding; auth revision %d)\n", resp.GetAuthRevision())
	})
}
