package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"google.golang.org/grpc/status"

	"metad/client"
	"metad/proto/metadv1"
)

// printer is not safe for concurrent use: it writes a verb's result as a table (for people) or
// JSON (for scripts).
type printer struct {
	w    io.Writer
	json bool
}

// emit writes v as indented JSON, or calls table with a tabwriter (flushed after) for table output.
func (p *printer) emit(v any, table func(tw *tabwriter.Writer)) error {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// row writes one tab-separated table row.
func row(tw io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c)
	}
	fmt.Fprintln(tw)
}

// replicaView is a replica as metactl shows it.
type replicaView struct {
	ReplicaID       uint64 `json:"replica_id"`
	Tier            string `json:"tier"`
	SegmentID       string `json:"segment_id"`
	SegmentEndpoint string `json:"segment_endpoint"`
	BaseAddress     uint64 `json:"base_address"`
	Offset          uint64 `json:"offset"`
	Size            uint64 `json:"size"`
	Status          string `json:"status"`
	// Owner: a LOCAL_DISK replica's owner, the client whose SSD holds the file.
	Owner string `json:"owner_client_id,omitempty"`
}

func replicaViews(reps []*metadv1.Replica) []replicaView {
	out := make([]replicaView, 0, len(reps))
	for _, r := range reps {
		out = append(out, replicaView{
			ReplicaID: r.GetReplicaId(), Tier: tierName(r.GetTier()), SegmentID: client.FormatID(r.GetSegmentId()),
			SegmentEndpoint: r.GetSegmentEndpoint(), BaseAddress: r.GetBaseAddress(), Offset: r.GetOffset(),
			Size: r.GetSize(), Status: strings.TrimPrefix(r.GetStatus().String(), "REPLICA_STATUS_"),
		})
		if o := r.GetOwnerClientId(); len(o) > 0 {
			out[len(out)-1].Owner = client.FormatID(o)
		}
	}
	return out
}

func replicaTable(tw io.Writer, reps []replicaView) {
	row(tw, "REPLICA", "TIER", "SEGMENT", "ENDPOINT", "BASE", "OFFSET", "SIZE", "STATUS", "OWNER")
	for _, r := range reps {
		row(tw, r.ReplicaID, r.Tier, r.SegmentID, orDash(r.SegmentEndpoint), fmt.Sprintf("%#x", r.BaseAddress),
			r.Offset, formatSize(r.Size), r.Status, orDash(r.Owner))
	}
}

// orDash shows "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quotaText shows a requested quota, 0 meaning none.
func quotaText(n uint64) string {
	if n == 0 {
		return "unlimited"
	}
	return formatSize(n)
}

// plural is "1 replica" or "2 replicas".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// msText shows a duration in milliseconds as a Go duration.
func msText(ms uint64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// roleName is a node role for display: leader, follower, candidate, shutdown, unknown.
func roleName(r metadv1.NodeRole) string {
	if r == metadv1.NodeRole_NODE_ROLE_UNSPECIFIED {
		return "unknown"
	}
	return strings.ToLower(strings.TrimPrefix(r.String(), "NODE_ROLE_"))
}

// cliError is a failure found by metactl itself, shown with a reason like the server's.
type cliError struct {
	reason string
	msg    string
}

func (e *cliError) Error() string { return e.reason + ": " + e.msg }

// errorLine renders err as `error: <reason>: <message>`: the reason is the server's stable code
// (OBJECT_NOT_FOUND...), or the gRPC code (UNAVAILABLE, DEADLINE_EXCEEDED...) when there is none.
func errorLine(err error) string {
	var ce *cliError
	if errors.As(err, &ce) {
		return "error: " + ce.Error()
	}
	var ie *client.ItemError
	if errors.As(err, &ie) {
		return "error: " + ie.Error()
	}
	if st, ok := status.FromError(err); ok {
		reason := client.ReasonOf(err)
		name := client.ReasonName(reason)
		if reason == metadv1.Reason_REASON_UNSPECIFIED {
			name = upperSnake(st.Code().String())
		}
		return fmt.Sprintf("error: %s: %s", name, client.MessageOf(err))
	}
	return "error: " + err.Error()
}

// upperSnake turns a CamelCase gRPC code name into UPPER_SNAKE (DeadlineExceeded ->
// DEADLINE_EXCEEDED).
func upperSnake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		if prevLower && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		prevLower = unicode.IsLower(r)
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
