package kvfeed

import (
	"metad/store"
	"metad/store/alloc"
	"metad/watch"
)

// media is a set of media, a bit per medium.
type media uint8

const (
	cpu media = 1 << iota
	disk
)

// mediumOf is the medium of a replica tier: MEMORY is "cpu", NOF (the old master's NOF_SSD),
// LOCAL_DISK (its LocalDiskDescriptor), DISK (its DiskDescriptor, a shared-FS file) and DFS are
// "disk"; any other tier counts as "cpu", as the old master's default does.
func mediumOf(t alloc.Tier) media {
	if t == alloc.TierNOF || t == alloc.TierLocalDisk || t == alloc.TierDisk || t == alloc.TierDFS {
		return disk
	}
	return cpu
}

// completeMedia is the set of media of st's COMPLETE replicas (none for nil).
func completeMedia(st *store.ObjectState) media {
	var m media
	if st == nil {
		return 0
	}
	for i := range st.Replicas {
		if st.Replicas[i].Status == store.Complete {
			m |= mediumOf(st.Replicas[i].Tier)
		}
	}
	return m
}

// appendEvents appends the feed events that e makes (see the package doc) to out.
func appendEvents(out []Event, e *watch.Event) []Event {
	c := &e.Change
	ev := Event{Tenant: c.Tenant, Key: c.Key, Group: c.Group}
	switch e.Kind {
	case watch.Stored, watch.Changed:
		added := completeMedia(c.After) &^ completeMedia(c.Before)
		if e.Kind == watch.Stored {
			added = completeMedia(c.After)
		}
		ev.Stored = true
		if added&cpu != 0 {
			ev.Medium = MediumCPU
			out = append(out, ev)
		}
		if added&disk != 0 {
			ev.Medium = MediumDisk
			out = append(out, ev)
		}
	case watch.Removed, watch.Evicted:
		ev.Medium = MediumCPU
		if had := completeMedia(c.Before); had&cpu == 0 && had&disk != 0 {
			ev.Medium = MediumDisk
		}
		out = append(out, ev)
	}
	return out
}
