package server

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A request that does not decode (malformed protobuf, invalid UTF-8 in a string field) is the
// client's fault, so it is InvalidArgument (SEMANTICS section 1). gRPC itself answers any error of
// a codec's Unmarshal with Internal, before a handler or interceptor runs, whatever error the codec
// returns. So the Metadata and Admin services decode their requests themselves: Register wraps
// every handler so that it receives the request through a *decoded, into which the server's codec
// (ServerOptions) decodes the message and records the decode error instead of returning it; the
// wrapper then answers that error with undecodableStatus (errors.go). Errors of the receive itself
// (a request over 16 MiB, a broken stream, a cancelled call) stay gRPC's. Other services (health,
// reflection) decode through the codec as gRPC's proto codec would.

// decoded is what a wrapped handler receives a request into: the message to decode and, after
// the codec ran, why it did not decode (nil when it did) and the string field at fault, if one is.
type decoded struct {
	m     any
	err   error
	field string
}

// serverCodec is gRPC's proto codec, except that it decodes into a *decoded without failing.
// Stateless, safe for concurrent use.
type serverCodec struct{ encoding.CodecV2 }

var _ encoding.CodecV2 = serverCodec{}

func newServerCodec() serverCodec { return serverCodec{encoding.GetCodecV2(protocodec.Name)} }

// encodedMessage is a message already encoded (a watch response: service.Watcher.NextWire); the
// codec sends its bytes as they are.
type encodedMessage []byte

// Marshal encodes v; an encodedMessage is its own encoding.
func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(encodedMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return c.CodecV2.Marshal(v)
}

// Unmarshal decodes data into v; into a *decoded it records the decode error and returns nil.
func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	d, ok := v.(*decoded)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	if d.err = c.CodecV2.Unmarshal(data, d.m); d.err != nil {
		if pm, ok := d.m.(proto.Message); ok {
			d.field = badUTF8Field(pm.ProtoReflect().Descriptor(), data.Materialize())
		}
	}
	return nil
}

// decodingServiceDesc returns a copy of sd whose handlers receive their requests through
// decodeRequest.
func decodingServiceDesc(sd *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *sd
	out.Methods = make([]grpc.MethodDesc, len(sd.Methods))
	for i, md := range sd.Methods {
		h := md.Handler
		out.Methods[i] = grpc.MethodDesc{MethodName: md.MethodName,
			Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
				return h(srv, ctx, func(m any) error { return decodeRequest(dec, m) }, in)
			}}
	}
	out.Streams = make([]grpc.StreamDesc, len(sd.Streams))
	for i, st := range sd.Streams {
		h := st.Handler
		st.Handler = func(srv any, ss grpc.ServerStream) error { return h(srv, decodingStream{ss}) }
		out.Streams[i] = st
	}
	return &out
}

// decodeRequest receives one message into m through recv: a receive error as gRPC gives it, a
// decode error as InvalidArgument.
func decodeRequest(recv func(any) error, m any) error {
	d := &decoded{m: m}
	if err := recv(d); err != nil {
		return err
	}
	if d.err != nil {
		return undecodableStatus(d.field, d.err)
	}
	return nil
}

// decodingStream is a handler's stream whose received messages go through decodeRequest.
type decodingStream struct{ grpc.ServerStream }

func (s decodingStream) RecvMsg(m any) error { return decodeRequest(s.ServerStream.RecvMsg, m) }

// badUTF8Field names the first string field of a message of type md in b (its wire encoding)
// whose value is not UTF-8, with the path of the message fields that hold it ("segment.name"), or
// returns "" when there is none or b does not parse that far.
func badUTF8Field(md protoreflect.MessageDescriptor, b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if fd := md.Fields().ByNumber(num); fd != nil && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ""
			}
			switch fd.Kind() {
			case protoreflect.StringKind:
				if !utf8.Valid(v) {
					return string(fd.Name())
				}
			case protoreflect.MessageKind:
				if f := badUTF8Field(fd.Message(), v); f != "" {
					return string(fd.Name()) + "." + f
				}
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return ""
		}
		b = b[n:]
	}
	return ""
}
