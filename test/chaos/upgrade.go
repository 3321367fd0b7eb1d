package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"metad/client"
)

// The upgrade drill (Config.Release): the cluster starts on an older release's metad, and the
// fault schedule is a rolling upgrade (planUpgrade), each step an Upgrade fault, under the drill's
// workload and with its checks: one node at a time, followers first and the leader last, each
// restarted on this tree's metad and caught up before the next. The first node upgraded is then
// made the leader, so that the rest of the upgrade runs as its hardest case does: a leader of the
// new release writing the log, and sending snapshots, to followers of the old one (the older
// release's metactl must read a snapshot that leader saves). Between steps,
// each release's metactl calls a member of the other release. At the end every member records
// one feature level, at least the one each recorded at the start.

// toUpgrade picks the next node to upgrade: a follower still on the older release, else the
// leader when it still is; -1 when every node runs this tree's metad.
func (in *injector) toUpgrade(leader int, followers []int) int {
	for _, i := range followers {
		if !in.c.Nodes[i].Current() {
			return i
		}
	}
	if !in.c.Nodes[leader].Current() {
		return leader
	}
	return -1
}

// upgrade restarts n on this tree's metad, waits until it has applied everything the leader had
// committed once it was back, and calls across releases.
func (in *injector) upgrade(n *Node) error {
	if err := in.c.Upgrade(n); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := in.c.WaitLeader(ctx, in.direct)
	if err != nil {
		return fmt.Errorf("after upgrading %s: %w", n.Name, err)
	}
	st, err := in.direct[leader.Index].Status(ctx, leader.ClientListen)
	if err != nil {
		return fmt.Errorf("after upgrading %s: the leader's status: %w", n.Name, err)
	}
	commit := st.GetCommitIndex()
	for {
		s, err := in.direct[n.Index].Status(ctx, n.ClientListen)
		if err == nil && s.GetAppliedIndex() >= commit {
			break
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s did not apply the leader's commit index %d within 30s of its upgrade", n.Name, commit)
		case <-t.C:
		}
	}
	in.logf("%7.3fs %s upgraded, caught up to index %d", in.hist.since().Seconds(), n.Name, commit)
	upgraded := 0
	for _, o := range in.c.Nodes {
		if o.Current() {
			upgraded++
		}
	}
	if upgraded == 1 && upgraded < len(in.c.Nodes) {
		if err := in.transferTo(n); err != nil {
			return fmt.Errorf("leadership to %s, the first node upgraded: %w", n.Name, err)
		}
		in.logf("%7.3fs %s, upgraded, leads the older release's nodes", in.hist.since().Seconds(), n.Name)
		if err := in.oldReadsNewSnapshot(n); err != nil {
			return err
		}
	}
	return in.crossReleases(n)
}

// oldReadsNewSnapshot saves a snapshot from n, the upgraded leader, with this tree's metactl and
// has the older release's metactl verify it: a follower of the older release must be able to
// install what the new leader sends it (a lagging follower gets the leader's snapshot).
func (in *injector) oldReadsNewSnapshot(n *Node) error {
	file := filepath.Join(in.c.dir, "upgrade-"+n.Name+".snap")
	if out, err := in.c.Metactl("", n, "snapshot", "save", file); err != nil {
		return fmt.Errorf("snapshot save from the upgraded leader %s: %v\n%s", n.Name, err, out)
	}
	if out, err := in.c.Metactl(in.c.release, n, "snapshot", "inspect", file); err != nil {
		return fmt.Errorf("the older release cannot read a snapshot of the upgraded leader %s (its followers could not install one): %v\n%s", n.Name, err, out)
	}
	return nil
}

// levels returns the feature level each member records, by name.
func levels(ctx context.Context, admin *client.Client) (map[string]uint32, error) {
	ml, err := admin.ListMembers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]uint32{}
	for _, m := range ml.GetMembers() {
		out[m.GetName()] = max(m.GetFeatureLevel(), 1)
	}
	return out, nil
}

// levelsRose says what is wrong with the members' feature levels after an upgrade from before:
// each must record one level, at least its own of before; "" when nothing is.
func levelsRose(before, after map[string]uint32) string {
	var bad []string
	var top uint32
	for _, l := range after {
		top = max(top, l)
	}
	for name, l := range after {
		if l != top || l < before[name] {
			bad = append(bad, fmt.Sprintf("%s at level %d (before %d)", name, l, before[name]))
		}
	}
	if len(after) != len(before) {
		bad = append(bad, fmt.Sprintf("%d members after, %d before", len(after), len(before)))
	}
	return strings.Join(bad, "; ")
}

// crossReleases puts and gets an object of its own through n (this tree's metad) with the older
// release's metactl, and through a node still on the older release (if one is) with this tree's.
func (in *injector) crossReleases(n *Node) error {
	type call struct {
		bin  string // "" for this tree's metactl
		node *Node
	}
	calls := []call{{in.c.release, n}}
	for _, o := range in.c.Nodes {
		if !o.Current() {
			calls = append(calls, call{"", o})
			break
		}
	}
	for _, call := range calls {
		key := fmt.Sprintf("upgrade/%s/via-%s", n.Name, call.node.Name)
		if out, err := in.c.Metactl(call.bin, call.node, "put", key, "--size", "4096"); err != nil {
			return fmt.Errorf("%s's metactl put through %s: %v\n%s", in.c.releaseName(call.bin), call.node.Name, err, out)
		}
		if out, err := in.c.Metactl(call.bin, call.node, "get", key); err != nil || !strings.Contains(out, "COMPLETE") {
			return fmt.Errorf("%s's metactl get through %s: %v\n%s", in.c.releaseName(call.bin), call.node.Name, err, out)
		}
	}
	return nil
}

// Metactl runs the metactl in bin ("" for this tree's) against n's own client port, as root (in a
// secure cluster, by root's client certificate), and returns its output.
func (c *Cluster) Metactl(bin string, n *Node, args ...string) (string, error) {
	if bin == "" {
		bin = c.bin
	}
	flags := []string{"--endpoints", n.ClientListen, "--timeout", "10s"}
	if c.pki != nil {
		cert, key := c.pki.Principal(c.tb, client.RootPrincipal)
		flags = append(flags, "--cacert", c.pki.CAFile(), "--cert", cert, "--key", key)
	} else {
		flags = append(flags, "--certs-dir", filepath.Join(c.dir, "no-certs"))
	}
	out, err := exec.Command(filepath.Join(bin, "metactl"), append(flags, args...)...).CombinedOutput()
	return string(out), err
}

// releaseName says whose metactl bin is.
func (c *Cluster) releaseName(bin string) string {
	if bin == "" {
		return "this tree"
	}
	return "the older release"
}
