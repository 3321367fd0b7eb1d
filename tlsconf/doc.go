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
//
// # Reloading
//
// A Reloader holds one side's certificate, key and CA bundle (Files), loaded at start and again
// by Reload (metad calls it on SIGHUP) and by Run, which polls the files' content hash. A load is
// all or nothing: a file that does not parse, a key that does not match its certificate, a
// certificate that is not valid now, does not chain to the bundle or names another identity than
// the first load did, or a bundle with no certificate, is refused, logged and counted
// (metad_tls_reloads_total{result="error"}), and the last good material stays. Replace the files
// by rename: a half-written file is refused like a bad one and tried again when it changes.
//
//	r, _ := tlsconf.NewReloader(tlsconf.Files{CA: ca, Cert: cert, Key: key}, log)
//	lis := tls.NewListener(l, r.ServerConfig(tls.VerifyClientCertIfGiven))
//	dial := r.ClientConfig()
//	go r.Run(ctx, 5*time.Second)
//
// ServerConfig and ClientConfig read the current material at every handshake (GetConfigForClient
// on a listener, GetClientCertificate and VerifyConnection on a dialer), so a reloaded bundle is
// trusted from the next handshake on; connections already open keep what they were set up with.
package tlsconf
