package service

import (
	"context"
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// ---- drain jobs (store.DrainTable) ----------------------------------------------------------

// drainSegmentsOf checks a list of segment ids of a drain request (0..MaxDrainSegments, none
// twice) and returns them.
func drainSegmentsOf(field string, raw [][]byte) error {
	if len(raw) > store.MaxDrainSegments {
		return badf(field, "%d segments, at most %d", len(raw), store.MaxDrainSegments)
	}
	seen := make(map[[16]byte]bool, len(raw))
	for i, b := range raw {
		id, err := segmentIDOf(fmt.Sprintf("%s[%d]", field, i), b)
		if err != nil {
			return err
		}
		if seen[id] {
			return badf(fmt.Sprintf("%s[%d]", field, i), "segment %s named twice", id)
		}
		seen[id] = true
	}
	return nil
}

// startDrainOf validates a StartDrainRequest and builds its command.
func startDrainOf(req *metadv1.StartDrainRequest) (*metadv1.StartDrain, error) {
	if len(req.GetSegmentIds()) == 0 {
		return nil, badf("segment_ids", "at least one segment")
	}
	if err := drainSegmentsOf("segment_ids", req.GetSegmentIds()); err != nil {
		return nil, err
	}
	if err := drainSegmentsOf("target_segment_ids", req.GetTargetSegmentIds()); err != nil {
		return nil, err
	}
	n := req.GetMaxConcurrency()
	if n == 0 {
		n = store.DefaultDrainConcurrency
	}
	if n > store.MaxDrainConcurrency {
		return nil, badf("max_concurrency", "%d not in 0..%d", n, store.MaxDrainConcurrency)
	}
	cmd := &metadv1.StartDrain{SegmentIds: req.GetSegmentIds(), TargetSegmentIds: req.GetTargetSegmentIds(), MaxConcurrency: n}
	spec := wire.DrainSpecFrom(cmd)
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// StartDrain starts a drain job: from its commit the segments take no new allocation, and the
// leader's loop (driveDrains) moves their objects off.
func (s *Service) StartDrain(ctx context.Context, req *metadv1.StartDrainRequest) (*metadv1.StartDrainResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	m, err := startDrainOf(req)
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &metadv1.Command{Op: &metadv1.Command_StartDrain{StartDrain: m}}, "", nil)
	if err != nil {
		return nil, err
	}
	if res.Drain == nil {
		return nil, internalf("StartDrain answered no job")
	}
	return &metadv1.StartDrainResponse{Drain: s.drainTo(s.state(), res.Drain)}, nil
}

// CancelDrain cancels a running drain job; a finished one is answered as it is.
func (s *Service) CancelDrain(ctx context.Context, req *metadv1.CancelDrainRequest) (*metadv1.CancelDrainResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if req.GetDrainId() == 0 {
		return nil, fail(badf("drain_id", "must be at least 1"), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &metadv1.Command{Op: &metadv1.Command_CancelDrain{CancelDrain: &metadv1.CancelDrain{DrainId: req.GetDrainId()}}}, "", nil)
	if err != nil {
		return nil, err
	}
	if res.Drain == nil {
		return nil, internalf("CancelDrain answered no job")
	}
	return &metadv1.CancelDrainResponse{Drain: s.drainTo(s.state(), res.Drain)}, nil
}

// DrainStatus answers one drain job (DRAIN_NOT_FOUND) or every job kept, by id, each with the
// objects left on its segments: a linearizable read on the leader.
func (s *Service) DrainStatus(ctx context.Context, req *metadv1.DrainStatusRequest) (*metadv1.DrainStatusResponse, error) {
	st, _, err := s.readState(ctx, false)
	if err != nil {
		return nil, err
	}
	var jobs []store.DrainJob
	if id := req.GetDrainId(); id != 0 {
		j, err := st.Drains().Get(id)
		if err != nil {
			return nil, fail(err, "", nil)
		}
		jobs = []store.DrainJob{j}
	} else {
		jobs, _ = st.Drains().List()
	}
	out := &metadv1.DrainStatusResponse{}
	for i := range jobs {
		out.Drains = append(out.Drains, s.drainTo(st, &jobs[i]))
	}
	return out, nil
}

// drainTo converts a job for an answer, with the objects left on its segments counted in st
// (none for a job that is done).
func (s *Service) drainTo(st *store.Store, j *store.DrainJob) *metadv1.DrainJob {
	out := wire.DrainTo(j)
	if j.State != store.DrainDone {
		_, left, _ := st.Drains().Candidates(*j, 0, 0)
		out.ObjectsLeft = uint64(left)
	}
	return out
}

// driveDrains runs on the leader from Run's loop, for every running drain job: it proposes
// ScheduleDrainMoves for the objects store.DrainTable.Candidates chooses, as many as the job has
// room for in max_concurrency, and FinishDrain once nothing is in flight and nothing is left. Jobs
// are replicated state, so a new leader goes on with what the old one started (after its lease
// floor: every object counts as leased for one lease ttl after a leader change). A failed proposal
// is tried again on the next sweep.
func (s *Service) driveDrains(ctx context.Context) {
	st := s.state()
	jobs, _ := st.Drains().List()
	now := s.cfg.nowNano()
	var left, moved, failed, running int64
	for _, j := range jobs {
		if j.State != store.DrainRunning {
			continue
		}
		if ctx.Err() != nil || !s.b.IsLeader() {
			return
		}
		room := j.Spec.MaxConcurrency - len(j.InFlight)
		moves, n, leased := st.Drains().Candidates(j, now, room)
		running, left, moved, failed = running+1, left+int64(n), moved+int64(j.Moved), failed+int64(j.Failed)
		var cmd *metadv1.Command
		switch {
		case len(moves) > 0:
			cmd = &metadv1.Command{Op: &metadv1.Command_ScheduleDrainMoves{ScheduleDrainMoves: &metadv1.ScheduleDrainMoves{
				DrainId: j.ID, Moves: wire.DrainMovesTo(moves)}}}
		case len(j.InFlight) == 0 && n == 0 && leased == 0 && st.Drains().CheckFinish(j.ID) == nil:
			cmd = &metadv1.Command{Op: &metadv1.Command_FinishDrain{FinishDrain: &metadv1.FinishDrain{DrainId: j.ID}}}
		default:
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.BackgroundTimeout)
		res, err := s.b.Propose(pctx, cmd)
		cancel()
		if err != nil {
			s.log.Warn("drain: proposal failed; retrying on the next sweep", "drain", j.ID, "err", err)
			continue
		}
		if cmd.GetFinishDrain() != nil && res.Reason == store.OK {
			s.log.Info("drain done", "drain", j.ID, "moved", j.Moved, "failed", j.Failed)
		}
	}
	s.m.drainObjectsLeft.Set(float64(left))
	s.m.drainMoved.Set(float64(moved))
	s.m.drainFailed.Set(float64(failed))
	s.m.drainsRunning.Set(float64(running))
}
