package service

import (
	"context"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// The end of a reserved write (reserve.go): its PutEnd proposes PutCommit, its PutRevoke drops it.

// endReserved runs a PutEnd (commit true) or PutRevoke of a reserved write, if the key has a
// reservation; handled false when it has none (the log decides, as for any write). A commit
// proposes PutCommit and settles the reservation by its outcome.
func (r *reservations) endReserved(ctx context.Context, tenant string, client alloc.ID, key []byte, tier alloc.Tier, commit bool) (handled bool, err error) {
	keys := [][]byte{key}
	var ended map[int]store.Result
	if commit {
		if ended, _, err = r.commitMany(ctx, tenant, client, keys, tier); err != nil {
			return true, fail(err, tenant, key)
		}
	} else {
		ended = r.revokeMany(tenant, client, keys, tier)
	}
	res, ok := ended[0]
	if !ok {
		return false, nil
	}
	return true, rejected(&res, tenant, key)
}

// commitMany ends the writes of keys (a PutEnd, or a BatchPutEnd's keys in request order) when
// one of them has a reservation: one PutCommit carries every key, the reserved ones with their
// ranges and the others as plain ends (so that the request is one command, whose kept result a
// session's retry gets whichever way its keys then go), and the result of every key comes back
// by index, proposed true. With no reserved key nothing is proposed (proposed false) and the only
// results are ILLEGAL_CLIENT for keys another client reserved; the caller ends the keys through
// the log. err is a Raft failure of the command: the outcome of its keys is unknown.
func (r *reservations) commitMany(ctx context.Context, tenant string, client alloc.ID, keys [][]byte, tier alloc.Tier) (
	ended map[int]store.Result, proposed bool, err error) {
	ended = map[int]store.Result{}
	items := make([]*metadv1.CommitItem, len(keys))
	slab := make([]metadv1.CommitItem, len(keys)) // one allocation for the command's items
	var at []int
	var rks []reserveKey
	var ress []*reservation
	r.lock()
	for i, key := range keys {
		rk := reserveKey{tenant, string(key)}
		items[i] = &slab[i]
		items[i].Key = key
		res := r.byKey[rk]
		switch {
		case res == nil || r.term == 0:
		case res.client != client:
			ended[i] = illegalClient(res, client)
		case !res.holdsTier(tier):
			ended[i] = noWriteOfTier(tier)
		default:
			res.committing = true
			it := items[i]
			it.Group, it.Size, it.Config, it.PutStartUnixNano = res.group, res.size, res.cfg, res.start
			it.Replicas = wire.CommitReplicasTo(res.exts, res.tiers)
			at, rks, ress = append(at, i), append(rks, rk), append(ress, res)
		}
	}
	r.mu.Unlock()
	if len(at) == 0 {
		return ended, false, nil
	}
	cmd := stamped(ctx, &metadv1.Command{Op: &metadv1.Command_PutCommit{PutCommit: &metadv1.PutCommit{
		Tenant: tenant, ClientId: client[:], Tier: wire.TierTo(tier), Items: items}}})
	out, perr := r.s.proposeAuthed(ctx, cmd)
	itemOf := func(i int) store.Result {
		if perr == nil && len(out.Items) == len(items) {
			return out.Items[i]
		}
		return out // a refusal of the whole command (session, auth) answers every item
	}
	for j, i := range at {
		r.settle(rks[j], ress[j], itemOf(i), perr)
	}
	if perr != nil {
		return nil, true, perr
	}
	for i := range keys {
		if _, mismatch := ended[i]; !mismatch {
			ended[i] = itemOf(i)
		}
	}
	return ended, true, nil
}

// revokeMany drops the reservations of keys (a PutRevoke, or a BatchPutRevoke's keys) for the
// tier without a log entry: the result of every key that has one, by index.
func (r *reservations) revokeMany(tenant string, client alloc.ID, keys [][]byte, tier alloc.Tier) map[int]store.Result {
	ended := map[int]store.Result{}
	r.lock()
	defer r.mu.Unlock()
	if r.term == 0 {
		return ended
	}
	for i, key := range keys {
		rk := reserveKey{tenant, string(key)}
		switch res := r.byKey[rk]; {
		case res == nil:
		case res.client != client:
			ended[i] = illegalClient(res, client)
		case !res.holdsTier(tier):
			ended[i] = noWriteOfTier(tier)
		case res.committing:
			ended[i] = store.Result{Reason: store.ReplicaIsNotReady, Message: "the write is being committed"}
		default:
			r.revokeLocked(rk, res, tier)
			ended[i] = store.Result{}
		}
	}
	return ended
}

// settle ends a commit's reservation by the outcome of its item of a PutCommit: created (or
// refused as a repeat), its bytes are the object's; refused, nothing changed and they go back to
// the pool, except after RESERVATION_LOST (they are not in the arenas any more); unknown, it stays
// committing, for a retry of the PutEnd to propose again (apply answers a repeat as OK).
func (r *reservations) settle(rk reserveKey, res *reservation, out store.Result, perr error) {
	r.lock()
	defer r.mu.Unlock()
	if r.byKey[rk] != res {
		return // the term ended, or the table was reset
	}
	if perr != nil {
		return
	}
	switch out.Reason {
	case store.OK:
		r.releaseLocked(rk, res)
		r.m.commits.Inc()
	case store.ReservationLost:
		r.releaseLocked(rk, res) // nothing was taken from the arenas by this command
	case store.SessionExpired, store.SequenceTooOld, store.AuthRevisionStale:
		res.committing = false // the command was refused before apply: the reservation stays
	default:
		r.dropLocked(rk, res)
	}
}

// revokeLocked drops a reservation's replicas of tier (0: all), and the reservation when none is
// left (mu held). Its quota follows the MEMORY replicas dropped.
func (r *reservations) revokeLocked(rk reserveKey, res *reservation, tier alloc.Tier) {
	var keep []alloc.Extent
	var keepTiers []alloc.Tier
	var drop []alloc.Extent
	for i, e := range res.exts {
		if tier == 0 || res.tiers[i] == tier {
			drop = append(drop, e)
			continue
		}
		keep, keepTiers = append(keep, e), append(keepTiers, res.tiers[i])
	}
	memLeft := 0
	for _, t := range keepTiers {
		if t == alloc.TierMemory {
			memLeft++
		}
	}
	if memLeft == 0 { // an object needs a MEMORY replica: the write is abandoned whole
		r.dropLocked(rk, res)
		return
	}
	r.freeLocked(drop)
	before := res.charged
	res.exts, res.tiers, res.charged = keep, keepTiers, uint64(memLeft)*res.size
	r.held[rk.tenant] -= before - res.charged
	r.m.reservedBytes.Sub(float64(before - res.charged))
}
