package server

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"metad/audit"
	metadv1 "metad/proto/metadv1"
)

// The audit log (Config.Audit): the interceptors write a line for every call of the Metadata and
// Admin services that may change the cluster's state (every method but the reads listed in
// readOnly, so that a method added later is audited until someone says it only reads), for the
// snapshot streams (a save hands out the whole state), and for every call refused for who made
// it or for a limit (UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED), whatever the
// method. A call a follower forwards to the leader has a line on both: forwarded_to on the
// follower, forwarded_by on the leader.

// readOnly lists the methods that change no replicated state and are not audited unless refused.
// Ping renews a client's liveness on the leader (soft state, many a second per worker).
var readOnly = map[string]bool{
	metadv1.Metadata_Get_FullMethodName:            true,
	metadv1.Metadata_Exist_FullMethodName:          true,
	metadv1.Metadata_ListGroup_FullMethodName:      true,
	metadv1.Metadata_BatchGet_FullMethodName:       true,
	metadv1.Metadata_BatchExist_FullMethodName:     true,
	metadv1.Metadata_Ping_FullMethodName:           true,
	metadv1.Metadata_Watch_FullMethodName:          true,
	metadv1.Metadata_ListObjectKeys_FullMethodName: true,
	metadv1.Metadata_GetByRegex_FullMethodName:     true,
	metadv1.Metadata_QueryTask_FullMethodName:      true,
	metadv1.Metadata_ListTasks_FullMethodName:      true,
	metadv1.Admin_ListTenants_FullMethodName:       true,
	metadv1.Admin_GetQuota_FullMethodName:          true,
	metadv1.Admin_ListSegments_FullMethodName:      true,
	metadv1.Admin_ListMembers_FullMethodName:       true,
	metadv1.Admin_Status_FullMethodName:            true,
	metadv1.Admin_ListKeys_FullMethodName:          true,
	metadv1.Admin_ListRoles_FullMethodName:         true,
	metadv1.Admin_DrainStatus_FullMethodName:       true,
	metadv1.Admin_ListLimits_FullMethodName:        true,
}

// audited reports whether a call of method that ended with err gets a line.
func audited(method string, err error) bool {
	if openMethod(method) {
		return false
	}
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.ResourceExhausted:
		return true
	}
	return !readOnly[method]
}

// auditNoteKey carries a call's *auditNote from the interceptor to the handler.
type auditNoteKey struct{}

// auditNote is what the handler tells the interceptor about an audited call: the leader it
// forwarded the call to. Written by the handler's goroutine before the interceptor reads it.
type auditNote struct{ forwardedTo string }

// withAuditNote returns ctx carrying a fresh note when the audit log is on.
func (s *Server) withAuditNote(ctx context.Context) (context.Context, *auditNote) {
	if s.cfg.Audit == nil {
		return ctx, nil
	}
	n := &auditNote{}
	return context.WithValue(ctx, auditNoteKey{}, n), n
}

// noteForward records, for the audit log, that the call in ctx went to the leader named name.
func noteForward(ctx context.Context, name string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.forwardedTo = name
	}
}

// audit writes the line of a call of method with req (nil for a stream) that ended with err after
// d; ctx is the call's, after authentication (it carries the caller when one was found).
func (s *Server) audit(ctx context.Context, method string, req any, err error, d time.Duration, note *auditNote) {
	r := &audit.Record{Time: time.Now().UTC(), Method: shortMethod(method),
		Code: status.Code(err).String(), LatencyUS: d.Microseconds()}
	if a, ok := authedOf(ctx); ok {
		r.Principal, r.KeyID, r.CallerMember = a.caller.Principal, a.caller.KeyID, a.caller.Member
		r.CertSerial, r.ForwardedBy = a.certSerial, a.via
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		r.Peer = p.Addr.String()
	}
	if note != nil {
		r.ForwardedTo = note.forwardedTo
	}
	if m, ok := req.(proto.Message); ok {
		requestFields(m.ProtoReflect(), r)
	}
	if err != nil {
		r.Reason = reasonOf(err)
	}
	s.cfg.Audit.Write(r)
}

// shortMethod is "Metadata/PutEnd" for "/metad.v1.Metadata/PutEnd".
func shortMethod(method string) string {
	return strings.TrimPrefix(method, "/metad.v1.")
}

// requestFields sets the tenant, key and count a request names: its "tenant" and "key" fields and
// the length of its first repeated field (a batch's items or keys), whichever it has.
func requestFields(m protoreflect.Message, r *audit.Record) {
	fields := m.Descriptor().Fields()
	if f := fields.ByName("tenant"); f != nil && f.Kind() == protoreflect.StringKind && f.Cardinality() != protoreflect.Repeated {
		r.Tenant = m.Get(f).String()
	}
	if f := fields.ByName("key"); f != nil && f.Kind() == protoreflect.BytesKind && f.Cardinality() != protoreflect.Repeated {
		if k := m.Get(f).Bytes(); len(k) > 0 {
			r.Key = audit.KeyText(k)
		}
	}
	for i := range fields.Len() {
		if f := fields.Get(i); f.IsList() {
			r.Count = m.Get(f).List().Len()
			break
		}
	}
}

// reasonOf is the metad reason an error status carries, "" if none.
func reasonOf(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if ed, ok := d.(*metadv1.ErrorDetail); ok && ed.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
			return ed.GetReason().String()
		}
	}
	return ""
}
