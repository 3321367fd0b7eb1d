package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
)

// The snapshot RPCs stream files of any size, so they run under the caller's context only: no
// deadline of this package applies. A call that must run on the leader is forwarded like a unary
// one (at most one hop), its stream relayed chunk by chunk.

// snapshotChunkBytes is the data carried by one SnapshotChunk (the proto's bound).
const snapshotChunkBytes = 1 << 20

// snapshotLogEvery is how often a transfer logs its progress.
const snapshotLogEvery = 5 * time.Second

// SnapshotSave streams a fresh snapshot of the cluster's state: taken on the leader after a
// barrier, or with allow_stale on the node that answers.
func (a *adminService) SnapshotSave(req *metadv1.SnapshotSaveRequest, stream grpc.ServerStreamingServer[metadv1.SnapshotChunk]) error {
	s := a.s
	ctx := stream.Context()
	if !req.GetAllowStale() || deferredAuth(ctx) {
		t, err := s.leaderTarget(ctx)
		if err != nil {
			return err
		}
		if !t.local {
			return s.forwardSnapshotSave(ctx, t, req, stream)
		}
		if deferredAuth(ctx) { // this node took office since the call was authenticated
			if ctx, err = s.readmit(ctx, nil); err != nil {
				return err
			}
		}
	}
	start := time.Now()
	snap, err := s.svc.OpenSnapshot(ctx, req.GetAllowStale())
	if errors.Is(err, service.ErrUnimplemented) {
		return unimplementedStatus("SnapshotSave")
	}
	if err != nil {
		return toStatus(err)
	}
	defer snap.Close()
	s.log.Info("snapshot save: streaming", "index", snap.Index, "term", snap.Term, "bytes", snap.Size)
	buf := make([]byte, snapshotChunkBytes)
	var off int64
	last := time.Now()
	for {
		n, rerr := io.ReadFull(snap, buf)
		if n > 0 {
			if err := stream.Send(&metadv1.SnapshotChunk{Data: buf[:n], Offset: uint64(off), TotalBytes: uint64(max(snap.Size, 0))}); err != nil {
				s.log.Warn("snapshot save: stream ended by the caller", "bytes", off, "err", err)
				return toStatus(err)
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return internalStatus("snapshot save: read the snapshot file at byte %d: %v", off, rerr)
		}
		if time.Since(last) >= snapshotLogEvery {
			last = time.Now()
			s.log.Info("snapshot save: streaming", "bytes", off, "of", snap.Size)
		}
	}
	if off != snap.Size {
		return internalStatus("snapshot save: the snapshot file has %d bytes, its metadata says %d", off, snap.Size)
	}
	s.log.Info("snapshot save: done", "index", snap.Index, "bytes", off, "took", time.Since(start))
	return nil
}

// SnapshotRestore receives a snapshot file and has the leader verify and install it; a follower
// relays the stream to the leader.
func (a *adminService) SnapshotRestore(stream grpc.ClientStreamingServer[metadv1.SnapshotChunk, metadv1.SnapshotRestoreResponse]) error {
	s := a.s
	ctx := stream.Context()
	t, err := s.leaderTarget(ctx)
	if err != nil {
		return err
	}
	if !t.local {
		return s.forwardSnapshotRestore(ctx, t, stream)
	}
	if deferredAuth(ctx) { // this node took office since the call was authenticated
		if ctx, err = s.readmit(ctx, nil); err != nil {
			return err
		}
	}
	start := time.Now()
	s.log.Info("snapshot restore: started")
	cr := &chunkReader{recv: stream.Recv}
	res, err := s.svc.RestoreSnapshot(ctx, cr)
	if err != nil {
		s.log.Warn("snapshot restore: failed; the cluster's state is unchanged unless the install had begun", "bytes", cr.off, "err", err)
		var bad *badChunkError
		switch {
		case errors.Is(err, service.ErrUnimplemented):
			return unimplementedStatus("SnapshotRestore")
		case errors.As(err, &bad):
			return toStatus(&store.Error{Reason: store.InvalidParams, Msg: "snapshot: " + bad.msg})
		}
		return toStatus(err)
	}
	h := res.Header
	s.log.Info("snapshot restore: done", "index", res.Index, "term", res.Term, "objects", h.GetObjects(),
		"tenants", h.GetTenants(), "took", time.Since(start))
	return stream.SendAndClose(&metadv1.SnapshotRestoreResponse{Index: res.Index, Term: res.Term, Tenants: h.GetTenants(),
		Segments: h.GetSegments(), Objects: h.GetObjects(), Groups: h.GetGroups()})
}

// badChunkError is a plain value: a stream that breaks the SnapshotChunk rules (offsets in order).
type badChunkError struct{ msg string }

func (e *badChunkError) Error() string { return e.msg }

// chunkReader is not safe for concurrent use. It is an io.Reader over a stream of SnapshotChunks,
// giving io.EOF when the caller closes its side.
type chunkReader struct {
	recv func() (*metadv1.SnapshotChunk, error)
	buf  []byte
	off  uint64
	err  error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		c, err := r.recv()
		if err != nil {
			r.err = err
			continue
		}
		if c.GetOffset() != r.off {
			r.err = &badChunkError{msg: fmt.Sprintf("chunk at offset %d, expected %d", c.GetOffset(), r.off)}
			continue
		}
		r.buf = c.GetData()
		r.off += uint64(len(r.buf))
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// hopErr is the status of a failed forward: the hop's own reason, or forwardErr's.
func hopErr(h *hop, err error, t target) error {
	if why := h.why(t, err); why != nil {
		return why
	}
	return forwardErr(err, t.name, t.addr)
}

// forwardSnapshotSave relays SnapshotSave from the leader.
func (s *Server) forwardSnapshotSave(ctx context.Context, t target, req *metadv1.SnapshotSaveRequest, stream grpc.ServerStreamingServer[metadv1.SnapshotChunk]) error {
	cc, err := s.fwd.conn(t.addr)
	if err != nil {
		return err
	}
	s.m.forwarded.WithLabelValues(methodLabel(metadv1.Admin_SnapshotSave_FullMethodName)).Inc()
	h := s.newHop(ctx, metadv1.Admin_SnapshotSave_FullMethodName)
	defer h.done()
	out := forwardContext(ctx, h.ctx)
	up, err := metadv1.NewAdminClient(cc).SnapshotSave(out, req)
	if err != nil {
		return hopErr(h, err, t)
	}
	for {
		c, err := up.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return hopErr(h, err, t)
		}
		if err := stream.Send(c); err != nil {
			return toStatus(err)
		}
	}
}

// forwardSnapshotRestore relays SnapshotRestore to the leader.
func (s *Server) forwardSnapshotRestore(ctx context.Context, t target, stream grpc.ClientStreamingServer[metadv1.SnapshotChunk, metadv1.SnapshotRestoreResponse]) error {
	cc, err := s.fwd.conn(t.addr)
	if err != nil {
		return err
	}
	s.m.forwarded.WithLabelValues(methodLabel(metadv1.Admin_SnapshotRestore_FullMethodName)).Inc()
	h := s.newHop(ctx, metadv1.Admin_SnapshotRestore_FullMethodName)
	defer h.done()
	out := forwardContext(ctx, h.ctx)
	up, err := metadv1.NewAdminClient(cc).SnapshotRestore(out)
	if err != nil {
		return hopErr(h, err, t)
	}
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return toStatus(err)
		}
		if err := up.Send(c); err != nil {
			break // the leader ended the stream; CloseAndRecv says why
		}
	}
	resp, err := up.CloseAndRecv()
	if err != nil {
		return hopErr(h, err, t)
	}
	return stream.SendAndClose(resp)
}
