package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/metadata"

	metadv1 "metad/proto/metadv1"
)

// TestStreamLimitPerConnection: the server announces Config.MaxConcurrentStreams, and a client
// that opens a stream past it (a gRPC client waits instead) has that stream reset with
// REFUSED_STREAM, before any handler runs, while the streams within the limit stay open; once one
// ends, a new stream is served.
func TestStreamLimitPerConnection(t *testing.T) {
	cfg := testConfig()
	cfg.Server.MaxConcurrentStreams = 2
	h := start(t, newFakeBackend(t, nil), cfg)
	r := dialRawH2(t, h.addr, nil)
	if got := r.settings[http2.SettingMaxConcurrentStreams]; got != 2 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS %d, want 2", got)
	}
	if got := r.settings[http2.SettingMaxHeaderListSize]; got != DefaultMaxHeaderListBytes {
		t.Fatalf("SETTINGS_MAX_HEADER_LIST_SIZE %d, want %d", got, DefaultMaxHeaderListBytes)
	}
	r.open(1, metadv1.Metadata_Watch_FullMethodName) // both wait for their request
	r.open(3, metadv1.Metadata_Watch_FullMethodName)
	r.open(5, metadv1.Admin_Status_FullMethodName)
	if o := r.await(5); !o.reset || o.code != http2.ErrCodeRefusedStream {
		t.Fatalf("the third stream ended %+v, want RST_STREAM REFUSED_STREAM", o)
	}
	if err := r.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	// The server forgets stream 1 when it reads the reset; a stream opened after it may still
	// find two open until then, so the new one is retried (bounded) until it is served.
	for id := uint32(7); ; id += 2 {
		r.open(id, metadv1.Admin_Status_FullMethodName)
		r.send(id, nil)
		o := r.await(id)
		if !o.reset && o.status == "0" {
			break
		}
		if !o.reset || o.code != http2.ErrCodeRefusedStream || id > 7+2*100 {
			t.Fatalf("stream %d after a reset: %+v", id, o)
		}
	}
}

// TestHeaderListLimit: a call whose metadata adds up to more than Config.MaxHeaderListBytes is
// reset before any handler runs, and its connection goes on serving; metadata far past the limit
// (in CONTINUATION frames once the limit is passed, or a header block over twice what remains)
// closes the connection before it is decoded (x/net/http2's guard against header floods); a gRPC
// client that read the setting fails such a call itself, sending nothing.
func TestHeaderListLimit(t *testing.T) {
	cfg := testConfig()
	cfg.Server.MaxHeaderListBytes = HeaderListMinBytes
	h := start(t, newFakeBackend(t, nil), cfg)
	r := dialRawH2(t, h.addr, nil)
	// Two fields (a field longer than the limit is refused by the HPACK decoder, which closes the
	// connection) in one frame: decoded, then refused.
	over := strings.Repeat("x", HeaderListMinBytes*3/4)
	r.open(1, metadv1.Admin_Status_FullMethodName, "x-pad-1", over, "x-pad-2", over)
	r.send(1, nil)
	if o := r.await(1); !o.reset {
		t.Fatalf("a call with %d bytes of metadata ended %+v, want a reset", 2*len(over), o)
	}
	r.open(3, metadv1.Admin_Status_FullMethodName, "x-pad", over[:HeaderListMinBytes/2])
	r.send(3, nil)
	if o := r.await(3); o.reset || o.status != "0" {
		t.Fatalf("a call within the limit on the same connection ended %+v, want OK", o)
	}
	flood := strings.Repeat("x", 8<<20) // the abuse: 8 MiB of metadata in one call
	r.open(5, metadv1.Admin_Status_FullMethodName, "x-pad", flood)
	if o := r.await(5); !o.closed {
		t.Fatalf("a call with %d bytes of metadata ended %+v, want the connection closed", len(flood), o)
	}

	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-pad-1", over, "x-pad-2", over), 10*time.Second)
	defer cancel()
	if _, err := h.admin.Status(ctx, &metadv1.StatusRequest{}); err == nil {
		t.Fatalf("a gRPC call with %d bytes of metadata succeeded", 2*len(over))
	}
	if got := counterValue(t, h, "metad_server_requests_total", map[string]string{"method": "Admin/Status", "code": "OK"}); got != 1 {
		t.Fatalf("Admin/Status served %v times, want 1 (the call within the limit)", got)
	}
}
