package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/credentials"
)

// Bounds of closing a connection whose TLS handshake failed (TLSCredentials).
const (
	// refusalLinger bounds how long the server reads what the client sent after the refusal,
	// so that the close is a FIN the client reads after the alert, not a reset that discards it.
	refusalLinger = time.Second
	// refusalDrain bounds the bytes read then.
	refusalDrain = 64 << 10
	// refusedFrames bounds the HTTP/2 frames read from a plaintext client before its first call.
	refusedFrames = 16
)

// PlaintextRefusal is the message of the status that answers a call of a plaintext gRPC client on
// a TLS listener. (It is sent as grpc-message as is: printable ASCII, no '%'.)
const PlaintextRefusal = "this node serves TLS: the client must connect with TLS (a CA file: --cacert, METAD_CACERT)"

// TLSCredentials returns the client listener's transport credentials: gRPC's TLS credentials over
// cfg, except that each connection carries its authentication state (auth.go) in its AuthInfo,
// and that a connection whose handshake fails is closed so that its client learns why.
// The TLS alert that says why (certificate required, unknown certificate authority, expired
// certificate) is followed by a FIN, not a reset: before closing, the server reads what the client
// sent after its part of the handshake (gRPC's preface), for at most refusalLinger, because
// closing a socket with unread data resets it and the client's kernel then discards the alert
// (the client sees only "broken pipe" or "connection reset"). A client that spoke plaintext
// HTTP/2 (a gRPC client without TLS) is answered in HTTP/2: its first call fails with
// UNAUTHENTICATED and the message PlaintextRefusal, and the connection closes.
//
// The handshake runs on gRPC's goroutine for the connection, so the linger holds up no other
// connection.
func TLSCredentials(cfg *tls.Config) credentials.TransportCredentials {
	return refusingTLS{credentials.NewTLS(cfg)}
}

// refusingTLS is gRPC's TLS credentials with TLSCredentials's closing of refused connections.
type refusingTLS struct {
	credentials.TransportCredentials
}

func (c refusingTLS) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	hc := &handshakeConn{Conn: raw}
	conn, info, err := c.TransportCredentials.ServerHandshake(hc)
	if err == nil {
		hc.served.Store(true)
		hc.read = bytes.Buffer{}
		if ti, ok := info.(credentials.TLSInfo); ok {
			info = connInfo{TLSInfo: ti, auth: &connAuth{}} // the connection's authentication state (auth.go)
		}
		return conn, info, nil
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok && !hc.overflow {
		refusePlaintextHTTP2(raw, io.MultiReader(bytes.NewReader(hc.read.Bytes()), raw))
	}
	lingerClose(raw)
	return nil, nil, err
}

func (c refusingTLS) Clone() credentials.TransportCredentials {
	return refusingTLS{c.TransportCredentials.Clone()}
}

// handshakeConn is an accepted connection handed to the TLS handshake: until the handshake has
// succeeded, Close leaves the connection open, for ServerHandshake to close it as TLSCredentials
// says, and Read keeps a copy of what it read (the TLS layer reads ahead), for ServerHandshake to
// read a plaintext client's request from. Read is called by the handshake's goroutine, which owns read
// and overflow; served is set once, by that goroutine, before the connection is used for anything
// else.
type handshakeConn struct {
	net.Conn
	served   atomic.Bool
	read     bytes.Buffer // what the handshake read, up to handshakeKept bytes
	overflow bool         // the handshake read more than handshakeKept: read is incomplete
}

// handshakeKept bounds the copy a handshakeConn keeps of what the handshake read.
const handshakeKept = 16 << 10

func (c *handshakeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.served.Load() && !c.overflow {
		if c.read.Len()+n > handshakeKept {
			c.overflow = true
			c.read = bytes.Buffer{}
		} else {
			c.read.Write(p[:n])
		}
	}
	return n, err
}

func (c *handshakeConn) Close() error {
	if !c.served.Load() {
		return nil
	}
	return c.Conn.Close()
}

// refusePlaintextHTTP2 answers, on c, a plaintext HTTP/2 client whose bytes r reads from the
// start, if they start with the HTTP/2 client preface: it sends a server preface (an empty SETTINGS frame),
// answers the first call the client opens with plaintextStatus (a trailers-only response) and
// sends a GOAWAY that lets no later call in. It reads at most refusedFrames frames and gives up
// at refusalLinger.
func refusePlaintextHTTP2(c net.Conn, r io.Reader) {
	_ = c.SetDeadline(time.Now().Add(refusalLinger))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, r)
	if fr.WriteSettings() != nil {
		return
	}
	st := plaintextStatus()
	for range refusedFrames {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.HeadersFrame:
			var block bytes.Buffer
			enc := hpack.NewEncoder(&block)
			for _, hf := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
				{Name: "grpc-status", Value: strconv.Itoa(int(st.Code()))}, {Name: "grpc-message", Value: st.Message()}} {
				_ = enc.WriteField(hf)
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}) == nil {
				_ = fr.WriteGoAway(f.StreamID, http2.ErrCodeNo, []byte(st.Message()))
			}
			return
		}
	}
}

// lingerClose closes c after sending what is written (a FIN) and reading, for at most
// refusalLinger and refusalDrain bytes, what the client still sends or until it closes.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(refusalLinger))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, refusalDrain))
	}
	_ = c.Close()
}
