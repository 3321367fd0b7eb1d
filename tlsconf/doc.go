// Package tlsconf holds metad's TLS material: the identities that certificates carry, the
// creation of a cluster's certificates (what `metactl cert` and `make run` use), and the TLS
// configurations of the listeners and dialers, re-read from their files when they change.
//
// # Identities
//
// A certificate issued for metad names exactly one identity in a URI subject alternative name:
//
//	metad://member/<name>      a cluster member (node certificate; server and client use)
//	metad://principal/<name>   a principal of the API (client certificate)
//
// The common name repeats the name for people reading the certificate; only the URI counts. A
// member's certificate lets it serve its listeners, append and vote as that member on the peer
// transport, and forward calls on behalf of the principals it authenticated; a principal's
// certificate authenticates API calls as that principal, whose roles the replicated auth state
// holds. Names follow the rules of tenant ids (ValidName).
package tlsconf
