package collect

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"er/internal/experiment"
)

func TestInterpolateCounts(t *testing.T) {
	const ms = int64(1e6)
	// Thread 1: CPU time in [100, 110] ms (10 ms of steal, say); thread 2: in [190, 200] ms; thread 3 has
	// no lower bound. The process used 305 ms: λ = (305-295)/(315-295) = 0.5.
	threads := map[uint32]int64{1: 110 * ms, 2: 200 * ms, 3: 5 * ms}
	lows := map[uint32]int64{1: 100 * ms, 2: 190 * ms, 4: 1 * ms}
	if got, ok := interpolateCounts(threads, lows, 305*ms); !ok || got != 305*ms ||
		threads[1] != 105*ms || threads[2] != 195*ms || threads[3] != 5*ms {
		t.Errorf("interpolateCounts = %d %v, threads %v; want 305 ms, 105, 195 and 5 ms", got, ok, threads)
	}
	// Outside the bounds: nothing changes.
	for _, cpu := range []int64{294 * ms, 316 * ms} {
		threads := map[uint32]int64{1: 110 * ms, 2: 200 * ms, 3: 5 * ms}
		if _, ok := interpolateCounts(threads, lows, cpu); ok || threads[1] != 110*ms {
			t.Errorf("interpolateCounts(%d) = %v, threads %v: want no change", cpu, ok, threads)
		}
	}
	// A lower bound above the count is no bound.
	threads = map[uint32]int64{1: 100 * ms}
	if got, ok := interpolateCounts(threads, map[uint32]int64{1: 120 * ms}, 100*ms); !ok || got != 100*ms || threads[1] != 100*ms {
		t.Errorf("lower bound above the count: %d %v %v", got, ok, threads)
	}
}

// TestInterpolateStealFree: two threads of 300 ms each, thread 1 with 20 ms of steal in its count (15 ms
// taken out of its samples), thread 2 with 10 ms (5 taken out), both runtime counts 290 ms; the process
// used 600 ms. One λ between the counts as they are gives 302 and 298 ms; between the counts less what
// was taken out of the samples, 300 and 300.
func TestInterpolateStealFree(t *testing.T) {
	const ms = int64(1e6)
	threads := map[uint32]int64{1: 320 * ms, 2: 310 * ms}
	lows := map[uint32]int64{1: 290 * ms, 2: 290 * ms}
	stolen := map[uint32]int64{1: 15 * ms, 2: 5 * ms}
	if got, ok := interpolateStealFree(threads, lows, stolen, 600*ms); !ok || got != 600*ms || threads[1] != 300*ms || threads[2] != 300*ms {
		t.Errorf("interpolateStealFree = %d %v, threads %v; want 600 ms, 300 and 300", got, ok, threads)
	}
	// More taken out than the process used allows (a runtime count short of the thread's time): as
	// interpolateCounts, between the counts as they are.
	threads = map[uint32]int64{1: 320 * ms, 2: 310 * ms}
	if got, ok := interpolateStealFree(threads, lows, map[uint32]int64{1: 30 * ms, 2: 20 * ms}, 600*ms); !ok || got != 600*ms || threads[1] != 302*ms || threads[2] != 298*ms {
		t.Errorf("too much stolen: %d %v, threads %v; want 600 ms, 302 and 298", got, ok, threads)
	}
	// Not below the lower bound.
	threads = map[uint32]int64{1: 320 * ms, 2: 310 * ms}
	if got, ok := interpolateStealFree(threads, lows, map[uint32]int64{1: 40 * ms}, 600*ms); !ok || got != 600*ms || threads[1] != 290*ms || threads[2] != 310*ms {
		t.Errorf("stolen beyond the lower bound: %d %v, threads %v; want 600 ms, 290 and 310", got, ok, threads)
	}
}

func TestScaleCounts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		counted, cpuNS int64
		want           int64
		wantA          int64 // thread 1's count after, of 600 ms
	}{
		{"steal", 1010e6, 1000e6, 1000e6, 594059405},
		{"equal", 1000e6, 1000e6, 1000e6, 600e6},
		{"rusage holds more", 1000e6, 1200e6, 1000e6, 600e6},
		{"beyond steal", 1000e6, 850e6, 1000e6, 600e6},
		{"no rusage", 1000e6, 0, 1000e6, 600e6},
		{"no count", 0, 1000e6, 0, 600e6},
	} {
		threads := map[uint32]int64{1: 600e6, 2: 410e6}
		if got := scaleCounts(threads, tc.counted, tc.cpuNS); got != tc.want || threads[1] != tc.wantA {
			t.Errorf("%s: scaleCounts(%d, %d) = %d, thread 1 %d; want %d, %d", tc.name, tc.counted, tc.cpuNS, got, threads[1], tc.want, tc.wantA)
		}
	}
}

func TestUnsampledWarning(t *testing.T) {
	const ms = int64(1e6)
	for _, tc := range []struct {
		main, sampled, counted int64
		warn                   bool
	}{
		{800 * ms, 5 * ms, 5000 * ms, true},  // 795 ms of 5 s never sampled
		{30 * ms, 5 * ms, 5000 * ms, false},  // under 5%
		{9 * ms, 0, 100 * ms, false},         // under 10 periods
		{60 * ms, 5 * ms, 1000 * ms, true},   // 55 ms: 5.5%, 55 periods
		{5 * ms, 5 * ms, 0, false},           // nothing counted
		{1 * ms, 400 * ms, 1000 * ms, false}, // more sampled than counted
	} {
		got := unsampledWarning(tc.main, tc.sampled, tc.counted, time.Millisecond)
		if (got != "") != tc.warn || (tc.warn && !strings.Contains(got, "lost")) {
			t.Errorf("unsampledWarning(%d, %d, %d) = %q, want a warning: %v", tc.main, tc.sampled, tc.counted, got, tc.warn)
		}
	}
	if got := unsampledWarning(800*ms, 5*ms, 5000*ms, time.Millisecond); !strings.Contains(got, "0.795 s of CPU time (15.9% of the 5.000 s counted)") {
		t.Errorf("warning %q", got)
	}
}

// TestRecordUnsampled: a thread with a count and no sample gets one <Unsampled> sample of its count
// at its image's exit (split into periods of at most 10 s); a sampled thread, and every thread once
// samples were lost, get none.
func TestRecordUnsampled(t *testing.T) {
	s := testSession(t, Spec{Clock: true, Interval: time.Millisecond})
	s.cmd = &exec.Cmd{}
	p := s.founder
	p.exited, p.exitTime = true, 5e9
	s.threadCPU = map[*proc]map[uint32]int64{p: {10: 3e6, 11: 25e9, 12: 0, 13: 35e6}}
	s.sampledNS = map[uint32]int64{10: 2e6, 13: 10e6}
	p.sampled = map[uint32]int64{10: 2e6}
	// Thread 13 was sampled in the image its exec replaced (10 ms) and not in this one: the rest of
	// its count, 25 ms, is this image's <Unsampled> (it was lost: any sample in any image kept it out).
	p.execed, p.parent = true, &proc{sampled: map[uint32]int64{13: 10e6}}
	s.lost = 1
	s.recordUnsampled(p)
	s.lost = 0
	s.recordUnsampled(p)
	if err := s.w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	periods := map[uint32][]int64{}
	for i := range d.ClockTable().Len() {
		cs := experiment.ClockAt(d.ClockTable(), i)
		c := &cs
		if !d.Unsampled(c) || c.Time != 5e9 || c.Mode != experiment.ModeUnknown {
			t.Errorf("sample %+v (stack %v)", *c, d.Stacks[c.Stack])
		}
		periods[c.Tid] = append(periods[c.Tid], c.Period)
	}
	if want := map[uint32][]int64{11: {10e9, 10e9, 5e9}, 13: {25e6}}; !reflect.DeepEqual(periods, want) {
		t.Errorf("periods by thread %v, want %v", periods, want)
	}
}

// TestOwnCount: a thread's count, reported into the image it ends in, holds what it ran in the images
// exec replaced before: what its samples there stand for is not that image's to show.
func TestOwnCount(t *testing.T) {
	s := &Session{}
	forked := &proc{sampled: map[uint32]int64{7: 10e6}}
	first := &proc{parent: forked, execed: true, sampled: map[uint32]int64{7: 5e6, 8: 1e6}}
	last := &proc{parent: first, execed: true}
	other := &proc{parent: last} // forked from last: another process
	s.threadCPU = map[*proc]map[uint32]int64{last: {7: 39e6, 8: 3e6}, other: {7: 4e6}}
	for _, tc := range []struct {
		p    *proc
		tid  uint32
		want int64
	}{
		{last, 7, 24e6},   // 39 ms counted, 15 ms of it in the samples of the two images before
		{last, 8, 2e6},    // 3 ms, 1 ms before
		{other, 7, 4e6},   // a fork: the parent's samples are another process's
		{first, 7, -10e6}, // no count here: what the image before holds is not taken twice
	} {
		if got := s.ownCount(tc.p, tc.tid); got != tc.want {
			t.Errorf("ownCount(tid %d) = %d, want %d", tc.tid, got, tc.want)
		}
	}
}

// TestScaleToRusageMicrostates: with microstates, a process alone whose thread counts add up to more
// than its rusage (steal time in windows no exact reading settled) has them brought down to it, each
// by the same factor; one under its rusage, or a process tree, keeps its counts.
func TestScaleToRusageMicrostates(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	st := cmd.ProcessState
	cpu := (st.UserTime() + st.SystemTime()).Nanoseconds()
	if cpu <= 0 {
		t.Skip("the shell's loop used no measurable CPU")
	}
	for _, c := range []struct {
		name    string
		over    float64 // the counts' sum over the rusage
		subexps int
		want    int64
	}{
		{"over", 1.05, 0, cpu},
		{"under", 0.95, 0, int64(0.95 * float64(cpu))},
		{"tree", 1.05, 1, int64(1.05 * float64(cpu))},
	} {
		s := testSession(t, Spec{Clock: true, Microstates: true, Interval: time.Millisecond})
		s.ms = &microstates{lagN: 1}
		s.subexperiments = c.subexps
		a, b := int64(0.7*c.over*float64(cpu)), int64(0.3*c.over*float64(cpu))
		s.threadCPU = map[*proc]map[uint32]int64{s.founder: {1: a, 2: b}}
		got := s.scaleToRusage(st, a+b)
		th := s.threadCPU[s.founder]
		if d := got - c.want; d < -2 || d > 2 {
			t.Errorf("%s: count %d ns, want %d (rusage %d)", c.name, got, c.want, cpu)
		}
		if d := th[1] + th[2] - got; d < -2 || d > 2 || (c.name == "over" && th[1]*3/7-th[2] > 2) {
			t.Errorf("%s: threads %v, count %d", c.name, th, got)
		}
	}
}
