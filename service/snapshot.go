package service

import (
	"context"
	"errors"
	"io"

	"metad/ha"
)

// OpenSnapshot takes a fresh snapshot and opens its file: on the leader after a barrier, or with
// allowStale on this node as it is. Routing (a fresh snapshot is the leader's) is the caller's:
// this fails with the Backend's NOT_LEADER when this node does not lead.
func (s *Service) OpenSnapshot(ctx context.Context, allowStale bool) (*ha.SnapshotStream, error) {
	sb, ok := s.b.(Snapshots)
	if !ok {
		return nil, fail(ErrUnimplemented, "", nil)
	}
	snap, err := sb.OpenSnapshot(ctx, allowStale)
	return snap, fail(err, "", nil)
}

// RestoreSnapshot has the leader verify and install the snapshot file read from r (see
// ha.Node.RestoreSnapshot); a file it refuses is INVALID_PARAMS naming "snapshot". Client liveness
// is leader soft state too: every owner of a restored segment starts a fresh grace, so workers
// have client_ttl to reach the restored cluster.
func (s *Service) RestoreSnapshot(ctx context.Context, r io.Reader) (*ha.RestoreResult, error) {
	sb, ok := s.b.(Snapshots)
	if !ok {
		return nil, fail(ErrUnimplemented, "", nil)
	}
	res, err := sb.RestoreSnapshot(ctx, r)
	if err != nil {
		if errors.Is(err, ha.ErrInvalidSnapshot) {
			return nil, fail(badf("snapshot", "%s", err.Error()), "", nil)
		}
		return nil, fail(err, "", nil)
	}
	s.live.leadershipChanged(true, s.cfg.nowNano())
	s.res.restored()
	return res, nil
}
