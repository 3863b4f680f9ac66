// Package sharedclock is a clock for tests in which several goroutines (members:
// jobs that wait for each other's real work) share one time that never passes on its
// own. Time stands still while any member works, however long that takes in real
// time; when every member is asleep, it jumps to the earliest wake-up and wakes whoever
// was due. A member that is done leaves, so that the others do not wait for it.
//
// A clock of its own that advances at once on every wait (fakegittest.Clock) suits a
// member that waits for nothing but time; members that wait for each other would, on
// such clocks, loop: a waiter's every wait would end at once, while another member's
// real work is under way. On a shared clock a waiter sleeps until every member waits
// too, and no test sleeps on real time.
package sharedclock

import (
	"context"
	"sync"
	"time"
)

// Clock is the time the members share; it has retry.Clock's methods, and a Runner
// of each member takes it as its Clock.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	members int        // members that have not left
	asleep  []*sleeper // the members in Sleep
	waits   int        // Sleeps that ended with their time up
}

// sleeper is one member in Sleep.
type sleeper struct {
	until time.Time
	wake  chan struct{} // closed when its time is up
}

// New is a clock for members, starting at start: a test whose code compares the
// clock with times other code takes from the real one (gather's staged ids, say)
// starts it at time.Now().
func New(start time.Time, members int) *Clock { return &Clock{now: start, members: members} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep waits until the clock is d later, which it becomes only once every member
// is asleep or has left, or until ctx is done, and returns ctx.Err() in that case.
// A d of 0 or less returns at once.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.asleep = append(c.asleep, s)
	c.advance()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.asleep {
		if o == s {
			c.asleep = append(c.asleep[:i], c.asleep[i+1:]...) // awake again: the time stands still
			return ctx.Err()
		}
	}
	return nil // woken while ctx ended: its time is up
}

// Leave says that a member is done: it sleeps no more, and the others' time may pass
// without it.
func (c *Clock) Leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members--
	c.advance()
}

// Waits is how many Sleeps ended with their time up.
func (c *Clock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// advance moves the time to the earliest wake-up and wakes every member due then,
// when every member is asleep. c.mu is held.
func (c *Clock) advance() {
	if len(c.asleep) == 0 || len(c.asleep) < c.members {
		return
	}
	next := c.asleep[0].until
	for _, s := range c.asleep[1:] {
		if s.until.Before(next) {
			next = s.until
		}
	}
	if next.After(c.now) {
		c.now = next
	}
	still := c.asleep[:0]
	for _, s := range c.asleep {
		if s.until.After(c.now) {
			still = append(still, s)
			continue
		}
		close(s.wake)
		c.waits++
	}
	c.asleep = still
}
