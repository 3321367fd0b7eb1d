package fsm

import (
	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// applyAuth applies an auth command (package auth decides it) and swaps the new auth state in.
func applyAuth(st *State, _ env, c *metadv1.Command) store.Result {
	n, r := auth.Apply(st.Auth(), c)
	if n != st.Auth() {
		st.auth.Store(n)
	}
	return r
}
