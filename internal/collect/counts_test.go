package collect

import (
	"testing"

	"er/internal/perfevent"
)

func TestSampleCountsPeriod(t *testing.T) {
	var c sampleCounts
	steps := []struct {
		tid       uint32
		id, count uint64
		t         int64
		ns, since int64
		why       string
	}{
		{1, 10, 3e6, 5e6, 3e6, 0, "the first sample: the count so far"},
		{1, 10, 4e6, 6e6, 1e6, 5e6, "the next on the same event: the count since"},
		{1, 11, 2e6, 7e6, 2e6, 0, "another CPU's event counts on its own"},
		{2, 10, 1e6, 7e6, 1e6, 0, "another thread"},
		{1, 10, 9e6, 7e6, 1e6, 6e6, "more than the time since: at most that"},
		{1, 10, 1e6, 8e6, 1e6, 0, "a count that went back: a new thread with the id"},
	}
	for _, s := range steps {
		ns, since := c.period(&perfevent.Sample{Tid: s.tid, ID: s.id, Count: s.count}, s.t)
		if ns != s.ns || since != s.since {
			t.Errorf("%s: period %d since %d, want %d since %d", s.why, ns, since, s.ns, s.since)
		}
	}
	// A thread id used again after its thread's exit starts from zero, even with a larger count.
	c.exit(2, 8e6)
	if ns, since := c.period(&perfevent.Sample{Tid: 2, ID: 10, Count: 5e6}, 9e6); ns != 5e6 || since != 0 {
		t.Errorf("after the exit: period %d since %d, want 5e6 since 0", ns, since)
	}
	// Samples of the thread that exited, read after its exit record, still count from its last.
	c.exit(1, 10e6)
	if ns, _ := c.period(&perfevent.Sample{Tid: 1, ID: 10, Count: 15e5}, 9e6); ns != 5e5 {
		t.Errorf("a sample before the exit, read after it: period %d, want 5e5", ns)
	}
}

func TestSampleCountsPurge(t *testing.T) {
	var c sampleCounts
	for tid := uint32(1); tid <= purgeEvery; tid++ {
		c.period(&perfevent.Sample{Tid: tid, ID: 1, Count: 1}, 1)
		c.exit(tid, 2)
	}
	if len(c.threads) != purgeEvery {
		t.Fatalf("%d threads known right after their exits, want %d", len(c.threads), purgeEvery)
	}
	c.period(&perfevent.Sample{Tid: 5000, ID: 1, Count: 1}, purgeAge+10)
	for i := 0; i < purgeEvery; i++ {
		c.exit(6000, purgeAge+10)
	}
	if len(c.threads) != 1 {
		t.Errorf("%d threads known %d ns after the others' exits, want 1", len(c.threads), purgeAge)
	}
}

func TestUnpausedWithin(t *testing.T) {
	run := &proc{}
	paused := &proc{initPaused: true}
	toggled := &proc{}
	toggled.addToggle(10, true)
	toggled.addToggle(20, false)
	global := &proc{}
	global.addToggle(15, true)
	global.addToggle(25, false)
	for _, tt := range []struct {
		a, b int64
		ps   []*proc
		want int64
	}{
		{0, 30, []*proc{run}, 30},
		{0, 30, []*proc{paused}, 0},
		{0, 30, []*proc{toggled}, 20},
		{12, 18, []*proc{toggled}, 0},
		{5, 25, []*proc{toggled, run}, 10},
		{0, 30, []*proc{toggled, global}, 15},
		{30, 30, []*proc{run}, 0},
		{30, 20, []*proc{run}, 0},
	} {
		if got := unpausedWithin(tt.a, tt.b, tt.ps...); got != tt.want {
			t.Errorf("unpausedWithin(%d, %d): %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
