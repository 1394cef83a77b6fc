package collect

import "testing"

func TestRuntimeLows(t *testing.T) {
	// The runtime counter's counts are placed as the clock's were: its orphan (0.39 s, reported under
	// the founder's main thread) is the founder's, the rest of its total (0.79 s) the child's.
	for _, toTask := range []bool{false, true} {
		s, founder, child := orphanSession(400e6, 800e6)
		s.assignOrphanRead()
		s.orphanToTask = toTask
		rc := &runtimeCounts{orphan: 390e6, sum: 390e6, total: 390e6 + 790e6}
		low := rc.lows(s)
		f, c := low[founder][100], low[child][200]
		wantF, wantC := int64(390e6), int64(790e6)
		if toTask {
			wantF, wantC = wantC, wantF
		}
		if f != wantF || c != wantC {
			t.Errorf("orphan to task %v: founder %d, child %d; want %d, %d", toTask, f, c, wantF, wantC)
		}
	}
	// No orphan: the founder's main thread has the rest; an exited thread its own report.
	s, founder, child := orphanSession(400e6, 800e6)
	s.orphanRead = 0
	s.threadCPU[child] = map[uint32]int64{200: 800e6}
	rc := &runtimeCounts{sum: 790e6, total: 790e6 + 390e6, threads: map[*proc]map[uint32]int64{child: {200: 790e6}}}
	low := rc.lows(s)
	if low[founder][100] != 390e6 || low[child][200] != 790e6 {
		t.Errorf("no orphan: %v", low)
	}
	// Unread total, or attached: unknown.
	if (&runtimeCounts{total: -1}).lows(s) != nil {
		t.Error("lows with an unread total")
	}
	var none *runtimeCounts
	if none.lows(s) != nil {
		t.Error("lows without a counter")
	}
}
