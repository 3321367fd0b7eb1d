package servicetest

import (
	"sync/atomic"
	"time"
)

// Clock is safe for concurrent use. It is a settable clock for tests, starting at
// 2030-01-01T00:00:00Z; only Advance moves it.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at 2030-01-01T00:00:00Z.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
