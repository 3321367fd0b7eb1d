package server

import (
	"bytes"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// rawCodec sends and receives a *[]byte as it is: a client that can send any bytes at all.
type rawCodec struct{}

func (rawCodec) Name() string                    { return "proto" }
func (rawCodec) Marshal(v any) ([]byte, error)   { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error { *v.(*[]byte) = bytes.Clone(b); return nil }

// placeholder marks the string field a test corrupts; badUTF8 has its length and is not UTF-8.
const placeholder = "PLACEHOLDER"

var badUTF8 = bytes.Repeat([]byte{0xff}, len(placeholder))

// withBadUTF8 encodes m, whose one field at fault holds placeholder, with that field's bytes
// replaced by bytes that are not UTF-8 (no proto encoder writes such a message).
func withBadUTF8(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte(placeholder)) != 1 {
		t.Fatalf("%T: the placeholder must appear once", m)
	}
	return bytes.Replace(b, []byte(placeholder), badUTF8, 1)
}

// TestUndecodableRequestIsInvalidArgument sends raw bytes through a real gRPC connection: a string
// field that is not UTF-8, or a message that does not parse, is InvalidArgument with
// INVALID_PARAMS (naming the field when one is at fault), never Internal, and proposes nothing.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	h.mount(t, clientA, segA)
	cl := idb(clientA)
	seg := segDesc(segB, 1<<30, 1<<20)
	seg.Name = placeholder
	cases := []struct {
		method, field string
		req           []byte
	}{
		{metadv1.Metadata_Get_FullMethodName, "tenant", withBadUTF8(t, &metadv1.GetRequest{Tenant: placeholder, Key: []byte("k")})},
		{metadv1.Metadata_PutStart_FullMethodName, "tenant", withBadUTF8(t, &metadv1.PutStartRequest{Tenant: placeholder, ClientId: cl, Key: []byte("k"), Size: 1})},
		{metadv1.Metadata_Exist_FullMethodName, "tenant", withBadUTF8(t, &metadv1.ExistRequest{Tenant: placeholder, Key: []byte("k")})},
		{metadv1.Metadata_RemoveAll_FullMethodName, "tenant", withBadUTF8(t, &metadv1.RemoveAllRequest{Tenant: placeholder, Force: true})},
		{metadv1.Metadata_BatchGet_FullMethodName, "tenant", withBadUTF8(t, &metadv1.BatchGetRequest{Tenant: placeholder, Keys: [][]byte{[]byte("k")}})},
		{metadv1.Admin_RegisterTenant_FullMethodName, "name", withBadUTF8(t, &metadv1.RegisterTenantRequest{Name: placeholder})},
		{metadv1.Admin_GetQuota_FullMethodName, "tenant", withBadUTF8(t, &metadv1.GetQuotaRequest{Tenant: placeholder})},
		{metadv1.Metadata_MountSegment_FullMethodName, "segment.name", withBadUTF8(t, &metadv1.MountSegmentRequest{ClientId: cl, Segment: seg})},
		// Field 1 (tenant) announces 5 bytes and has 1; then a tag with field number 0.
		{metadv1.Metadata_Get_FullMethodName, "request: does not decode", []byte{0x0a, 0x05, 'a'}},
		{metadv1.Admin_ListTenants_FullMethodName, "request: does not decode", []byte{0x00}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.field, func(t *testing.T) {
			before := h.b.Proposals.Load()
			var out []byte
			err := h.cc.Invoke(tctx(t), tc.method, &tc.req, &out, grpc.ForceCodec(rawCodec{}))
			wantInvalid(t, err, tc.field)
			if h.b.Proposals.Load() != before {
				t.Fatal("an undecodable request was proposed")
			}
		})
	}

	// A streaming RPC's request decodes the same way.
	stream, err := h.cc.NewStream(tctx(t), &grpc.StreamDesc{ServerStreams: true}, metadv1.Admin_SnapshotSave_FullMethodName,
		grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	req := []byte{0x08} // field 1 varint, value missing
	if err := stream.SendMsg(&req); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var out []byte
	err = stream.RecvMsg(&out)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("SnapshotSave with an undecodable request: %v, want InvalidArgument", err)
	}
	wantInvalid(t, err, "request: does not decode")

	// The same bytes, well formed, still work: the codec decodes as gRPC's own.
	ok, err := proto.Marshal(&metadv1.GetQuotaRequest{Tenant: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var resp []byte
	if err := h.cc.Invoke(tctx(t), metadv1.Admin_GetQuota_FullMethodName, &ok, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		t.Fatalf("well-formed raw GetQuota: %v", err)
	}
	q := &metadv1.GetQuotaResponse{}
	if err := proto.Unmarshal(resp, q); err != nil || q.GetCapacityBytes() != 1<<20 {
		t.Fatalf("GetQuota answer %v (%v)", q, err)
	}
}

// TestRequestOver16MiBRefused: gRPC refuses a request over 16 MiB before a handler runs.
func TestRequestOver16MiBRefused(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	before := h.b.Proposals.Load()
	big := make([][]byte, 4096)
	for i := range big {
		big[i] = bytes.Repeat([]byte{'a' + byte(i%26)}, 4096) // 16 MiB of keys, plus framing
	}
	_, err := h.meta.BatchRemove(tctx(t), &metadv1.BatchRemoveRequest{Keys: big, Force: true})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("over-16-MiB request: %v, want ResourceExhausted", err)
	}
	if d := h.b.Proposals.Load() - before; d != 0 {
		t.Fatalf("%d commands proposed", d)
	}
}
