package sharedclock

import (
	"context"
	"testing"
	"time"
)

// TestClock: three members. While one works (it neither sleeps nor has left), the
// time stands still and the sleepers sleep on; once it leaves, the time jumps to each
// wake-up in turn, earliest first, and a sleeper whose context ends returns at once
// without moving the time.
func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	c := New(start, 3)
	woke := make(chan time.Duration, 2)
	for _, d := range []time.Duration{3 * time.Second, time.Second} {
		go func() {
			defer c.Leave()
			if err := c.Sleep(context.Background(), d); err != nil {
				t.Error(err)
			}
			woke <- c.Now().Sub(start)
		}()
	}
	// The third member is this test: it has neither slept nor left.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("a sleep whose context ended: %v", err)
	}
	waitAsleep(t, c, 2)
	if now := c.Now(); !now.Equal(start) || len(woke) != 0 {
		t.Fatalf("while a member works the time moved to %v, or a sleeper woke", now.Sub(start))
	}
	c.Leave()
	if first, second := <-woke, <-woke; first != time.Second || second != 3*time.Second {
		t.Errorf("the sleepers woke at %v and %v; want 1s and 3s", first, second)
	}
	if c.Waits() != 2 {
		t.Errorf("%d waits ended, want 2", c.Waits())
	}
	if err := c.Sleep(context.Background(), time.Minute); err != nil || c.Now().Sub(start) != 3*time.Second+time.Minute {
		t.Errorf("alone (every other member left), a sleep of 1m: %v, now %v", err, c.Now().Sub(start))
	}
}

// waitAsleep waits until n members are in Sleep.
func waitAsleep(t *testing.T, c *Clock, n int) {
	t.Helper()
	for {
		c.mu.Lock()
		k := len(c.asleep)
		c.mu.Unlock()
		if k == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
