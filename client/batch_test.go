package client

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"metad/proto/metadv1"
)

// TestBatchGetSplitsAndKeepsOrder: a BatchGet of 150,000 keys goes in requests of the read limit
// (65,536 keys), the results in key order, the lease the smallest of the requests'.
func TestBatchGetSplitsAndKeepsOrder(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	keys := make([]string, 150000)
	for i := range keys {
		keys[i] = fmt.Sprint(i)
	}
	resp, err := c.BatchGet(testCtx(t), "", keys)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.batches(); !reflect.DeepEqual(got, []int{65536, 65536, 18928}) {
		t.Fatalf("batch sizes %v, want [65536 65536 18928]", got)
	}
	checkGetOrder(t, resp, len(keys))
	if resp.GetLeaseTtlMs() != 100000-65536 {
		t.Fatalf("lease %d, want the smallest of the requests'", resp.GetLeaseTtlMs())
	}
}

// checkGetOrder checks that resp has n results, result i for key i, all OK.
func checkGetOrder(t *testing.T, resp *metadv1.BatchGetResponse, n int) {
	t.Helper()
	if len(resp.GetResults()) != n {
		t.Fatalf("%d results for %d keys", len(resp.GetResults()), n)
	}
	for i, r := range resp.GetResults() {
		if ItemErr(r.GetStatus()) != nil || r.GetSize() != uint64(i) {
			t.Fatalf("result %d is for key %d (%v)", i, r.GetSize(), r.GetStatus())
		}
	}
}

// TestBatchGetAsksAgainPastTheResponseBound: keys a server answers RESPONSE_LIMIT_REACHED are asked
// again from the first of them, until every key has its result, in order.
func TestBatchGetAsksAgainPastTheResponseBound(t *testing.T) {
	a := startFake(t)
	a.getBound.Store(300)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint(i)
	}
	resp, err := c.BatchGet(testCtx(t), "", keys)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.batches(); !reflect.DeepEqual(got, []int{1000, 700, 400, 100}) {
		t.Fatalf("batch sizes %v, want [1000 700 400 100]", got)
	}
	checkGetOrder(t, resp, len(keys))
}

func TestBatchPutReportsPerItem(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	items := []BatchPutItem{{Key: "a", Size: 1}, {Key: "exists", Size: 1}, {Key: "b", Group: "g", Size: 1}}
	res, err := c.BatchPut(testCtx(t), "", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || ItemErr(res[0]) != nil || ItemErr(res[2]) != nil {
		t.Fatalf("results %v", res)
	}
	if err := ItemErr(res[1]); ReasonOf(err) != metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS ||
		!strings.HasPrefix(err.Error(), "OBJECT_ALREADY_EXISTS: ") {
		t.Fatalf("item 1: %v", err)
	}
	if got := a.batches(); !reflect.DeepEqual(got, []int{3, 2}) {
		t.Fatalf("batch sizes %v, want start 3 then end 2", got)
	}
}

func TestBatchEmptyListSendsNothing(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	if res, err := c.BatchPutEnd(testCtx(t), "", nil, 0); err != nil || len(res) != 0 || a.calls.Load() != 0 {
		t.Fatalf("empty batch: %v %v, %d calls", res, err, a.calls.Load())
	}
}

func TestBatchWrongResultCountIsAnError(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	if _, err := c.BatchRemove(testCtx(t), "", []string{"a", "b"}, false); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
}

func TestSpansRespectCountAndBytes(t *testing.T) {
	big := strings.Repeat("k", 4000)
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = big
	}
	total := 0
	for _, sp := range keySpans(keys) {
		n := sp[1] - sp[0]
		if n > MaxBatchItems || n*(len(big)+8) > MaxBatchBytes {
			t.Fatalf("span %v too large", sp)
		}
		total += n
	}
	if total != len(keys) {
		t.Fatalf("spans cover %d of %d keys", total, len(keys))
	}
	if got := keySpans(make([]string, 4097)); len(got) != 2 || got[0] != [2]int{0, 4096} {
		t.Fatalf("4097 small keys: %v", got)
	}
	if got := keySpans(nil); len(got) != 0 {
		t.Fatalf("no keys: %v", got)
	}
}

func TestBatches(t *testing.T) {
	items := make([]int, 9)
	got := Batches(items, 4)
	if len(got) != 3 || len(got[0]) != 4 || len(got[2]) != 1 || cap(got[0]) != 4 {
		t.Fatalf("Batches(9, 4) = %v", got)
	}
	if got := Batches(make([]int, 5000), 0); len(got) != 2 || len(got[0]) != MaxBatchItems {
		t.Fatalf("default size: %d batches", len(got))
	}
}

// TestBatchReadsSendEachKeyOnce: the server refuses a request that repeats a key, so BatchGet asks
// each key once and gives its result at every position (a copy for each repeat).
func TestBatchReadsSendEachKeyOnce(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	keys := []string{"1", "2", "1", "3", "2", "1"}
	resp, err := c.BatchGet(testCtx(t), "", keys)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.batches(); !reflect.DeepEqual(got, []int{3}) {
		t.Fatalf("batch sizes %v, want one request of the 3 distinct keys", got)
	}
	if len(resp.GetResults()) != len(keys) {
		t.Fatalf("%d results for %d keys", len(resp.GetResults()), len(keys))
	}
	for i, r := range resp.GetResults() {
		if fmt.Sprint(r.GetSize()) != keys[i] {
			t.Fatalf("result %d is for key %d, want %s", i, r.GetSize(), keys[i])
		}
	}
	if resp.GetResults()[0] == resp.GetResults()[2] {
		t.Fatal("a repeated key's results share one message")
	}
}

// TestBatchWritesRefuseRepeatedKeys: a batch write that names a key twice fails with
// ErrRepeatedKey, naming both positions, before anything is sent.
func TestBatchWritesRefuseRepeatedKeys(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	ctx := testCtx(t)
	keys := []string{"a", "b", "c", "b"}
	items := []BatchPutItem{{Key: "a", Size: 1}, {Key: "a", Group: "g", Size: 2}}
	for name, call := range map[string]func() error{
		"BatchPutStart": func() error { _, err := c.BatchPutStart(ctx, "", items, nil); return err },
		"BatchPut":      func() error { _, err := c.BatchPut(ctx, "", items, nil); return err },
		"BatchPutEnd":   func() error { _, err := c.BatchPutEnd(ctx, "", keys, 0); return err },
		"BatchPutRevoke": func() error {
			_, err := c.BatchPutRevoke(ctx, "", keys, 0)
			return err
		},
		"BatchRemove": func() error { _, err := c.BatchRemove(ctx, "", keys, true); return err },
	} {
		err := call()
		if !errors.Is(err, ErrRepeatedKey) {
			t.Errorf("%s: %v, want ErrRepeatedKey", name, err)
			continue
		}
		if want := "keys[3] repeats keys[1]"; name != "BatchPutStart" && name != "BatchPut" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", name, err, want)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Fatalf("%d calls sent", n)
	}
}
