package fsm

import (
	"errors"

	"metad/store"
)

// Result is the typed outcome of one command. Reason OK means applied; any other reason is a
// deterministic rejection and Message says why. Only the payload fields of the command's kind are
// set.
type Result struct {
	Reason  store.Reason
	Message string

	Replicas []store.Replica     // PutStart, UpsertStart: the replicas to write
	Reused   bool                // UpsertStart: the object's extents were kept (same size)
	Count    int                 // RemoveAll, RemoveGroup, UnregisterTenant, Evict, RevokeExpired: objects affected
	Bytes    uint64              // Evict: bytes freed
	Instance uint64              // RegisterTenant: the new instance id
	Created  bool                // MountSegment: false when the mount was a repeat
	Unmount  store.UnmountResult // UnmountSegment
	Items    []Result            // batch forms and token lists: one per item, in request order
	// Evict: the outcome of each unit, in command order (a token of the form without unit_sizes
	// is a unit). A reason, not a Result, because every node builds it for every unit of every
	// Evict it applies, hundreds of thousands in a large eviction.
	Units []store.Reason
}

// Err returns the rejection as an error (nil when OK).
func (r *Result) Err() error {
	if r.Reason == store.OK {
		return nil
	}
	return &store.Error{Reason: r.Reason, Msg: r.Message}
}

// EntryResult is what Apply returns for one log entry: one Result per command of its envelope.
type EntryResult struct {
	Index   uint64
	Results []Result
}

func fromErr(err error) Result {
	if err == nil {
		return Result{}
	}
	var e *store.Error
	if errors.As(err, &e) {
		return Result{Reason: e.Reason, Message: e.Msg} // the reason is a field; keep it out of the text
	}
	return Result{Reason: store.ReasonOf(err), Message: err.Error()}
}

func items(errs []error) []Result {
	out := make([]Result, len(errs))
	for i, err := range errs {
		out[i] = fromErr(err)
	}
	return out
}

func countOK(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Reason == store.OK {
			n++
		}
	}
	return n
}
