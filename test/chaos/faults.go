package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"metad/client"
)

// FaultKind names a fault.
type FaultKind string

// The faults. "leader" and "follower" are resolved when the fault is injected: the node the
// monitor last saw leading, or one of the others.
const (
	KillLeader      FaultKind = "kill-leader"      // SIGKILL, restart from the data dir after Hold
	KillFollower    FaultKind = "kill-follower"    // same, a follower
	PauseLeader     FaultKind = "pause-leader"     // SIGSTOP, SIGCONT after Hold
	PauseFollower   FaultKind = "pause-follower"   // same, a follower
	IsolateLeader   FaultKind = "isolate-leader"   // cut from both others (peer and forwarding links) for Hold
	IsolateFollower FaultKind = "isolate-follower" // same, a follower
	Transfer        FaultKind = "transfer"         // leadership transfer (to a named follower, or any)
	StopLeader      FaultKind = "stop-leader"      // SIGTERM (hands leadership over), restart after Hold
	Snapshot        FaultKind = "snapshot"         // SnapshotSave from the leader under load, checked as a read
	Restore         FaultKind = "restore"          // SnapshotSave, Hold of load, SnapshotRestore of that file
	// RestartTransfer: kill -9 of a follower, restart from its data dir after Hold, and leadership
	// transferred to it the moment it is back: a leader that has not applied its backlog yet, with
	// the workload's removals arriving at once.
	RestartTransfer FaultKind = "restart-transfer"
	// DropReply: the answers the leader sends the drill's clients are lost for Hold (the link from
	// the clients to it is muted: calls arrive and run, answers vanish), so every write in flight
	// there is retried elsewhere after its outcome became unknown. Within a session the retry
	// gets the first answer; a duplicate effect is an anomaly.
	DropReply FaultKind = "drop-reply"
	// Upgrade restarts a node still on the older release (a follower while there is one, the
	// leader last) on this tree's metad, waits until it has caught up, and calls it with the older
	// release's metactl while another still runs the older metad, which this tree's metactl calls:
	// one step of a rolling upgrade (the upgrade drill's only fault, planUpgrade).
	Upgrade FaultKind = "upgrade"
)

// allFaults are the kinds the schedule draws from, with their weights.
var allFaults = []struct {
	Kind   FaultKind
	Weight int
}{
	{KillLeader, 5}, {KillFollower, 2}, {PauseLeader, 2}, {PauseFollower, 1},
	{IsolateLeader, 3}, {IsolateFollower, 2}, {Transfer, 2}, {StopLeader, 1}, {Snapshot, 1}, {Restore, 1},
	{RestartTransfer, 2}, {DropReply, 2},
}

// Fault is one planned fault and, once run, what happened. A plain value.
type Fault struct {
	Kind     FaultKind
	Hold     time.Duration // how long the fault lasts
	Gap      time.Duration // quiet time after the cluster recovered, before the next fault
	Mode     Mode          // isolate: drop or blackhole
	Pick     int           // which follower (index among the followers), or transfer target (-1 = any)
	Target   string        // the node it hit
	At       time.Duration // injected
	HealedAt time.Duration // healed (restarted, resumed, reconnected)
	Settled  time.Duration // a leader was agreed on again by every node
	Err      string
	// Unavail is the time from At to the return of the first successful probe write called at or
	// after At; -1 if none came before the next fault.
	Unavail time.Duration
}

func (f *Fault) String() string {
	s := string(f.Kind)
	if f.Target != "" {
		s += " " + f.Target
	}
	if f.Kind == IsolateLeader || f.Kind == IsolateFollower {
		s += " (" + f.Mode.String() + ")"
	}
	if f.Hold > 0 {
		s += fmt.Sprintf(" for %.1fs", f.Hold.Seconds())
	}
	return s
}

// plan draws the fault schedule from rng: faults of kinds (all if empty) but exclude, until their
// holds and gaps fill duration.
func plan(rng *rand.Rand, duration time.Duration, kinds, exclude []FaultKind) []*Fault {
	var pool []FaultKind
	for _, f := range allFaults {
		if len(kinds) > 0 && !containsKind(kinds, f.Kind) || containsKind(exclude, f.Kind) {
			continue
		}
		for range f.Weight {
			pool = append(pool, f.Kind)
		}
	}
	var out []*Fault
	var total time.Duration
	for total < duration && len(pool) > 0 {
		f := &Fault{Kind: pool[rng.IntN(len(pool))], Pick: rng.IntN(2), Mode: Drop,
			Gap: time.Duration(1000+rng.IntN(2000)) * time.Millisecond}
		switch f.Kind {
		case KillLeader, KillFollower, StopLeader:
			f.Hold = time.Duration(500+rng.IntN(3500)) * time.Millisecond
		case PauseLeader:
			// 2-15 s: past an election, and past the client ttl (10 s) in about a third of them,
			// so that the workers' pings must find the new leader while the old one is stopped.
			f.Hold = time.Duration(2000+rng.IntN(13001)) * time.Millisecond
		case PauseFollower:
			f.Hold = time.Duration(300+rng.IntN(2700)) * time.Millisecond
		case RestartTransfer:
			f.Hold = time.Duration(200+rng.IntN(1300)) * time.Millisecond
		case IsolateLeader, IsolateFollower:
			f.Hold = time.Duration(1000+rng.IntN(4000)) * time.Millisecond
			if rng.IntN(2) == 0 {
				f.Mode = Blackhole
			}
		case Transfer:
			f.Pick = rng.IntN(3) - 1
		case Restore:
			f.Hold = time.Duration(500+rng.IntN(2500)) * time.Millisecond
		case DropReply:
			f.Hold = time.Duration(500+rng.IntN(2500)) * time.Millisecond
		}
		out = append(out, f)
		total += f.Hold + f.Gap + time.Second // a second or so to recover
	}
	return out
}

// planUpgrade is the upgrade drill's schedule: one Upgrade of each of n nodes, gap apart.
func planUpgrade(n int, gap time.Duration) []*Fault {
	out := make([]*Fault, n)
	for i := range out {
		out[i] = &Fault{Kind: Upgrade, Gap: gap}
	}
	return out
}

func containsKind(ks []FaultKind, k FaultKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// ParseKinds parses a comma-separated list of fault kinds ("" = all).
func ParseKinds(s string) ([]FaultKind, error) {
	var out []FaultKind
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !containsKindName(p) {
			return nil, fmt.Errorf("unknown fault kind %q", p)
		}
		out = append(out, FaultKind(p))
	}
	return out, nil
}

func containsKindName(s string) bool {
	for _, f := range allFaults {
		if string(f.Kind) == s {
			return true
		}
	}
	return false
}

// injector runs the schedule against the cluster.
type injector struct {
	c      *Cluster
	mon    *monitor
	admin  *client.Client // through the proxies, with the client's retries (TransferLeader)
	direct []*client.Client
	hist   *History
	ks     *keyspace
	ws     *writers
	logf   func(format string, args ...any)
	stop   <-chan struct{}
}

// wait blocks for d or until stop; false if stopped.
func (in *injector) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-in.stop:
		return false
	}
}

// run injects the faults in order until the schedule ends or stop closes; the cluster is healed
// after each fault and before it returns.
func (in *injector) run(faults []*Fault) {
	for _, f := range faults {
		select {
		case <-in.stop:
			return
		default:
		}
		in.one(f)
		if !in.wait(f.Gap) {
			return
		}
	}
}

// leaderNow returns the current leader (waiting up to 10 s for one), or -1.
func (in *injector) leaderNow() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := in.c.WaitLeader(ctx, in.direct)
	if err != nil {
		return -1
	}
	return n.Index
}

func (in *injector) one(f *Fault) {
	leader := in.leaderNow()
	if leader < 0 {
		f.Err = "no leader to start from"
		f.At = in.hist.since()
		f.HealedAt, f.Settled = f.At, f.At
		in.logf("skip %s: no leader", f.Kind)
		return
	}
	var followers []int
	for i := range in.c.Nodes {
		if i != leader {
			followers = append(followers, i)
		}
	}
	target := leader
	if strings.HasSuffix(string(f.Kind), "follower") || f.Kind == RestartTransfer {
		target = followers[f.Pick%len(followers)]
	}
	if f.Kind == Upgrade {
		if target = in.toUpgrade(leader, followers); target < 0 {
			f.Err = "every node runs this tree's metad already"
			f.At = in.hist.since()
			f.HealedAt, f.Settled = f.At, f.At
			return
		}
	}
	n := in.c.Nodes[target]
	f.Target = n.Name
	f.At = in.hist.since()
	in.logf("%7.3fs inject %s", f.At.Seconds(), f)
	switch f.Kind {
	case KillLeader, KillFollower:
		in.c.Kill(n)
		in.wait(f.Hold)
		if err := in.c.Start(n); err != nil {
			f.Err = err.Error()
		}
	case StopLeader:
		if err := in.c.Stop(n); err != nil {
			f.Err = err.Error()
		}
		in.wait(f.Hold)
		if err := in.c.Start(n); err != nil {
			f.Err = err.Error()
		}
	case PauseLeader, PauseFollower:
		in.c.Pause(n)
		in.wait(f.Hold)
		in.c.Resume(n)
	case IsolateLeader, IsolateFollower:
		in.c.Net().Isolate(target, len(in.c.Nodes), f.Mode)
		in.wait(f.Hold)
		in.c.Net().Heal()
	case DropReply:
		in.c.Net().Set(External, target, Mute)
		in.wait(f.Hold)
		in.c.Net().Set(External, target, Pass)
	case RestartTransfer:
		in.c.Kill(n)
		in.wait(f.Hold)
		if err := in.c.Start(n); err != nil {
			f.Err = err.Error()
			break
		}
		if err := in.transferTo(n); err != nil {
			f.Err = err.Error()
		} else {
			f.Target = n.Name + " (restarted, then leader)"
		}
	case Transfer:
		to := ""
		if f.Pick >= 0 {
			to = in.c.Nodes[followers[f.Pick%len(followers)]].Name
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := in.admin.TransferLeader(ctx, to)
		cancel()
		if err != nil {
			f.Err = "transfer: " + errText(err)
		} else {
			f.Target = n.Name + " -> " + resp.GetLeaderName()
		}
	case Upgrade:
		if err := in.upgrade(n); err != nil {
			f.Err = err.Error()
		}
	case Snapshot:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, h, err := saveSnapshot(ctx, in.admin, in.hist, in.ks, in.ws)
		cancel()
		if err != nil {
			f.Err = err.Error()
		} else {
			f.Target = fmt.Sprintf("%s (index %d, %d objects)", n.Name, h.GetIndex(), h.GetObjects())
		}
	case Restore:
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		data, h, err := saveSnapshot(ctx, in.admin, in.hist, in.ks, in.ws)
		if err != nil {
			f.Err = err.Error()
			break
		}
		in.wait(f.Hold)
		leader := in.leaderNow()
		if leader < 0 {
			f.Err = "no leader to restore through"
			break
		}
		f.Target = fmt.Sprintf("%s (index %d, %d objects)", in.c.Nodes[leader].Name, h.GetIndex(), h.GetObjects())
		if err := restoreSnapshot(ctx, in.c, in.c.Nodes[leader].Client(), data, in.hist, in.ks, in.ws); err != nil {
			f.Err = err.Error()
		}
	}
	f.HealedAt = in.hist.since()
	in.logf("%7.3fs healed %s%s", f.HealedAt.Seconds(), f.Kind, errSuffix(f.Err))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := in.c.WaitLeader(ctx, in.direct); err != nil {
		f.Err = strings.TrimPrefix(f.Err+"; ", "; ") + "no leader within 30s of healing"
	}
	f.Settled = in.hist.since()
}

// transferTo makes n, just restarted, the leader as soon as it can take over: a transfer is
// retried every 20 ms for up to 15 s (it fails while n is still starting or catching up).
func (in *injector) transferTo(n *Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := in.admin.TransferLeader(tctx, n.Name)
		tcancel()
		if err == nil && resp.GetLeaderName() == n.Name {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("leadership went to %s", resp.GetLeaderName())
		}
		last = err
		if !in.wait(20 * time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("transfer to %s: %s", n.Name, errText(last))
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
