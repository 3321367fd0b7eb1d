package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// Client ids of the recorders that are not workload clients.
const (
	probeClient    = 1000
	finalClient    = 1001
	snapshotClient = 1002
)

// errClass is what an answer says about a write's effect.
type errClass int

const (
	clsOK      errClass = iota // it took effect
	clsReason                  // a deterministic rejection: nothing changed, the reason says why
	clsNoop                    // certainly not proposed (no leader known, not the leader, refused connection)
	clsUnknown                 // may or may not have taken effect
)

// classify sorts an error of one RPC attempt. Store reasons are rejections, but SESSION_EXPIRED,
// which leaves an earlier attempt's outcome unknown; NOT_LEADER naming a
// leader without a failed forward, UNAVAILABLE "no leader is known" or "pipeline is full", and a
// connection that never came up (the client's, or the follower's forward: refused, no server
// preface, a failed TLS handshake) mean nothing was proposed; everything else (a deadline, a broken connection, "outcome
// is unknown", a forward that failed after it was sent, shutdown) is unknown.
func classify(err error) (errClass, string) {
	if err == nil {
		return clsOK, ""
	}
	r := client.ReasonOf(err)
	switch r {
	case metadv1.Reason_REASON_UNSPECIFIED, metadv1.Reason_REASON_NOT_LEADER, metadv1.Reason_REASON_UNAVAILABLE:
	case metadv1.Reason_REASON_SESSION_EXPIRED:
		// The client returns it only for a retry (a first attempt's opens a new session): an
		// earlier attempt may have applied before the session ended.
		return clsUnknown, ""
	default:
		return clsReason, client.ReasonName(r)
	}
	st, _ := status.FromError(err)
	msg := st.Message()
	// The call (or the follower's forward of it) never got a connection: nothing was sent. A TLS
	// handshake precedes every byte of HTTP/2, so one that failed sent nothing either.
	neverSent := strings.Contains(msg, "connection refused") || strings.Contains(msg, "server preface") ||
		strings.Contains(msg, "while dialing") || strings.Contains(msg, "authentication handshake failed")
	switch {
	case r == metadv1.Reason_REASON_NOT_LEADER && !strings.Contains(msg, "forwarding to the leader"):
		return clsNoop, rNotLeader
	case r == metadv1.Reason_REASON_NOT_LEADER && neverSent:
		return clsNoop, rNotLeader
	case r == metadv1.Reason_REASON_UNAVAILABLE && client.DetailOf(err) != nil &&
		(strings.Contains(msg, "no leader is known") || strings.Contains(msg, "pipeline is full") ||
			strings.Contains(msg, "nothing was forwarded")):
		return clsNoop, "UNAVAILABLE"
	case st.Code() == codes.Unavailable && client.DetailOf(err) == nil && neverSent:
		return clsNoop, "UNAVAILABLE"
	}
	return clsUnknown, ""
}

// router sends each write attempt to one node, as the Go client would choose it, but makes
// exactly one attempt per call so that every attempt is recorded on its own: the Go client's
// retries would fold two commands into one answer. Not safe for concurrent use (one per
// workload client).
type router struct {
	cls   []*client.Client // one per node: MaxRetries -1, the same client id
	addrs []string
	cur   int
}

func newRouter(eps []string, id client.UUID, auth Auth) (*router, error) {
	r := &router{addrs: eps}
	for _, ep := range eps {
		cl, err := client.New(auth.Apply(client.Config{Endpoints: []string{ep}, MaxRetries: -1, ClientID: id,
			DialTimeout: time.Second}))
		if err != nil {
			r.close()
			return nil, err
		}
		r.cls = append(r.cls, cl)
	}
	return r, nil
}

func (r *router) close() {
	for _, cl := range r.cls {
		_ = cl.Close()
	}
}

// next moves to the leader an error names, or to the next node.
func (r *router) next(err error) {
	if _, addr := client.LeaderOf(err); addr != "" {
		if i := slices.Index(r.addrs, addr); i >= 0 && i != r.cur {
			r.cur = i
			return
		}
	}
	r.cur = (r.cur + 1) % len(r.cls)
}

// Workload settings.
type workloadConfig struct {
	Clients      int
	AttemptLimit time.Duration // one write attempt's deadline
	ReadLimit    time.Duration // one read call's deadline, the client's retries included
	MaxSize      int           // object sizes are 1..MaxSize bytes
}

// workload runs the clients. Start, then Stop; safe for concurrent use by those two calls.
type workload struct {
	cfg  workloadConfig
	ks   *keyspace
	hist *History
	eps  []string
	auth []Auth // client i's credentials
	seed uint64
	ws   *writers

	stop    chan struct{} // closed by Stop: clients finish their flow and return
	wg      sync.WaitGroup
	mu      sync.Mutex // guards errs
	errs    []error
	dropped atomic.Int64 // failed reads left out of the history
	noops   atomic.Int64 // write attempts certainly not proposed, left out of the history
}

// newWorkload makes the workload; auth holds each client's credentials (cfg.Clients of them).
func newWorkload(cfg workloadConfig, ks *keyspace, hist *History, eps []string, auth []Auth, seed uint64, ws *writers) *workload {
	return &workload{cfg: cfg, ks: ks, hist: hist, eps: eps, auth: auth, seed: seed, ws: ws, stop: make(chan struct{})}
}

// Start launches the clients.
func (wl *workload) Start() error {
	for i := range wl.cfg.Clients {
		id := client.NewUUID()
		wl.ws.add(id, int32(i))
		r, err := newRouter(wl.eps, id, wl.auth[i])
		if err != nil {
			return err
		}
		rd, err := client.New(wl.auth[i].Apply(client.Config{Endpoints: wl.eps, ClientID: id}))
		if err != nil {
			r.close()
			return err
		}
		w := &wclient{wl: wl, id: int32(i), r: r, rd: rd, dirty: map[string]int{}, tasks: map[string]*openTask{},
			rng: rand.New(rand.NewPCG(wl.seed, uint64(i)+1))}
		if i%2 == 1 { // the odd clients write through the reads' client: a session, and its retries
			w.sess = rd
		}
		w.r.cur = i % len(wl.eps)
		wl.wg.Add(1)
		go func() {
			defer wl.wg.Done()
			defer r.close()
			defer rd.Close()
			w.run()
		}()
	}
	return nil
}

// Stop ends the clients and waits for them (each finishes the flow it is in, bounded by its
// deadlines).
func (wl *workload) Stop() error {
	close(wl.stop)
	wl.wg.Wait()
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return errors.Join(wl.errs...)
}

func (wl *workload) fail(err error) {
	wl.mu.Lock()
	wl.errs = append(wl.errs, err)
	wl.mu.Unlock()
}

// wclient is one workload client; used by its goroutine only.
type wclient struct {
	wl *workload
	id int32
	r  *router
	rd *client.Client // reads, and copy and move calls in its session: the Go client with its retries
	// sess, when set, writes: the Go client in its session, retrying a write on any node with the
	// same sequence number, so that a write whose answer was lost (a killed leader, a muted link)
	// is applied once and answered as the first attempt would have been. One call is one
	// operation, recorded as one: the checker holds it to exactly once.
	sess  *client.Client
	rng   *rand.Rand
	dirty map[string]int       // "tenant\x00key" -> revoke attempts: a write of ours may be pending there
	tasks map[string]*openTask // "tenant\x00key" -> a copy or move of ours that may be running
}

// openTask is a replica task of ours that may still run (its Start, End or Revoke left with an
// unknown outcome): cleanup revokes it.
type openTask struct {
	revoke opKind // opCopyRevoke or opMoveRevoke
	tries  int
}

func (w *wclient) stopped() bool {
	select {
	case <-w.wl.stop:
		return true
	default:
		return false
	}
}

func (w *wclient) run() {
	type flow struct {
		weight int
		run    func()
	}
	flows := []flow{
		{22, w.put}, {14, w.get}, {8, w.exist}, {9, w.remove}, {8, w.groupPut}, {4, w.removeGroup},
		{4, w.listGroup}, {8, w.batchGet}, {5, w.batchExist}, {4, w.batchRemove}, {6, w.batchPut},
		{6, w.replicate},
	}
	total := 0
	for _, f := range flows {
		total += f.weight
	}
	for !w.stopped() {
		w.cleanup()
		n := w.rng.IntN(total)
		for _, f := range flows {
			if n < f.weight {
				f.run()
				break
			}
			n -= f.weight
		}
	}
}

func (w *wclient) tenant() string {
	return w.wl.ks.Tenants[w.rng.IntN(len(w.wl.ks.Tenants))]
}

func (w *wclient) singleton(t string) string {
	ks := w.wl.ks.Singletons[t]
	return ks[w.rng.IntN(len(ks))]
}

func (w *wclient) groupOf(t string) string {
	gs := w.wl.ks.Groups[t]
	return gs[w.rng.IntN(len(gs))]
}

// someKeys returns 2..5 distinct keys of tenant t, singletons and group members mixed.
func (w *wclient) someKeys(t string, withMembers bool) []string {
	n := 2 + w.rng.IntN(4)
	var keys []string
	for len(keys) < n {
		k := w.singleton(t)
		if withMembers && w.rng.IntN(3) == 0 {
			k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func (w *wclient) size() uint64 { return 1 + uint64(w.rng.IntN(w.wl.cfg.MaxSize)) }

// try is one write attempt: its class, reason, error and times.
type try struct {
	cls       errClass
	reason    string
	err       error
	call, ret time.Duration
}

// attempt runs one write RPC through the router until it is proposed or refused (at most four
// tries of calls that were certainly not proposed). It returns every try, the last one last.
func (w *wclient) attempt(fn func(ctx context.Context, cl *client.Client) error) []try {
	if w.sess != nil {
		return []try{w.inSession(w.sess, fn)}
	}
	return w.routed(fn)
}

// inSession is one write call through the session client cl, its retries inside. Its outcome is
// known when it succeeded or was refused (a retry of a write that applied gets the session's answer
// of it); any other failure leaves it unknown.
func (w *wclient) inSession(cl *client.Client, fn func(ctx context.Context, cl *client.Client) error) try {
	// One call, its retries inside: a session write is at most once, whatever the retries.
	ctx, cancel := context.WithTimeout(context.Background(), sessionCallLimit*w.wl.cfg.AttemptLimit)
	t := try{call: w.wl.hist.since()}
	t.err = fn(ctx, cl)
	t.ret = w.wl.hist.since()
	cancel()
	t.cls, t.reason = classify(t.err)
	if t.cls == clsNoop {
		// The error is the last attempt's: that one was not proposed, but an earlier one may have
		// been, and committed with its answer lost (a leader that stepped down, a silent node).
		t.cls, t.reason = clsUnknown, ""
	}
	return t
}

// routed is attempt through the router: one try per node, every try recorded.
func (w *wclient) routed(fn func(ctx context.Context, cl *client.Client) error) []try {
	backoff := 20 * time.Millisecond
	var tries []try
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), w.wl.cfg.AttemptLimit)
		t := try{call: w.wl.hist.since()}
		t.err = fn(ctx, w.r.cls[w.r.cur])
		t.ret = w.wl.hist.since()
		cancel()
		t.cls, t.reason = classify(t.err)
		tries = append(tries, t)
		if t.cls == clsOK || t.cls == clsReason {
			return tries
		}
		w.r.next(t.err)
		if t.cls == clsUnknown {
			return tries
		}
		w.wl.noops.Add(1)
		if n == 3 || w.stopped() {
			return tries
		}
		// The choice of the next node is the wait: give an election time to finish.
		tm := time.NewTimer(backoff/2 + time.Duration(w.rng.Int64N(int64(backoff/2)+1)))
		select {
		case <-tm.C:
		case <-w.wl.stop:
			tm.Stop()
		}
		backoff = min(2*backoff, 400*time.Millisecond)
	}
}

// sessionCallLimit is a session write's deadline, in attempt limits: room for the client to leave a
// silent node (one attempt timeout) and retry elsewhere after an election.
const sessionCallLimit = 4

// last is the final try.
func last(ts []try) try { return ts[len(ts)-1] }

// recordAll records every try of a one-key write; fill completes a successful output.
func (w *wclient) recordAll(ref keyRef, in input, ts []try, fill func(*output)) {
	for _, t := range ts {
		w.record(ref, in, t, fill)
	}
}

// record adds one operation for a write attempt. An attempt that was certainly not proposed is
// recorded too (it changes nothing in the model, but the checker looks at what was in flight).
func (w *wclient) record(ref keyRef, in input, t try, fill func(*output)) {
	in.Member, in.Writer = ref.Member, w.id
	op := &Op{Client: int(w.id), Part: ref.Part, In: in, Call: t.call, Return: t.ret}
	cls, reason, err := t.cls, t.reason, t.err
	switch cls {
	case clsOK:
		op.Out.Res = resOK
		if fill != nil {
			fill(&op.Out)
		}
	case clsReason:
		op.Out = output{Res: resReason, Reason: reason}
	case clsUnknown:
		op.Out.Res, op.Open = resUnknown, true
		op.Detail = errText(err)
	case clsNoop:
		op.Out.Res = resNoop
		op.Detail = errText(err)
	}
	w.wl.hist.add(op)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	if st, ok := status.FromError(err); ok {
		return st.Code().String() + ": " + st.Message()
	}
	return err.Error()
}

func dkey(t, k string) string { return t + "\x00" + k }

// cleanup revokes our writes that may be pending after an unknown answer.
func (w *wclient) cleanup() {
	for dk, tries := range w.dirty {
		if w.stopped() && tries > 0 {
			continue
		}
		t, k, _ := strings.Cut(dk, "\x00")
		if !w.revoke(t, k) && tries < 5 {
			w.dirty[dk] = tries + 1
			continue
		}
		delete(w.dirty, dk)
	}
	for dk, ot := range w.tasks {
		if w.stopped() && ot.tries > 0 {
			continue
		}
		t, k, _ := strings.Cut(dk, "\x00")
		if cls, _ := w.taskCall(t, k, ot.revoke, nil); cls == clsUnknown && ot.tries < 5 {
			ot.tries++
			continue
		}
		delete(w.tasks, dk)
	}
}

// revoke sends one PutRevoke; true when the answer is definite.
func (w *wclient) revoke(t, k string) bool {
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		return cl.PutRevoke(ctx, t, k, metadv1.Tier_TIER_UNSPECIFIED)
	})
	w.recordAll(w.wl.ks.ref(t, k), input{Kind: opPutRevoke, Label: t + "/" + k}, ts, nil)
	cls := last(ts).cls
	return cls == clsOK || cls == clsReason
}

// end sends PutEnd until it is definite (at most three tries, an unknown end is safe to repeat).
// It returns the definite answer's reason name ("" when it succeeded or stayed unknown).
func (w *wclient) end(t, k string) string {
	for range 3 {
		ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
			return cl.PutEnd(ctx, t, k, metadv1.Tier_TIER_UNSPECIFIED)
		})
		w.recordAll(w.wl.ks.ref(t, k), input{Kind: opPutEnd, Label: t + "/" + k}, ts, nil)
		if tr := last(ts); tr.cls == clsOK || tr.cls == clsReason {
			return tr.reason
		}
	}
	w.dirty[dkey(t, k)] = 0
	return ""
}

// putPlacements bounds how many times one put places its object: a PutEnd that answers
// RESERVATION_LOST (a leader change lost the reservation its PutStart got from the leader's
// arenas; nothing was created) places it again, as a client must.
const putPlacements = 3

// put: PutStart then PutEnd (one in ten: PutRevoke) of a singleton key, placed again after
// RESERVATION_LOST.
func (w *wclient) put() {
	t := w.tenant()
	k := w.singleton(t)
	size := w.size()
	for n := 1; ; n++ {
		ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
			_, err := cl.PutStart(ctx, t, k, size, nil)
			return err
		})
		w.recordAll(w.wl.ks.ref(t, k), input{Kind: opPutStart, Size: size, Label: t + "/" + k}, ts, nil)
		switch cls := last(ts).cls; {
		case cls == clsUnknown:
			w.dirty[dkey(t, k)] = 0
			return
		case cls != clsOK:
			return
		case w.rng.IntN(10) == 0:
			if !w.revoke(t, k) {
				w.dirty[dkey(t, k)] = 0
			}
			return
		}
		if w.end(t, k) != rLost || n == putPlacements || w.stopped() {
			return
		}
	}
}

// batchPut: BatchPutStart then BatchPutEnd of the items that started.
func (w *wclient) batchPut() {
	t := w.tenant()
	keys := w.someKeys(t, false)
	items := make([]client.BatchPutItem, len(keys))
	for i, k := range keys {
		items[i] = client.BatchPutItem{Key: k, Size: w.size()}
	}
	w.batchPutItems(t, items)
}

// groupPut: put the members of a group (all, or some) in one batch.
func (w *wclient) groupPut() {
	t := w.tenant()
	g := w.groupOf(t)
	var items []client.BatchPutItem
	for m := range groupMembers {
		if w.rng.IntN(4) != 0 {
			items = append(items, client.BatchPutItem{Key: fmt.Sprintf("%s-m%d", g, m), Group: g, Size: w.size()})
		}
	}
	if len(items) == 0 {
		return
	}
	w.batchPutItems(t, items)
}

func (w *wclient) batchPutItems(t string, items []client.BatchPutItem) {
	var res []*metadv1.BatchPutStartResponse_Result
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		res, err = cl.BatchPutStart(ctx, t, items, nil)
		if err == nil && len(res) != len(items) {
			err = fmt.Errorf("chaos: %d results for %d items", len(res), len(items))
		}
		return err
	})
	var started []string
	for i, it := range items {
		in := input{Kind: opPutStart, Size: it.Size, Label: t + "/" + it.Key}
		icls := w.recordItem(w.wl.ks.ref(t, it.Key), in, ts, func() *metadv1.Status { return res[i].GetStatus() })
		switch icls {
		case clsOK:
			started = append(started, it.Key)
		case clsUnknown:
			w.dirty[dkey(t, it.Key)] = 0
		}
	}
	if len(started) == 0 {
		return
	}
	for try := 0; try < 3 && len(started) > 0; try++ {
		var st []*metadv1.Status
		ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
			var err error
			st, err = cl.BatchPutEnd(ctx, t, started, metadv1.Tier_TIER_UNSPECIFIED)
			if err == nil && len(st) != len(started) {
				err = fmt.Errorf("chaos: %d results for %d items", len(st), len(started))
			}
			return err
		})
		var again []string
		for i, k := range started {
			icls := w.recordItem(w.wl.ks.ref(t, k), input{Kind: opPutEnd, Label: t + "/" + k}, ts, func() *metadv1.Status { return st[i] })
			if icls == clsUnknown || icls == clsNoop {
				again = append(again, k)
			}
		}
		started = again
	}
	for _, k := range started {
		w.dirty[dkey(t, k)] = 0
	}
}

// recordItem records one item's view of every try of a batch call: the tries before the last as
// they were (the whole request failed), the last with the item's own status when the request
// succeeded. It returns the item's final class.
func (w *wclient) recordItem(ref keyRef, in input, ts []try, status func() *metadv1.Status) errClass {
	for i, t := range ts {
		if i == len(ts)-1 && t.cls == clsOK {
			t.cls, t.reason = itemClass(status())
		}
		w.record(ref, in, t, nil)
		if i == len(ts)-1 {
			return t.cls
		}
	}
	return clsNoop
}

// itemClass is classify for one item of a batch answer.
func itemClass(s *metadv1.Status) (errClass, string) {
	if s.GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
		return clsOK, ""
	}
	return clsReason, client.ReasonName(s.GetReason())
}

func (w *wclient) remove() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	force := w.rng.IntN(10) < 7
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		return cl.Remove(ctx, t, k, force)
	})
	w.recordAll(w.wl.ks.ref(t, k), input{Kind: opRemove, Force: force, Label: t + "/" + k}, ts, nil)
}

func (w *wclient) batchRemove() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	force := w.rng.IntN(10) < 7
	var st []*metadv1.Status
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		st, err = cl.BatchRemove(ctx, t, keys, force)
		if err == nil && len(st) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d items", len(st), len(keys))
		}
		return err
	})
	for i, k := range keys {
		w.recordItem(w.wl.ks.ref(t, k), input{Kind: opRemove, Force: force, Label: t + "/" + k}, ts, func() *metadv1.Status { return st[i] })
	}
}

func (w *wclient) removeGroup() {
	t := w.tenant()
	g := w.groupOf(t)
	force := w.rng.IntN(10) < 7
	var n uint64
	ts := w.attempt(func(ctx context.Context, cl *client.Client) error {
		var err error
		n, err = cl.RemoveGroup(ctx, t, g, force)
		return err
	})
	ref := keyRef{Part: w.wl.ks.groupPart(t, g)}
	w.recordAll(ref, input{Kind: opRemoveGroup, Force: force, Label: t + "/" + g}, ts, func(o *output) { o.Count = n })
}

// read runs a read with the Go client (its retries are harmless: a read changes nothing) and
// returns the call and return times and the read's error; ok is false when the read failed without
// an answer (it is then left out of the history).
func (w *wclient) read(fn func(ctx context.Context) error) (call, ret time.Duration, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.wl.cfg.ReadLimit)
	defer cancel()
	call = w.wl.hist.since()
	err = fn(ctx)
	ret = w.wl.hist.since()
	if cls, _ := classify(err); cls == clsOK || cls == clsReason {
		return call, ret, true, err
	}
	w.wl.dropped.Add(1)
	return call, ret, false, err
}

func readOp(client int, ref keyRef, kind opKind, label string, err error, call, ret time.Duration) *Op {
	op := &Op{Client: client, Part: ref.Part, In: input{Kind: kind, Member: ref.Member, Writer: int32(client), Label: label},
		Call: call, Return: ret}
	if cls, reason := classify(err); cls == clsReason {
		op.Out = output{Res: resReason, Reason: reason}
	}
	return op
}

func (w *wclient) get() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	w.getKey(t, k)
}

// getKey reads t/k into the history and returns the answer (nil when it was not found or failed).
func (w *wclient) getKey(t, k string) *metadv1.GetResponse {
	var resp *metadv1.GetResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.Get(ctx, t, k)
		return err
	})
	if !ok {
		return nil
	}
	op := readOp(int(w.id), w.wl.ks.ref(t, k), opGet, t+"/"+k, err, call, ret)
	if err != nil {
		w.wl.hist.add(op)
		return nil
	}
	op.Out.Size, op.Out.Replicas = resp.GetSize(), uint8(len(resp.GetReplicas()))
	w.wl.hist.add(op)
	return resp
}

// replicate copies or moves a replica of a key (a singleton, one time in four a group member): a
// Get finds a source segment (a stale one for a move, below), then CopyStart (MoveStart) with the target placed by the leader,
// then, after the time a copy of the bytes would take, CopyEnd (MoveEnd), one time in eight
// CopyRevoke (MoveRevoke) instead. Every client sends these through its session client with its
// retries, so a call whose answer was lost is applied once; a task whose outcome stays unknown is
// revoked by cleanup.
func (w *wclient) replicate() {
	t := w.tenant()
	k := w.singleton(t)
	if w.rng.IntN(4) == 0 {
		k = fmt.Sprintf("%s-m%d", w.groupOf(t), w.rng.IntN(groupMembers))
	}
	start, end, revoke := opCopyStart, opCopyEnd, opCopyRevoke
	move := w.rng.IntN(2) == 0
	if move {
		start, end, revoke = opMoveStart, opMoveEnd, opMoveRevoke
	}
	// A copy finds its source with a recorded Get, which leases the object. A MoveEnd waits for
	// a lease to end (a reader may still read the source), so a move finds its source with a
	// stale Get instead, which leases nothing and is not recorded (it is not linearizable): a
	// source that moved meanwhile is refused with REPLICA_NOT_FOUND, nothing changed.
	var resp *metadv1.GetResponse
	if move {
		ctx, cancel := context.WithTimeout(context.Background(), w.wl.cfg.AttemptLimit)
		resp, _ = w.rd.Get(ctx, t, k, client.Stale())
		cancel()
	} else {
		resp = w.getKey(t, k)
	}
	if len(resp.GetReplicas()) == 0 || w.stopped() {
		return
	}
	src := resp.GetReplicas()[w.rng.IntN(len(resp.GetReplicas()))].GetSegmentId()
	switch cls, _ := w.taskCall(t, k, start, src); cls {
	case clsOK:
	case clsUnknown:
		w.tasks[dkey(t, k)] = &openTask{revoke: revoke}
		return
	default:
		return
	}
	if w.rng.IntN(8) == 0 {
		end = revoke
	}
	// The worker's copy of the bytes: 0-300 ms, so that some tasks span a fault and a leader
	// change, which must keep them.
	tm := time.NewTimer(time.Duration(w.rng.Int64N(int64(300 * time.Millisecond))))
	select {
	case <-tm.C:
	case <-w.wl.stop:
		tm.Stop()
	}
	leaseWaits := 0
	for n := 0; n < 3; { // an End or Revoke in the session is safe to repeat
		cls, reason := w.taskCall(t, k, end, nil)
		switch {
		case end == opMoveEnd && reason == rHasLease && leaseWaits < moveLeaseWaits && !w.stopped():
			// A reader leased the object (the Get above did): MoveEnd waits for the lease to end,
			// as a worker does (client.RunTasks).
			leaseWaits++
			tm := time.NewTimer(moveLeaseWait)
			select {
			case <-tm.C:
			case <-w.wl.stop:
				tm.Stop()
			}
			continue
		case reason == rHasLease:
			end = revoke
			continue
		case cls != clsUnknown:
			return
		}
		n++
	}
	w.tasks[dkey(t, k)] = &openTask{revoke: revoke}
}

// A MoveEnd refused for a read lease is asked again every moveLeaseWait, at most moveLeaseWaits
// times (about half the drills' leaseTTL: a busy key is revoked rather than waited on for long),
// then the move is revoked.
const (
	moveLeaseWait  = 250 * time.Millisecond
	moveLeaseWaits = 4
)

// taskCall sends one task call of kind on t/k through the session client and records it; src is
// the source segment of a Start. It returns the call's class (never clsNoop: see inSession) and
// its refusal's reason name ("" when none).
func (w *wclient) taskCall(t, k string, kind opKind, src []byte) (errClass, string) {
	tr := w.inSession(w.rd, func(ctx context.Context, cl *client.Client) error {
		var err error
		switch kind {
		case opCopyStart:
			_, _, err = cl.CopyStart(ctx, t, k, src, nil, 1)
		case opMoveStart:
			_, _, err = cl.MoveStart(ctx, t, k, src, nil)
		case opCopyEnd:
			err = cl.CopyEnd(ctx, t, k)
		case opMoveEnd:
			err = cl.MoveEnd(ctx, t, k)
		case opCopyRevoke:
			err = cl.CopyRevoke(ctx, t, k)
		case opMoveRevoke:
			err = cl.MoveRevoke(ctx, t, k)
		default:
			panic("chaos: taskCall of " + kind.String())
		}
		return err
	})
	w.record(w.wl.ks.ref(t, k), input{Kind: kind, Label: t + "/" + k}, tr, nil)
	return tr.cls, tr.reason
}

func (w *wclient) exist() {
	t := w.tenant()
	k := w.singleton(t)
	var ex bool
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		ex, err = w.rd.Exist(ctx, t, k)
		return err
	})
	if !ok {
		return
	}
	op := readOp(int(w.id), w.wl.ks.ref(t, k), opExist, t+"/"+k, err, call, ret)
	op.Out.Exists = ex
	w.wl.hist.add(op)
}

func (w *wclient) batchGet() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	var resp *metadv1.BatchGetResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.BatchGet(ctx, t, keys)
		if err == nil && len(resp.GetResults()) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d keys", len(resp.GetResults()), len(keys))
		}
		return err
	})
	if !ok {
		return
	}
	if err != nil {
		w.wl.fail(fmt.Errorf("BatchGet %s %v: %v", t, keys, err))
		return
	}
	for i, k := range keys {
		w.wl.hist.add(batchGetOp(int(w.id), w.wl.ks.ref(t, k), t+"/"+k, resp.GetResults()[i], call, ret))
	}
}

func batchGetOp(cl int, ref keyRef, label string, r *metadv1.BatchGetResponse_Result, call, ret time.Duration) *Op {
	op := &Op{Client: cl, Part: ref.Part, In: input{Kind: opGet, Member: ref.Member, Writer: int32(cl), Label: label},
		Call: call, Return: ret}
	if cls, reason := itemClass(r.GetStatus()); cls == clsReason {
		op.Out = output{Res: resReason, Reason: reason}
	} else {
		op.Out.Size, op.Out.Replicas = r.GetSize(), uint8(len(r.GetReplicas()))
	}
	return op
}

func (w *wclient) batchExist() {
	t := w.tenant()
	keys := w.someKeys(t, true)
	var resp *metadv1.BatchExistResponse
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		resp, err = w.rd.BatchExist(ctx, t, keys)
		if err == nil && len(resp.GetExists()) != len(keys) {
			err = fmt.Errorf("chaos: %d results for %d keys", len(resp.GetExists()), len(keys))
		}
		return err
	})
	if !ok {
		return
	}
	if err != nil {
		w.wl.fail(fmt.Errorf("BatchExist %s %v: %v", t, keys, err))
		return
	}
	for i, k := range keys {
		op := readOp(int(w.id), w.wl.ks.ref(t, k), opExist, t+"/"+k, nil, call, ret)
		op.Out.Exists = resp.GetExists()[i]
		w.wl.hist.add(op)
	}
}

func (w *wclient) listGroup() {
	t := w.tenant()
	g := w.groupOf(t)
	var keys []string
	call, ret, ok, err := w.read(func(ctx context.Context) error {
		var err error
		keys, err = w.rd.ListGroup(ctx, t, g)
		return err
	})
	if !ok {
		return
	}
	w.wl.hist.add(listGroupOp(int(w.id), w.wl.ks.groupPart(t, g), t, g, keys, err, call, ret))
}

func listGroupOp(cl, part int, t, g string, keys []string, err error, call, ret time.Duration) *Op {
	op := readOp(cl, keyRef{Part: part}, opListGroup, t+"/"+g, err, call, ret)
	if err == nil {
		for _, k := range keys {
			var m int
			if _, err := fmt.Sscanf(strings.TrimPrefix(k, g+"-"), "m%d", &m); err == nil && m < maxMembers {
				op.Out.Listed |= 1 << m
			} else {
				op.Out.Listed |= 1 << (maxMembers - 1) // a stranger: never matches the model
			}
		}
	}
	return op
}
