package server

import (
	"errors"
	"fmt"
	"net/http"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/tlsconf"
)

// scrapeMethod is the method whose rule decides who may read the metrics page: the page names
// every tenant (metad_server_tenant_*{tenant}), as ListTenants does, so it is shown to whom
// ListTenants is (the reader and admin roles, and root).
const scrapeMethod = metadv1.Admin_ListTenants_FullMethodName

// ScrapeAuth wraps next, a page of the metrics address (/metrics, the profiler), so that it is
// served only to a request whose connection presented a verified client certificate (the metrics
// listener must verify certificates when given: tls.VerifyClientCertIfGiven) that names
//
//   - a member that speaks for the cluster (a member certificate of a server of this node's Raft
//     configuration, as auth.go believes a member), or
//   - a principal that may call Admin.ListTenants by this node's auth state (reader or admin, or
//     root), since the page shows what ListTenants does and more.
//
// No certificate, or one that names no identity, is answered 401 Unauthorized; a certificate whose
// holder may not see the page, 403 Forbidden; each with a line that says why. API keys are not
// taken: a scraper presents a certificate. Safe for concurrent use.
func (s *Server) ScrapeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.scrapeAllowed(r); err != nil {
			code := http.StatusForbidden
			if errors.Is(err, service.ErrUnauthenticated) {
				code = http.StatusUnauthorized
			}
			http.Error(w, err.Error(), code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// scrapeAllowed says why r may not read a metrics page (nil: it may); the error wraps
// service.ErrUnauthenticated or service.ErrPermissionDenied.
func (s *Server) scrapeAllowed(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return fmt.Errorf("%w: %s needs a verified client certificate (a member's, or that of a principal with the reader or admin role)",
			service.ErrUnauthenticated, r.URL.Path)
	}
	leaf := r.TLS.VerifiedChains[0][0]
	id, err := tlsconf.IdentityOf(leaf)
	if err != nil {
		return fmt.Errorf("%w: the client certificate names no principal or member (%v)", service.ErrUnauthenticated, err)
	}
	if id.Kind == tlsconf.Member {
		ca := &connAuth{id: id}
		_, ca.certErr = tlsconf.MemberOf(leaf)
		if err := s.memberStanding(ca); err != nil {
			return fmt.Errorf("%w: %v", service.ErrPermissionDenied, err)
		}
		return nil
	}
	if _, err := s.authz.Authorize(r.Context(), service.Caller{Principal: id.Name}, scrapeMethod, &metadv1.ListTenantsRequest{}); err != nil {
		return fmt.Errorf("%s shows every tenant, as Admin.ListTenants does: %w", r.URL.Path, err)
	}
	return nil
}
