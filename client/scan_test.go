package client

import (
	"context"
	"strings"
	"testing"

	"metad/proto/metadv1"
)

// fakeScanKeys are the keys the fake node's scans walk, two a page; a page's token is the last
// key returned, as opaque to the client as the server's.
var fakeScanKeys = []string{"a", "b", "c", "d", "e"}

func fakeScanPage(token []byte) ([][]byte, []byte) {
	var out [][]byte
	for _, k := range fakeScanKeys {
		if k > string(token) && len(out) < 2 {
			out = append(out, []byte(k))
		}
	}
	if len(out) == 0 || string(out[len(out)-1]) == fakeScanKeys[len(fakeScanKeys)-1] {
		return out, nil
	}
	return out, out[len(out)-1]
}

func (m *fakeMetadata) ListObjectKeys(_ context.Context, req *metadv1.ListObjectKeysRequest) (*metadv1.ListObjectKeysResponse, error) {
	if err := m.n.enter("ListObjectKeys"); err != nil {
		return nil, err
	}
	keys, next := fakeScanPage(req.GetPageToken())
	return &metadv1.ListObjectKeysResponse{Keys: keys, NextPageToken: next}, nil
}

func (m *fakeMetadata) RemoveByRegex(_ context.Context, req *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error) {
	if err := m.n.enter("RemoveByRegex"); err != nil {
		return nil, err
	}
	keys, next := fakeScanPage(req.GetPageToken())
	out := &metadv1.RemoveByRegexResponse{NextPageToken: next}
	for _, k := range keys {
		out.Results = append(out.Results, &metadv1.RemoveByRegexResponse_Result{Key: k, Status: &metadv1.Status{}})
	}
	return out, nil
}

// The loops over pages pass each page's token back and stop when none comes.
func TestScanLoopsFollowTokens(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	keys, err := c.ListObjectKeys(testCtx(t), "", "", Stale())
	if err != nil || strings.Join(keys, "") != "abcde" {
		t.Fatalf("ListObjectKeys = %v, %v", keys, err)
	}
	if a.calls.Load() != 3 {
		t.Fatalf("%d pages fetched, want 3", a.calls.Load())
	}
	res, err := c.RemoveByRegex(testCtx(t), "", ".", false)
	if err != nil || len(res) != 5 || string(res[4].GetKey()) != "e" {
		t.Fatalf("RemoveByRegex = %v, %v", res, err)
	}
}
