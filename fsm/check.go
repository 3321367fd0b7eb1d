package fsm

import (
	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// The checks of the batch commands (declared in commands.go).

func checkBatchPutStart(s *store.Store, _ *auth.State, m *metadv1.BatchPutStart) (store.Result, bool) {
	return checkBatch(s, m.GetTenant(), "items", len(m.GetItems()), func(i int) []byte { return m.GetItems()[i].GetKey() }, func(i int) error {
		it := m.GetItems()[i]
		return s.CheckPutStart(wire.PutStartFrom(m.GetTenant(), m.GetClientId(), it.GetKey(), it.GetGroup(), it.GetSize(),
			m.GetConfig(), m.GetPlacement(), m.GetPutDiscardTimeoutMs()))
	})
}

func checkBatchPutEnd(s *store.Store, _ *auth.State, m *metadv1.BatchPutEnd) (store.Result, bool) {
	return checkBatch(s, m.GetTenant(), "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }, func(i int) error {
		return s.CheckPutEnd(endReq(m.GetTenant(), m.GetClientId(), m.GetKeys()[i], m.GetTier()))
	})
}

func checkBatchPutRevoke(s *store.Store, _ *auth.State, m *metadv1.BatchPutRevoke) (store.Result, bool) {
	return checkBatch(s, m.GetTenant(), "keys", len(m.GetKeys()), func(i int) []byte { return m.GetKeys()[i] }, func(i int) error {
		return s.CheckPutRevoke(endReq(m.GetTenant(), m.GetClientId(), m.GetKeys()[i], m.GetTier()))
	})
}

// checkBatch checks a batch of n items of one tenant, as apply decides it under the rules the
// leader stamps now (metadv1.RulesVersion): refused whole when its keys repeat (field names them,
// key gives item i's) or the tenant takes no writes, per item when item refuses every one of them.
func checkBatch(s *store.Store, tenant, field string, n int, key func(i int) []byte, item func(i int) error) (store.Result, bool) {
	if r, ok := distinct(env{rules: metadv1.RulesVersion}, field, n, key); !ok {
		return r, true
	}
	if err := s.CheckWritable(tenant); err != nil {
		return fromErr(err), true
	}
	out := store.Result{Items: make([]store.Result, n)}
	for i := range n {
		err := item(i)
		if err == nil {
			return store.Result{}, false
		}
		out.Items[i] = fromErr(err)
	}
	return out, n > 0
}

func segmentIDs(raw [][]byte) []alloc.ID {
	ids := make([]alloc.ID, len(raw))
	for i, b := range raw {
		ids[i] = wire.ID16(b)
	}
	return ids
}
