package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
)

// TestEveryStoreReasonMaps: every store.Reason has a wire reason of the same name and a gRPC code.
func TestEveryStoreReasonMaps(t *testing.T) {
	seen := map[metadv1.Reason]store.Reason{}
	for _, r := range store.Reasons() {
		wire, code, ok := mapReason(r)
		if !ok {
			t.Fatalf("store reason %s has no mapping", r)
		}
		if r == store.OK {
			if wire != metadv1.Reason_REASON_UNSPECIFIED || code != codes.OK {
				t.Fatalf("OK maps to %s/%s", wire, code)
			}
			continue
		}
		if code == codes.OK || code == codes.Unknown || code == codes.Internal {
			t.Fatalf("store reason %s maps to code %s", r, code)
		}
		if want := "REASON_" + r.String(); wire.String() != want {
			t.Fatalf("store reason %s maps to %s, want %s", r, wire, want)
		}
		if prev, dup := seen[wire]; dup {
			t.Fatalf("store reasons %s and %s both map to %s", prev, r, wire)
		}
		seen[wire] = r
	}
}

func TestRaftErrorsMap(t *testing.T) {
	cases := []struct {
		err    error
		code   codes.Code
		reason metadv1.Reason
		msg    string
	}{
		{&ha.NotLeaderError{LeaderName: "n2", LeaderAddr: "127.0.0.1:6002"}, codes.Unavailable, rNotLeader, "127.0.0.1:6002"},
		{fmt.Errorf("propose: %w", &ha.NotLeaderError{LeaderName: "n2", LeaderAddr: "h:1"}), codes.Unavailable, rNotLeader, "n2"},
		{&ha.NotLeaderError{}, codes.Unavailable, rUnavail, "no leader"},
		{ha.ErrNotLeader, codes.Unavailable, rUnavail, "no leader"},
		{ha.ErrShutdown, codes.Unavailable, rUnavail, "shutting down"},
		{ha.ErrTimeout, codes.Unavailable, rUnavail, "unknown"},
		{ha.ErrUnknown, codes.Unavailable, rUnavail, "outcome is unknown"},
	}
	for _, tc := range cases {
		err := toStatus(tc.err)
		d := wantErr(t, err, tc.code, tc.reason)
		if !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Errorf("%v: message %q lacks %q", tc.err, status.Convert(err).Message(), tc.msg)
		}
		if tc.reason == rNotLeader && (d.GetLeaderName() == "" || d.GetLeaderAddress() == "") {
			t.Errorf("%v: NOT_LEADER without the leader: %v", tc.err, d)
		}
	}
	if c := status.Code(toStatus(context.DeadlineExceeded)); c != codes.DeadlineExceeded {
		t.Errorf("deadline: %s", c)
	}
	if c := status.Code(toStatus(errors.New("boom"))); c != codes.Unknown {
		t.Errorf("other error: %s", c)
	}
}

// TestMembershipErrorsMap: package ha's membership refusals become the statuses of the store
// rejections of the same reason and text: code, ErrorDetail and message.
func TestMembershipErrorsMap(t *testing.T) {
	cases := []struct {
		err  error
		want *store.Error
	}{
		{&ha.MemberNotFoundError{Name: "ghost"},
			&store.Error{Reason: store.MemberNotFound, Msg: `member "ghost" is not in the cluster's configuration`}},
		{fmt.Errorf("remove: %w", &ha.MemberNotFoundError{Name: "ghost"}),
			&store.Error{Reason: store.MemberNotFound, Msg: `member "ghost" is not in the cluster's configuration`}},
		{&ha.InvalidMemberError{Msg: "member name: empty"},
			&store.Error{Reason: store.InvalidParams, Msg: "member name: empty"}},
	}
	for _, tc := range cases {
		got, want := status.Convert(toStatus(tc.err)), status.Convert(toStatus(tc.want))
		if !proto.Equal(got.Proto(), want.Proto()) {
			t.Errorf("%v: status %v, want %v", tc.err, got.Proto(), want.Proto())
		}
	}
	if !errors.Is(&ha.MemberNotFoundError{Name: "x"}, ha.ErrMemberNotFound) || !errors.Is(&ha.InvalidMemberError{}, ha.ErrInvalidMember) {
		t.Error("membership errors do not match their sentinels")
	}
}

// TestServiceErrorsMap: the service's error of every store rejection becomes the status of the
// reason's code, with an ErrorDetail of the reason, the tenant and the key, and the rejection's
// message (which starts with the reason); the service's other errors become their codes. (The
// service's TestEveryReasonProvoked provokes each rejection.)
func TestServiceErrorsMap(t *testing.T) {
	for _, r := range store.Reasons() {
		if r == store.OK {
			continue
		}
		wire, code, _ := mapReason(r)
		err := toStatus(fmt.Errorf("call: %w", &service.Error{Err: &store.Error{Reason: r, Msg: "why"}, Tenant: "t", Key: []byte("k")}))
		d := wantErr(t, err, code, wire)
		if d.GetTenant() != "t" || string(d.GetKey()) != "k" {
			t.Errorf("%s: detail %v, want tenant t and key k", r, d)
		}
		if got, want := status.Convert(err).Message(), r.String()+": why"; got != want {
			t.Errorf("%s: message %q, want %q", r, got, want)
		}
	}
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{service.ErrForward, codes.Unavailable},
		{fmt.Errorf("%w: no credentials", service.ErrUnauthenticated), codes.Unauthenticated},
		{&service.Error{Err: fmt.Errorf("%w: lacks the admin role", service.ErrPermissionDenied)}, codes.PermissionDenied},
		{&service.Error{Err: fmt.Errorf("%w: a result of the wrong shape", service.ErrInternal)}, codes.Internal},
		{&service.Error{Err: service.ErrUnimplemented}, codes.Unimplemented},
		{&service.Error{Err: context.Canceled}, codes.Canceled},
		{&service.Error{Err: &ha.FeatureLevelError{Command: &metadv1.Command{}, Need: 2, Have: 1, Member: "n3"}}, codes.FailedPrecondition},
	} {
		if got := status.Code(toStatus(tc.err)); got != tc.code {
			t.Errorf("%v: code %s, want %s", tc.err, got, tc.code)
		}
	}
	if d := detailOf(toStatus(service.ErrForward)); d.GetReason() != rUnavail {
		t.Errorf("ErrForward: detail %v, want UNAVAILABLE (no leader to name)", d)
	}
}
