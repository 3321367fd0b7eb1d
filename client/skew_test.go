package client

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"metad/proto/metadv1"
)

// TestUnknownReasonWarnsOnce: an answer with a reason this client does not know (a member of a
// newer release) is returned to the caller as it came and logged once, naming the reason and the
// endpoint; a known reason is not logged.
func TestUnknownReasonWarnsOnce(t *testing.T) {
	n := startFake(t)
	var logs bytes.Buffer
	c, err := New(Config{Endpoints: []string{n.addr}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const newer = metadv1.Reason(9999)
	n.setFail(func(string) error {
		return rejection(codes.FailedPrecondition, newer, "NEWER_REASON: something new", "", "")
	})
	for range 3 {
		if _, err := c.Get(context.Background(), "", "k"); ReasonOf(err) != newer {
			t.Fatalf("Get: %v, want the unknown reason itself", err)
		}
	}
	n.setFail(func(string) error {
		return rejection(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "OBJECT_NOT_FOUND: gone", "", "")
	})
	_, _ = c.Get(context.Background(), "", "k")
	out := logs.String()
	if strings.Count(out, "does not know") != 1 || !strings.Contains(out, "reason=9999") || !strings.Contains(out, n.addr) {
		t.Fatalf("warnings:\n%s", out)
	}
}
