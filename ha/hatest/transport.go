package hatest

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// errStopped answers the RPCs a member had not taken when it stopped.
var errStopped = errors.New("hatest: the member stopped")

// transport is safe for concurrent use. It is a member's end of raft's InmemTransport (which routes
// the RPCs between members), made to behave as ha's TCP transport does where that matters to a
// cluster's timing:
//
//   - no AppendEntries pipeline: one AppendEntries to a follower at a time (ha/peertls.go,
//     peerMaxInFlight);
//   - heartbeats go to Raft's heartbeat handler as they arrive, as raft's NetworkTransport hands
//     them over, rather than queue behind the RPCs the Raft loop has yet to take: a follower busy
//     appending still answers its leader's heartbeats, and the leader keeps its lease;
//   - when the member stops, the RPCs it had not taken are answered with an error at once, as a
//     closed connection fails them, rather than when their sender's timeout passes.
type transport struct {
	*raft.InmemTransport

	rpcs chan raft.RPC // to Raft (Consumer); sent by relay's goroutines, never closed
	stop chan struct{} // closed by Close: the member stopped
	done chan struct{} // closed when relay returns

	mu        sync.Mutex
	heartbeat func(raft.RPC) // Raft's heartbeat handler (SetHeartbeatHandler); nil until set
	closeOnce sync.Once
}

var (
	_ raft.Transport = (*transport)(nil)
	_ raft.WithClose = (*transport)(nil)
)

// newTransport returns the member's end at addr, with the InmemTransport under it (which Connect
// and Disconnect take).
func newTransport(addr raft.ServerAddress) (*transport, *raft.InmemTransport) {
	_, in := raft.NewInmemTransportWithTimeout(addr, rpcTimeout)
	t := &transport{InmemTransport: in, rpcs: make(chan raft.RPC), stop: make(chan struct{}), done: make(chan struct{})}
	go t.relay()
	return t, in
}

// relay takes each RPC that arrives: a heartbeat goes to the heartbeat handler on this goroutine,
// anything else to Raft on a goroutine of its own, so that none waits behind another.
func (t *transport) relay() {
	defer close(t.done)
	in := t.InmemTransport.Consumer()
	for {
		select {
		case <-t.stop:
			return
		case rpc := <-in:
			if hb := t.heartbeatFor(rpc); hb != nil {
				hb(rpc)
				continue
			}
			go func() {
				select {
				case t.rpcs <- rpc:
				case <-t.stop:
					rpc.Respond(nil, errStopped)
				}
			}()
		}
	}
}

// heartbeatFor is the heartbeat handler when rpc is a heartbeat (an AppendEntries with no entries
// and nothing of the log, NetworkTransport's test), else nil.
func (t *transport) heartbeatFor(rpc raft.RPC) func(raft.RPC) {
	req, ok := rpc.Command.(*raft.AppendEntriesRequest)
	if !ok || req.Term == 0 || len(req.Addr) == 0 || req.PrevLogEntry != 0 || req.PrevLogTerm != 0 ||
		len(req.Entries) != 0 || req.LeaderCommitIndex != 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heartbeat
}

// Consumer implements raft.Transport.
func (t *transport) Consumer() <-chan raft.RPC { return t.rpcs }

// SetHeartbeatHandler implements raft.Transport.
func (t *transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heartbeat = cb
}

// AppendEntriesPipeline implements raft.Transport: there is none.
func (t *transport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Close disconnects the member from the others and answers every RPC it has not taken with
// errStopped; the node calls it as it stops. Later calls do nothing.
func (t *transport) Close() error {
	t.closeOnce.Do(func() {
		_ = t.InmemTransport.Close()
		close(t.stop)
		<-t.done
		in := t.InmemTransport.Consumer()
		for {
			select {
			case rpc := <-in:
				rpc.Respond(nil, errStopped)
			default:
				return
			}
		}
	})
	return nil
}
