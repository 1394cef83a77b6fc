package collect

import (
	"testing"

	"er/internal/perfabi"
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
		ns, since := c.period(&perfabi.Sample{Tid: s.tid, ID: s.id, Count: s.count}, s.t)
		if ns != s.ns || since != s.since {
			t.Errorf("%s: period %d since %d, want %d since %d", s.why, ns, since, s.ns, s.since)
		}
	}
	// A thread id used again after its thread's exit starts from zero, even with a larger count.
	c.exit(2, 8e6)
	if ns, since := c.period(&perfabi.Sample{Tid: 2, ID: 10, Count: 5e6}, 9e6); ns != 5e6 || since != 0 {
		t.Errorf("after the exit: period %d since %d, want 5e6 since 0", ns, since)
	}
	// Samples of the thread that exited, read after its exit record, still count from its last.
	c.exit(1, 10e6)
	if ns, _ := c.period(&perfabi.Sample{Tid: 1, ID: 10, Count: 15e5}, 9e6); ns != 5e5 {
		t.Errorf("a sample before the exit, read after it: period %d, want 5e5", ns)
	}
}

func TestSampleCountsPurge(t *testing.T) {
	var c sampleCounts
	for tid := uint32(1); tid <= purgeEvery; tid++ {
		c.period(&perfabi.Sample{Tid: tid, ID: 1, Count: 1}, 1)
		c.exit(tid, 2)
	}
	if len(c.threads) != purgeEvery {
		t.Fatalf("%d threads known right after their exits, want %d", len(c.threads), purgeEvery)
	}
	c.period(&perfabi.Sample{Tid: 5000, ID: 1, Count: 1}, purgeAge+10)
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

// TestStealFree: with the runtime's count in each sample, a sample stands for its count less the
// steal time in it: the clock's count beyond the runtime's, less a tick of lag. A thread without steal
// keeps its counts whatever the runtime's lag (it moves at ticks only); a stretch the hypervisor took
// (65 ms in one sample) comes out of the sample it fell in, but for what the lag could hold; other
// threads and events keep their own.
func TestStealFree(t *testing.T) {
	c := sampleCounts{runtimeAt: 1, lag: 4e6}
	steps := []struct {
		tid        uint32
		id         uint64
		clock, run uint64
		want       int64
		why        string
	}{
		{1, 10, 1e6, 0, 1e6, "the first sample, the runtime not yet accounted"},
		{1, 10, 2e6, 0, 1e6, "the runtime lags by 2 ms: no steal"},
		{1, 10, 4e6, 4e6, 2e6, "a tick: the runtime caught up"},
		{1, 10, 5e6, 4e6, 1e6, "lagging again"},
		{1, 10, 71e6, 4e6, 3e6, "65 ms taken away: 63 ms come out, what exceeds the tick's lag"},
		{1, 10, 72e6, 7e6, 1e6, "a tick after it: the samples are whole"},
		{1, 10, 74e6, 7e6, 2e6, "lagging as much as before: whole"},
		{1, 10, 76e6, 11e6, 2e6, "and at the next tick"},
		{1, 11, 10e6, 1e6, 5e6, "the thread's event on another CPU has its own: 9 ms over, 5 ms of it steal"},
		{2, 10, 3e6, 3e6, 3e6, "another thread"},
	}
	for i, s := range steps {
		r := &perfabi.Sample{Tid: s.tid, ID: s.id, Count: s.clock, Leader: true, Siblings: []uint64{s.clock, s.run}}
		ns, _ := c.period(r, int64(i+1)*100e6)
		if got := c.stealFree(s.tid, ns); got != s.want {
			t.Errorf("%s: %d ns, want %d", s.why, got, s.want)
		}
	}
	// A sibling's sample (a counter's) moves no runtime mark.
	r := &perfabi.Sample{Tid: 2, ID: 12, Count: 500, Siblings: []uint64{4e6, 100e6}}
	ns, _ := c.period(r, 2e9)
	if got := c.stealFree(2, ns); got != 500 {
		t.Errorf("a sibling's sample: %d, want its 500 events", got)
	}
	// Without runtime counts in the samples, nothing is taken.
	var plain sampleCounts
	ns, _ = plain.period(&perfabi.Sample{Tid: 1, ID: 10, Count: 70e6}, 1e9)
	if got := plain.stealFree(1, ns); got != 70e6 {
		t.Errorf("without runtime counts: %d, want 70e6", got)
	}
}

func TestTickOf(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want int64
	}{
		{"CONFIG_HZ_250=y\nCONFIG_HZ=250\n", 4e6},
		{"# CONFIG_HZ_1000 is not set\nCONFIG_HZ=1000", 1e6},
		{"CONFIG_HZ=abc\n", 10e6},
		{"", 10e6},
	} {
		if got := tickOf([]byte(tc.cfg)); got != tc.want {
			t.Errorf("tickOf(%q) = %d, want %d", tc.cfg, got, tc.want)
		}
	}
	if tick := kernelTick(); tick < 1e5 || tick > 10e6 {
		t.Errorf("kernelTick() = %d ns", tick)
	}
}
