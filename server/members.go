package server

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	metadv1 "metad/proto/metadv1"
)

// Member records: Raft's configuration knows each member's peer address, but not the client
// (gRPC) address that `member ls`, NOT_LEADER answers and leadership transfers name. Those live in
// the replicated member records (SetMember). A new leader records its own addresses (package ha);
// every other member asks the leader, through the RecordMember RPC, as soon as it finds its record
// missing or stale, and again until it is there. So every member's client address is listed soon
// after it starts, whichever node leads and whether or not it ever leads.

// maxRecordWait bounds the sweeps skipped between two asks while they fail (about 6 s at the
// default SweepInterval): a member not yet in the configuration, or one with no leader in sight,
// asks slowly.
const maxRecordWait = 32

// recordPacer is owned by recordLoop's goroutine: how many sweeps to skip before the next ask, and how
// many to skip after the next failure.
type recordPacer struct {
	skip, wait int
}

// levelCheckEvery is how often recordLoop looks for members of a newer release (warnNewer).
const levelCheckEvery = 5 * time.Second

// recordLoop runs recordSelf every SweepInterval, and warnNewer every levelCheckEvery, until ctx
// ends.
func (s *Server) recordLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	var p recordPacer
	warned := map[string]uint32{}
	var checked time.Time
	for {
		s.recordSelf(ctx, &p)
		if time.Since(checked) >= levelCheckEvery {
			checked = time.Now()
			s.warnNewer(warned)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recordSelf asks for this node's member record to be written when it is missing or stale: on the
// leader by proposing it, elsewhere by calling RecordMember on the leader. After a failure it waits
// twice as many sweeps as after the last one, up to maxRecordWait.
func (s *Server) recordSelf(ctx context.Context, p *recordPacer) {
	if s.node.SelfRecorded() {
		p.skip, p.wait = 0, 0
		return
	}
	if p.skip > 0 {
		p.skip--
		return
	}
	if !s.node.LeaderReachable() {
		return // no leader to ask, or one that stopped answering: ask when one is heard from
	}
	if err := s.askRecord(ctx); err != nil {
		p.wait = min(max(1, 2*p.wait), maxRecordWait)
		p.skip = p.wait
		s.log.Debug("could not record this member's addresses yet", "err", err)
		return
	}
	p.wait = 0
	s.log.Debug("asked the leader to record this member's addresses")
}

// askRecord records this node's addresses, here when it leads or through the leader it knows.
func (s *Server) askRecord(ctx context.Context) error {
	self := s.node.Self()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BackgroundTimeout)
	defer cancel()
	if s.node.IsLeader() {
		return s.node.RecordMember(ctx, self)
	}
	name, addr := s.node.Leader()
	if addr == "" {
		return notLeaderStatus(name, addr)
	}
	cc, err := s.fwd.conn(addr)
	if err != nil {
		return err
	}
	req := &metadv1.RecordMemberRequest{Name: self.Name, PeerAddress: self.PeerAddr, ClientAddress: self.ClientAddr, FeatureLevel: self.Level}
	// Marked as forwarded: a node that is no longer the leader answers NOT_LEADER, never relays it.
	out := metadata.AppendToOutgoingContext(ctx, forwardedKey, "1")
	return cc.Invoke(out, metadv1.Admin_RecordMember_FullMethodName, req, &metadv1.RecordMemberResponse{})
}

// warnNewer logs, once per member and level (warned), a member that records a feature level above
// this binary's: the cluster is in a rolling upgrade, and this member runs the older release. The
// commands of the newer level wait until every member runs it (docs/operations.md, "Rolling
// upgrades and feature levels").
func (s *Server) warnNewer(warned map[string]uint32) {
	ms, err := s.node.Members()
	if err != nil {
		return
	}
	own := s.node.Self().Level
	for _, m := range ms {
		if m.Level > own && warned[m.Name] != m.Level {
			warned[m.Name] = m.Level
			s.log.Warn("a member runs a newer release than this one: finish the rolling upgrade by restarting this member on the new binary",
				"member", m.Name, "its_feature_level", m.Level, "this_feature_level", own)
		}
	}
}
