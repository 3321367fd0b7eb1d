// Package auth is the cluster's auth domain: API keys and role bindings as replicated state,
// the rules that decide each auth command (the same verdict for the leader's Check and for Apply),
// the token format, the principal name rule and the role check.
//
// The state is replicated through the log (CreateKey, RevokeKey, GrantRole, RevokeRole) and carried
// in snapshots (Records, Builder). The cluster keeps only the SHA-256 of a key's secret; the leader
// draws ids and secrets (crypto/rand, package service) and stamps the times, so Apply stays a
// function of (state, entry). Every auth command that changes the state bumps the revision; a
// command authorized against an older revision is refused at apply (AUTH_REVISION_STALE, Stale),
// so a key or role revoked between a request's check and its commit cannot slip the request in.
//
// A State is immutable: Apply returns a new one, and package fsm swaps it into the replicated
// state. Package service keeps the method rules (which role each method needs) and the tenant
// scoping of requests, and asks this package what a principal holds (IsAdmin, Holds, Args).
package auth
