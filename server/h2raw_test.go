package server

import (
	"bytes"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2 is one HTTP/2 client connection driven frame by frame, for the tests of what the server
// does with a client that ignores the settings a gRPC client obeys (its stream limit, its header
// list limit). It is owned by one test goroutine.
type rawH2 struct {
	t        testing.TB
	c        net.Conn
	fr       *http2.Framer
	settings map[http2.SettingID]uint32 // the server's
}

// rawH2Timeout bounds every read of a rawH2.
const rawH2Timeout = 10 * time.Second

// dialRawH2 connects to addr (over TLS when tc is not nil, offering h2), sends the preface and
// empty settings, and reads the server's settings.
func dialRawH2(t testing.TB, addr string, tc *tls.Config) *rawH2 {
	t.Helper()
	var c net.Conn
	var err error
	if tc != nil {
		tc = tc.Clone()
		tc.NextProtos = []string{"h2"}
		c, err = tls.Dial("tcp", addr, tc)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &rawH2{t: t, c: c, fr: http2.NewFramer(c, c), settings: map[http2.SettingID]uint32{}}
	r.fr.ReadMetaHeaders = hpack.NewDecoder(64<<10, nil)
	r.fr.MaxHeaderListSize = 1 << 20
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f := r.read()
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = sf.ForeachSetting(func(s http2.Setting) error { r.settings[s.ID] = s.Val; return nil })
			if err := r.fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
}

// read reads the next frame, failing the test after rawH2Timeout.
func (r *rawH2) read() http2.Frame {
	r.t.Helper()
	f, err := r.readErr()
	if err != nil {
		r.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

// readErr reads the next frame, or fails after rawH2Timeout.
func (r *rawH2) readErr() (http2.Frame, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(rawH2Timeout))
	return r.fr.ReadFrame()
}

// open starts a gRPC call of method on stream id: its HEADERS (in frames of at most 16 KiB,
// CONTINUATION after the first), with the extra metadata kv, and no message. A write the server
// refuses by closing the connection ends it quietly: await then reports the connection closed.
func (r *rawH2) open(id uint32, method string, kv ...string) {
	r.t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := []string{":method", "POST", ":scheme", "http", ":path", method, ":authority", "metad",
		"content-type", "application/grpc", "te", "trailers"}
	fields = append(fields, kv...)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	b := block.Bytes()
	const chunk = 16 << 10
	first := b[:min(chunk, len(b))]
	b = b[len(first):]
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(b) == 0}); err != nil {
		return
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		if err := r.fr.WriteContinuation(id, n == len(b), b[:n]); err != nil {
			return
		}
		b = b[n:]
	}
}

// outcome is how the server ended a stream: reset with code, answered with a gRPC status
// (grpc-status, grpc-message of its trailers), or closed the whole connection (GOAWAY, or the
// connection ended).
type outcome struct {
	reset   bool
	code    http2.ErrCode
	status  string
	message string
	closed  bool
}

// await reads frames until the server ends stream id (RST_STREAM, HEADERS with END_STREAM, or the
// connection closed), answering pings, and returns how it ended it.
func (r *rawH2) await(id uint32) outcome {
	r.t.Helper()
	for {
		f, err := r.readErr()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				r.t.Fatalf("stream %d: no answer within %s", id, rawH2Timeout)
			}
			return outcome{closed: true}
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return outcome{reset: true, code: f.ErrCode}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id && f.StreamEnded() {
				return outcome{status: fieldOf(f, "grpc-status"), message: fieldOf(f, "grpc-message")}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = r.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID < id || f.ErrCode != http2.ErrCodeNo {
				return outcome{closed: true, code: f.ErrCode}
			}
		}
	}
}

// fieldOf is the value of the header field name in f, "" when it has none.
func fieldOf(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.Fields {
		if strings.EqualFold(hf.Name, name) {
			return hf.Value
		}
	}
	return ""
}

// send sends msg as the stream's one gRPC message (uncompressed) and ends the client's side.
func (r *rawH2) send(id uint32, msg []byte) {
	r.t.Helper()
	frame := append([]byte{0, byte(len(msg) >> 24), byte(len(msg) >> 16), byte(len(msg) >> 8), byte(len(msg))}, msg...)
	if err := r.fr.WriteData(id, true, frame); err != nil {
		r.t.Fatal(err)
	}
}

// awaitData is await that also returns, with no status, when the stream's first DATA frame (its
// first response) arrives.
func (r *rawH2) awaitData(id uint32) outcome {
	r.t.Helper()
	for {
		f, err := r.readErr()
		if err != nil {
			return outcome{closed: true}
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamID == id && len(f.Data()) > 0 {
				return outcome{}
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return outcome{reset: true, code: f.ErrCode}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id && f.StreamEnded() {
				return outcome{status: fieldOf(f, "grpc-status"), message: fieldOf(f, "grpc-message")}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = r.fr.WritePing(true, f.Data)
			}
		}
	}
}
