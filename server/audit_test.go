package server

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"metad/audit"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// auditTo gives a node's configuration an audit log in a fresh file and returns the file.
func auditTo(t *testing.T, cfg *config, member string) (path string, l *audit.Log) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Config{Path: path, MaxBytes: audit.DefaultMaxBytes, MaxFiles: 2, Member: member}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Audit = l
	return path, l
}

// auditLines closes l and reads its file's lines.
func auditLines(t *testing.T, l *audit.Log, path string) []audit.Record {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestAuditLog: a write, a refusal of another tenant's call, a call with no credentials and a
// snapshot save each leave one line naming the caller, the method, what the request names and the
// outcome; reads leave none; a call forwarded by a follower has a line on both members.
func TestAuditLog(t *testing.T) {
	p := newPKI(t)
	var lpath, fpath string
	var llog, flog *audit.Log
	leader := startAuthWith(t, p, newFakeBackend(t, nil), "n1", func(c *config) { lpath, llog = auditTo(t, c, "n1") })
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	follower := startAuthWith(t, p, fb, "n2", func(c *config) { fpath, flog = auditTo(t, c, "n2") })
	tok, keyCmd := servicetest.NewKey(t, leader.b, "alice", 0)
	for _, n := range []*authNode{leader, follower} {
		n.b.SetMembers("n1", "n2")
		for _, cmd := range []*metadv1.Command{
			{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "a"}}},
			servicetest.Grant("alice", "tenant:a"), servicetest.Grant("w1", "worker:"+clientA.String()),
		} {
			n.b.MustApply(t, cmd)
		}
	}
	follower.b.MustApply(t, keyCmd)
	wtok, _ := servicetest.NewKey(t, leader.b, "w1", 0)
	c := leader.clients(t)
	ctx := withKey(t, tok)
	if _, err := c.meta.MountSegment(withKey(t, wtok), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "a", ClientId: idb(clientA), Key: []byte("k1"), Size: 4096}); err != nil {
		t.Fatal(err)
	}
	_, err := c.meta.Get(ctx, &metadv1.GetRequest{Tenant: "a", Key: []byte("k1")}) // a read: no line, whatever its answer
	wantCode(t, err, codes.FailedPrecondition)
	_, err = c.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Tenant: "b", Keys: [][]byte{[]byte("x"), []byte("y")}})
	wantCode(t, err, codes.PermissionDenied)
	_, err = leader.clients(t).meta.Get(tctx(t), &metadv1.GetRequest{Key: []byte("k1")}) // no credentials
	wantCode(t, err, codes.Unauthenticated)
	if _, err := follower.clients(t).meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{Tenant: "a"}); err != nil {
		t.Fatalf("forwarded: %v", err)
	}

	lines := auditLines(t, llog, lpath)
	got := make([]string, len(lines))
	for i, r := range lines {
		got[i] = r.Method + " " + r.Code
		if r.Member != "n1" || r.Time.IsZero() || r.LatencyUS < 0 || r.Peer == "" {
			t.Errorf("line %d: %+v", i, r)
		}
	}
	want := []string{"Metadata/MountSegment OK", "Metadata/PutStart OK", "Metadata/BatchRemove PermissionDenied",
		"Metadata/Get Unauthenticated", "Metadata/RemoveAll OK"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("the leader's lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	put, denied, anon, fwd := lines[1], lines[2], lines[3], lines[4]
	if put.Principal != "alice" || put.KeyID == "" || put.Tenant != "a" || put.Key != "k1" || put.Reason != "" {
		t.Errorf("the write's line: %+v", put)
	}
	if denied.Principal != "alice" || denied.Tenant != "b" || denied.Count != 2 || denied.Code != "PermissionDenied" {
		t.Errorf("the refusal's line: %+v", denied)
	}
	if anon.Principal != "" || anon.Key != "k1" {
		t.Errorf("the unauthenticated call's line: %+v", anon)
	}
	if fwd.Principal != "alice" || fwd.ForwardedBy != "n2" || fwd.ForwardedTo != "" {
		t.Errorf("the forwarded call's line on the leader: %+v", fwd)
	}
	fl := auditLines(t, flog, fpath)
	if len(fl) != 1 || fl[0].Method != "Metadata/RemoveAll" || fl[0].ForwardedTo != "n1" || fl[0].Principal != "alice" || fl[0].Member != "n2" {
		t.Fatalf("the follower's lines: %+v", fl)
	}
}

// TestEveryMethodIsClassified: the read-only list names only methods of the services, so that a
// renamed read cannot silently become audited or a typo hide one.
func TestEveryMethodIsClassified(t *testing.T) {
	known := map[string]bool{}
	for _, m := range metadv1.Metadata_ServiceDesc.Methods {
		known["/"+metadv1.Metadata_ServiceDesc.ServiceName+"/"+m.MethodName] = true
	}
	for _, s := range metadv1.Metadata_ServiceDesc.Streams {
		known["/"+metadv1.Metadata_ServiceDesc.ServiceName+"/"+s.StreamName] = true
	}
	for _, m := range metadv1.Admin_ServiceDesc.Methods {
		known["/"+metadv1.Admin_ServiceDesc.ServiceName+"/"+m.MethodName] = true
	}
	for m := range readOnly {
		if !known[m] {
			t.Errorf("readOnly names %s, which no service has", m)
		}
	}
	if audited(metadv1.Metadata_Get_FullMethodName, nil) || !audited(metadv1.Metadata_PutEnd_FullMethodName, nil) ||
		!audited(metadv1.Admin_SnapshotSave_FullMethodName, nil) || !audited("/metad.v1.Metadata/Future", nil) {
		t.Fatal("the classification is off")
	}
}
