package fsm

import (
	"errors"

	"metad/store"
)

// Result is the typed outcome of one command as the state machine applied it: a store.Result,
// named here so that the proposer hands it on without depending on the store.
type Result = store.Result

// EntryResult is what Apply returns for one log entry: one Result per command of its envelope.
type EntryResult struct {
	Index   uint64
	Results []Result
}

func fromErr(err error) store.Result {
	if err == nil {
		return store.Result{}
	}
	var e *store.Error
	if errors.As(err, &e) {
		return store.Result{Reason: e.Reason, Message: e.Msg} // the reason is a field; keep it out of the text
	}
	return store.Result{Reason: store.ReasonOf(err), Message: err.Error()}
}

func items(errs []error) []store.Result {
	out := make([]store.Result, len(errs))
	for i, err := range errs {
		out[i] = fromErr(err)
	}
	return out
}

func countOK(rs []store.Result) int {
	n := 0
	for _, r := range rs {
		if r.Reason == store.OK {
			n++
		}
	}
	return n
}
