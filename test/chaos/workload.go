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
