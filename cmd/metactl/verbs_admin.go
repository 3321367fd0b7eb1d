package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// tenantView is a tenant as tenant ls shows it.
type tenantView struct {
	Name                string `json:"name"`
	InstanceID          uint64 `json:"instance_id"`
	State               string `json:"state"`
	RequestedQuotaBytes uint64 `json:"requested_quota_bytes"`
	EffectiveQuotaBytes uint64 `json:"effective_quota_bytes"`
	ChargedBytes        uint64 `json:"charged_bytes"`
	Objects             uint64 `json:"objects"`
	Groups              uint64 `json:"groups"`
}

func runTenantCreate(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	var quota sizeFlag
	fs.Var(&quota, "quota", "requested quota in `bytes` of memory replicas, units allowed (0 = unlimited)")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	inst, err := c.RegisterTenant(ctx, pos[0], quota.n)
	if err != nil {
		return err
	}
	view := map[string]any{"name": pos[0], "instance_id": inst, "quota_bytes": quota.n}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "registered tenant %s (instance %d, quota %s)\n", pos[0], inst, quotaText(quota.n))
	})
}

func runTenantRm(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	force := fs.Bool("force", false, "also erase the tenant's objects and groups")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.UnregisterTenant(ctx, pos[0], *force)
	if err != nil {
		return err
	}
	view := map[string]any{"name": pos[0], "objects_removed": resp.GetObjectsRemoved(), "groups_removed": resp.GetGroupsRemoved()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "unregistered tenant %s (%s and %s erased)\n", pos[0],
			plural(int(resp.GetObjectsRemoved()), "object"), plural(int(resp.GetGroupsRemoved()), "group"))
	})
}

func runTenantLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	stale := fs.Bool("stale", false, "let any node answer from its own state")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	tenants, err := c.ListTenants(ctx, opts...)
	if err != nil {
		return err
	}
	view := make([]tenantView, 0, len(tenants))
	for _, t := range tenants {
		view = append(view, tenantView{
			Name: t.GetName(), InstanceID: t.GetInstanceId(), State: strings.ToLower(strings.TrimPrefix(t.GetState().String(), "TENANT_STATE_")),
			RequestedQuotaBytes: t.GetRequestedQuotaBytes(), EffectiveQuotaBytes: t.GetEffectiveQuotaBytes(),
			ChargedBytes: t.GetChargedBytes(), Objects: t.GetObjects(), Groups: t.GetGroups(),
		})
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "NAME", "INSTANCE", "STATE", "QUOTA", "EFFECTIVE", "CHARGED", "OBJECTS", "GROUPS")
		for _, t := range view {
			eff := formatSize(t.EffectiveQuotaBytes)
			if t.RequestedQuotaBytes == 0 {
				eff = "-"
			}
			row(tw, t.Name, t.InstanceID, t.State, quotaText(t.RequestedQuotaBytes), eff, formatSize(t.ChargedBytes), t.Objects, t.Groups)
		}
	})
}

func runTenantQuota(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	stale := fs.Bool("stale", false, "let any node answer from its own state (when showing)")
	pos, err := a.parse(v, fs, args, 1, 2)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	if len(pos) == 2 {
		n, err := parseSize(pos[1])
		if err != nil {
			return usagef(v, "%v", err)
		}
		resp, err := c.SetQuota(ctx, pos[0], n)
		if err != nil {
			return err
		}
		view := map[string]any{"tenant": pos[0], "requested_quota_bytes": resp.GetRequestedQuotaBytes(),
			"effective_quota_bytes": resp.GetEffectiveQuotaBytes()}
		return a.printer().emit(view, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "quota of %s set: requested %s, effective %s\n", pos[0],
				quotaText(resp.GetRequestedQuotaBytes()), formatSize(resp.GetEffectiveQuotaBytes()))
		})
	}
	opts := readOpts(*stale)
	resp, err := c.GetQuota(ctx, pos[0], opts...)
	if err != nil {
		return err
	}
	view := map[string]any{"tenant": pos[0], "requested_quota_bytes": resp.GetRequestedQuotaBytes(),
		"effective_quota_bytes": resp.GetEffectiveQuotaBytes(), "charged_bytes": resp.GetChargedBytes(),
		"capacity_bytes": resp.GetCapacityBytes()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "TENANT", "REQUESTED", "EFFECTIVE", "CHARGED", "CAPACITY")
		row(tw, pos[0], quotaText(resp.GetRequestedQuotaBytes()), formatSize(resp.GetEffectiveQuotaBytes()),
			formatSize(resp.GetChargedBytes()), formatSize(resp.GetCapacityBytes()))
	})
}

// segmentView is a segment as metactl shows it.
type segmentView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Tier     string `json:"tier"`
	Base     uint64 `json:"base"`
	Size     uint64 `json:"size"`
	Endpoint string `json:"endpoint"`
	Owner    string `json:"owner_client_id"`
	// Offload: a LOCAL_DISK registration whose owner takes offload tasks.
	Offload   bool   `json:"offload,omitempty"`
	UsedBytes uint64 `json:"used_bytes"`
	// ArenaFree is the part of UsedBytes that allocation arenas hold and no object took yet (free
	// for the leader's reservations only).
	ArenaFree uint64 `json:"arena_free_bytes"`
	Replicas  uint64 `json:"replicas"`
	// Closing: the segment takes no new allocation; UnmountAt (RFC 3339, leader time) is when its
	// graceful unmount ends, empty when none is scheduled.
	Closing   bool   `json:"closing"`
	UnmountAt string `json:"unmount_at,omitempty"`
}

// unmountAtText formats a leader time in unix ns as RFC 3339 (UTC, milliseconds); "" for 0.
func unmountAtText(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// closingText is the CLOSING column of segment ls: "-" for an open segment, the end of its
// graceful unmount, or "yes" when closing without one.
func closingText(s segmentView) string {
	switch {
	case !s.Closing:
		return "-"
	case s.UnmountAt != "":
		return "until " + s.UnmountAt
	}
	return "yes"
}

func segView(d *metadv1.SegmentDesc) segmentView {
	return segmentView{ID: client.FormatID(d.GetId()), Name: d.GetName(), Tier: tierName(d.GetTier()), Base: d.GetBase(),
		Size: d.GetSize(), Endpoint: d.GetEndpoint(), Owner: client.FormatID(d.GetOwnerClientId()), Offload: d.GetOffload()}
}

// simulatedBase returns a random 1 GiB-aligned address in the user half of a 47-bit address space,
// with room for span bytes after it: a plausible base for simulated segments.
func simulatedBase(span uint64) uint64 {
	const lo, hi = uint64(1) << 40, uint64(1) << 46
	if span >= hi-lo-1<<30 {
		return lo
	}
	slots := (hi - lo - span) >> 30
	return lo + rand.Uint64N(slots)<<30
}

// align64 rounds n up to a multiple of 64.
func align64(n uint64) uint64 { return (n + 63) &^ 63 }

func runSegmentMount(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	var size, base sizeFlag
	fs.Var(&size, "size", "segment `size` in bytes, a multiple of 64, units allowed (required)")
	fs.Var(&base, "base", "base `address`, a multiple of 64 (default: a random aligned address)")
	tierS := fs.String("tier", "MEMORY", "MEMORY, NOF, DISK (a shared filesystem root: --endpoint is its directory, --size its quota) or DFS (a DFS pool: --endpoint is its file)")
	clientS := fs.String("client", "", "owning client id (default: derived from user and host)")
	idS := fs.String("id", "", "segment id (default: a new random UUID)")
	name := fs.String("name", "", "segment name (default: metactl-<id prefix>)")
	endpoint := fs.String("endpoint", "metactl", "transport address readers and writers use (opaque to metad)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if !size.set || size.n == 0 || size.n%64 != 0 {
		return usagef(v, "--size is required and must be a positive multiple of 64")
	}
	if base.set && (base.n == 0 || base.n%64 != 0) {
		return usagef(v, "--base must be a positive multiple of 64")
	}
	tier, err := parseTier(*tierS)
	files := tier == metadv1.Tier_TIER_DISK || tier == metadv1.Tier_TIER_DFS // base 0: files, not addresses
	if err != nil || (tier != metadv1.Tier_TIER_MEMORY && tier != metadv1.Tier_TIER_NOF && !files) {
		return usagef(v, "--tier: want MEMORY, NOF, DISK or DFS (a local SSD: metactl disk mount)")
	}
	if files && base.set {
		return usagef(v, "--base: a %s segment has none (its replicas are files)", tierName(tier))
	}
	owner, err := parseClientID(*clientS, defaultClientID())
	if err != nil {
		return usagef(v, "--client: %v", err)
	}
	id := client.NewUUID()
	if *idS != "" {
		if id, err = client.ParseUUID(*idS); err != nil {
			return usagef(v, "--id: %v", err)
		}
	}
	if *name == "" {
		*name = "metactl-" + id.String()[:8]
	}
	if !base.set && !files {
		base.n = simulatedBase(size.n)
	}
	c, err := a.client(owner)
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	desc := &metadv1.SegmentDesc{Id: id.Bytes(), Name: *name, Base: base.n, Size: size.n, Endpoint: *endpoint, Tier: tier}
	if err := c.MountSegment(ctx, desc); err != nil {
		return err
	}
	desc.OwnerClientId = owner.Bytes()
	view := segView(desc)
	if err := a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "mounted segment %s (%s, %s %s at %#x) for client %s\n", view.ID, view.Name, formatSize(view.Size),
			view.Tier, view.Base, view.Owner)
	}); err != nil {
		return err
	}
	if files {
		fmt.Fprintf(a.stderr, "note: a %s segment is the cluster's: no client's expiry unmounts it (metactl segment unmount %s does)\n",
			view.Tier, view.ID)
	} else {
		fmt.Fprintf(a.stderr, "note: the segment stays mounted only while client %s pings (see metactl worker --client)\n", owner)
	}
	return nil
}

func runSegmentUnmount(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	clientS := fs.String("client", "", "owning client id (default: looked up)")
	grace := fs.Duration("grace", 0, "graceful unmount: stop new allocations now, keep the replicas readable, unmount after this long (or once empty); 0 unmounts now")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *grace < 0 {
		return usagef(v, "--grace must not be negative")
	}
	id, err := client.ParseUUID(pos[0])
	if err != nil {
		return usagef(v, "segment id: %v", err)
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	var owner client.UUID
	if *clientS != "" {
		if owner, err = parseClientID(*clientS, client.UUID{}); err != nil {
			return usagef(v, "--client: %v", err)
		}
	} else {
		segs, err := c.ListSegments(ctx, client.SegmentFilter{})
		if err != nil {
			return err
		}
		found := false
		for _, s := range segs {
			if bytes.Equal(s.GetSegment().GetId(), id[:]) {
				if owner, err = client.UUIDFromBytes(s.GetSegment().GetOwnerClientId()); err != nil {
					return fmt.Errorf("segment %s has a malformed owner: %w", id, err)
				}
				found = true
				break
			}
		}
		if !found {
			return &cliError{reason: "SEGMENT_NOT_FOUND", msg: fmt.Sprintf("segment %s is not mounted", id)}
		}
	}
	resp, err := c.UnmountSegmentGraceful(ctx, owner, id, *grace)
	if err != nil {
		return err
	}
	view := map[string]any{"id": id.String(), "owner_client_id": owner.String(),
		"replicas_dropped": resp.GetReplicasDropped(), "objects_erased": resp.GetObjectsErased(), "closing": resp.GetClosing()}
	if resp.GetClosing() {
		at := unmountAtText(resp.GetUnmountAtUnixNano())
		view["unmount_at"] = at
		return a.printer().emit(view, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "segment %s is closing: no new allocations, replicas readable, unmounted at %s (or once empty)\n", id, at)
		})
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "unmounted segment %s: %s dropped, %s erased\n", id,
			plural(int(resp.GetReplicasDropped()), "replica"), plural(int(resp.GetObjectsErased()), "object"))
	})
}

func runSegmentLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	tierS := fs.String("tier", "", "only this tier, MEMORY, NOF or LOCAL_DISK")
	clientS := fs.String("client", "", "only segments of this client")
	stale := fs.Bool("stale", false, "let any node answer from its own state")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	var f client.SegmentFilter
	var err error
	if f.Tier, err = parseTier(*tierS); err != nil {
		return usagef(v, "--tier: %v", err)
	}
	if f.Client, err = parseClientID(*clientS, client.UUID{}); err != nil {
		return usagef(v, "--client: %v", err)
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	opts := readOpts(*stale)
	segs, err := c.ListSegments(ctx, f, opts...)
	if err != nil {
		return err
	}
	view := make([]segmentView, 0, len(segs))
	for _, s := range segs {
		sv := segView(s.GetSegment())
		sv.UsedBytes, sv.ArenaFree, sv.Replicas = s.GetUsedBytes(), s.GetArenaFreeBytes(), s.GetReplicas()
		sv.Closing, sv.UnmountAt = s.GetClosing(), unmountAtText(s.GetUnmountAtUnixNano())
		view = append(view, sv)
	}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "ID", "NAME", "TIER", "SIZE", "USED", "ARENA-FREE", "REPLICAS", "BASE", "ENDPOINT", "OWNER", "CLOSING")
		for _, s := range view {
			row(tw, s.ID, orDash(s.Name), s.Tier, formatSize(s.Size), formatSize(s.UsedBytes), formatSize(s.ArenaFree), s.Replicas,
				fmt.Sprintf("%#x", s.Base), orDash(s.Endpoint), s.Owner, closingText(s))
		}
	})
}

// memberView is a Raft member as member ls shows it.
type memberView struct {
	Name          string `json:"name"`
	PeerAddress   string `json:"peer_address"`
	ClientAddress string `json:"client_address"`
	Voter         bool   `json:"voter"`
	Leader        bool   `json:"leader"`
	FeatureLevel  uint32 `json:"feature_level"` // 0: none recorded
	// Role is leader, voter or learner; Applied and Lag what the member answered the leader
	// (nil: it did not answer).
	Role    string  `json:"role"`
	Applied *uint64 `json:"applied_index"`
	Lag     *uint64 `json:"lag"`
}

// roleOf is a member's role as member ls shows it.
func roleOf(m *metadv1.Member) string {
	switch {
	case m.GetLeader():
		return "leader"
	case m.GetVoter():
		return "voter"
	}
	return "learner"
}

func runMemberLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.ListMembers(ctx)
	if err != nil {
		return err
	}
	members := make([]memberView, 0, len(resp.GetMembers()))
	for _, m := range resp.GetMembers() {
		mv := memberView{Name: m.GetName(), PeerAddress: m.GetPeerAddress(), ClientAddress: m.GetClientAddress(),
			Voter: m.GetVoter(), Leader: m.GetLeader(), FeatureLevel: m.GetFeatureLevel(), Role: roleOf(m)}
		if m.GetProgressKnown() {
			applied, lag := m.GetAppliedIndex(), m.GetLag()
			mv.Applied, mv.Lag = &applied, &lag
		}
		members = append(members, mv)
	}
	view := map[string]any{"index": resp.GetIndex(), "members": members}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "NAME", "ROLE", "PEER", "CLIENT", "APPLIED", "LAG", "LEVEL")
		for _, m := range members {
			lvl, applied, lag := "-", "?", "?"
			if m.FeatureLevel != 0 {
				lvl = fmt.Sprint(m.FeatureLevel)
			}
			if m.Applied != nil {
				applied, lag = fmt.Sprint(*m.Applied), fmt.Sprint(*m.Lag)
			}
			row(tw, m.Name, m.Role, m.PeerAddress, orDash(m.ClientAddress), applied, lag, lvl)
		}
	})
}

func runMemberAdd(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	learner := fs.Bool("learner", false, "add it as a learner: it catches up without voting until `member promote`")
	pos, err := a.parse(v, fs, args, 2, 2)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	add, role := c.AddMember, "voter"
	if *learner {
		add, role = c.AddLearner, "learner"
	}
	idx, err := add(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	view := map[string]any{"name": pos[0], "peer_address": pos[1], "role": role, "index": idx}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "added member %s at %s as a %s (configuration index %d)\n", pos[0], pos[1], role, idx)
	})
}

func runMemberPromote(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	maxLag := fs.Uint64("max-lag", 0, "the most entries it may be behind the leader's commit index (0: the server's default, 1000)")
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.PromoteMember(ctx, pos[0], *maxLag)
	if err != nil {
		return err
	}
	view := map[string]any{"name": pos[0], "index": resp.GetIndex(), "lag": resp.GetLag()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		if resp.GetIndex() == 0 {
			fmt.Fprintf(tw, "%s is a voter already\n", pos[0])
			return
		}
		fmt.Fprintf(tw, "promoted %s to a voter, %d entries behind the leader (configuration index %d)\n", pos[0], resp.GetLag(), resp.GetIndex())
	})
}

func runMemberRm(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	pos, err := a.parse(v, fs, args, 1, 1)
	if err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	idx, err := c.RemoveMember(ctx, pos[0])
	if err != nil {
		return err
	}
	view := map[string]any{"name": pos[0], "index": idx}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "removed member %s (configuration index %d)\n", pos[0], idx)
	})
}

func runLeaderTransfer(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	to := fs.String("to", "", "member to hand over to (default: the most up-to-date follower)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	resp, err := c.TransferLeader(ctx, *to)
	if err != nil {
		return err
	}
	view := map[string]any{"leader_name": resp.GetLeaderName(), "leader_address": resp.GetLeaderAddress()}
	return a.printer().emit(view, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "leader is now %s at %s\n", resp.GetLeaderName(), orDash(resp.GetLeaderAddress()))
	})
}

// statusView is one endpoint's row of status.
type statusView struct {
	Endpoint      string `json:"endpoint"`
	Reachable     bool   `json:"reachable"`
	Error         string `json:"error,omitempty"`
	Name          string `json:"name,omitempty"`
	ClientAddress string `json:"client_address,omitempty"`
	PeerAddress   string `json:"peer_address,omitempty"`
	Role          string `json:"role,omitempty"`
	Term          uint64 `json:"term"`
	AppliedIndex  uint64 `json:"applied_index"`
	CommitIndex   uint64 `json:"commit_index"`
	LastLogIndex  uint64 `json:"last_log_index"`
	Objects       uint64 `json:"objects"`
	Tenants       uint64 `json:"tenants"`
	Segments      uint64 `json:"segments"`
	LeaderName    string `json:"leader_name,omitempty"`
	LeaderAddress string `json:"leader_address,omitempty"`
	Version       string `json:"version,omitempty"`
}

func runStatus(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	c, err := a.client(defaultClientID())
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	all := c.StatusAll(ctx)
	view := make([]statusView, 0, len(all))
	var problems []string
	for _, n := range all {
		sv := statusView{Endpoint: n.Endpoint}
		if n.Err != nil {
			sv.Error = strings.TrimPrefix(errorLine(n.Err), "error: ")
			problems = append(problems, n.Endpoint+": "+sv.Error)
		} else {
			s := n.Status
			sv = statusView{Endpoint: n.Endpoint, Reachable: true, Name: s.GetName(), ClientAddress: s.GetClientAddress(),
				PeerAddress: s.GetPeerAddress(), Role: roleName(s.GetRole()), Term: s.GetTerm(), AppliedIndex: s.GetAppliedIndex(),
				CommitIndex: s.GetCommitIndex(), LastLogIndex: s.GetLastLogIndex(), Objects: s.GetObjects(), Tenants: s.GetTenants(), Segments: s.GetSegments(),
				LeaderName: s.GetLeaderName(), LeaderAddress: s.GetLeaderAddress(), Version: s.GetVersion()}
		}
		view = append(view, sv)
	}
	if err := a.printer().emit(view, func(tw *tabwriter.Writer) {
		row(tw, "ENDPOINT", "NAME", "CLIENT", "PEER", "ROLE", "TERM", "APPLIED", "OBJECTS", "LEADER")
		for _, s := range view {
			if !s.Reachable {
				row(tw, s.Endpoint, "-", "-", "-", "unreachable", "-", "-", "-", "-")
				continue
			}
			row(tw, s.Endpoint, orDash(s.Name), orDash(s.ClientAddress), orDash(s.PeerAddress), s.Role, s.Term,
				s.AppliedIndex, s.Objects, orDash(s.LeaderName))
		}
	}); err != nil {
		return err
	}
	if len(problems) == len(view) {
		return &cliError{reason: "UNAVAILABLE", msg: "no endpoint answered: " + strings.Join(problems, "; ")}
	}
	if a.output == "table" {
		for _, p := range problems {
			fmt.Fprintf(a.stderr, "unreachable %s\n", p)
		}
	}
	return nil
}
