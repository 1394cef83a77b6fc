package collect

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
)

func TestPausedAt(t *testing.T) {
	p := &proc{initPaused: true}
	p.addToggle(300, true)
	p.addToggle(100, false) // messages may arrive out of order
	p.addToggle(500, false)
	for _, tc := range []struct {
		t    int64
		want bool
	}{{50, true}, {100, false}, {200, false}, {300, true}, {499, true}, {500, false}, {900, false}} {
		if got := p.pausedAt(tc.t); got != tc.want {
			t.Errorf("pausedAt(%d) = %v, want %v", tc.t, got, tc.want)
		}
	}
}

// TestLineage names images as seed 003 does: counted per creator, fork then exec.
func TestLineage(t *testing.T) {
	spec := DefaultSpec()
	spec.Target = []string{"prog"}
	s := testSession(t, spec)
	f1 := s.newImage(11, 10, s.founder, 'f', 100, "prog")
	f2 := s.newImage(12, 10, s.founder, 'f', 200, "prog")
	x1 := s.newImage(12, 10, f2, 'x', 300, "other")
	f1f1 := s.newImage(13, 11, f1, 'f', 400, "prog")
	x1f1 := s.newImage(14, 12, x1, 'f', 500, "other")
	for _, tc := range []struct {
		p    *proc
		want string
	}{{f1, "_f1"}, {f2, "_f2"}, {x1, "_f2_x1"}, {f1f1, "_f1_f1"}, {x1f1, "_f2_x1_f1"}} {
		if tc.p.lineage != tc.want {
			t.Errorf("lineage %q, want %q", tc.p.lineage, tc.want)
		}
		if !tc.p.open() || filepath.Base(tc.p.w.Dir()) != tc.want+".er" {
			t.Errorf("%s: no subexperiment", tc.want)
		}
	}
	if got := s.imageAt(12, 250); got != f2 {
		t.Errorf("imageAt(12, 250) = %v, want _f2", got)
	}
	if got := s.imageAt(12, 350); got != x1 {
		t.Errorf("imageAt(12, 350) = %v, want _f2_x1", got)
	}
	if got := s.imageAt(12, 150); got != nil {
		t.Errorf("imageAt(12, 150) = %v before the process began", got)
	}
	if got := x1.command(s); len(got) == 0 {
		t.Error("an exec'd image has no command")
	}
	if got := f1.command(s); len(got) != 1 || got[0] != "prog" {
		t.Errorf("a forked child's command %q, want its parent's", got)
	}
	s.forEachOpen(func(p *proc) {
		if p != s.founder {
			s.closeImage(p)
		}
	})

	// -F =regexp: unmatched images are counted but get no experiment.
	spec.Follow, spec.FollowRe = "=other", mustRe(t, "other")
	s.spec = spec
	f3 := s.newImage(15, 10, s.founder, 'f', 600, "prog")
	if f3.lineage != "_f3" || f3.open() {
		t.Errorf("-F =other: _f3 %q open %v", f3.lineage, f3.open())
	}
}

func mustRe(t *testing.T, re string) *regexp.Regexp {
	t.Helper()
	r, err := regexp.Compile(re)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testSession is a session whose founder, process 10 running "prog", has an experiment in a
// temporary directory, as if it had started at 0 ns (CLOCK_MONOTONIC 1000).
func testSession(t *testing.T, spec Spec) *Session {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test.1.er")
	s := newSession(spec, nil, dir)
	s.pid, s.startNS = 10, 1000
	w, err := experiment.Create(dir, experiment.Log{Pid: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	s.w = w
	s.founder = &proc{pid: 10, prog: "prog", w: w, mapped: map[mapKey]bool{}}
	s.images = []*proc{s.founder}
	s.cur[10] = s.founder
	return s
}

// An exited descendant whose end point waits for its count stays open until the count comes: the
// kernel may report it only at the founder's exit (TestAssignOrphanRead).
func TestCloseEarly(t *testing.T) {
	s, founder, child := orphanSession(400e6, 800e6)
	child.gone = true
	if s.closeEarly(child) {
		t.Error("a child without a count or an end point closes early")
	}
	s.assignOrphanRead()
	if !s.closeEarly(child) || s.countedOf(child) != 800e6 {
		t.Errorf("with its count %d: close early %v", s.countedOf(child), s.closeEarly(child))
	}
	// An image that exec replaced: the process's count is over both.
	img := &proc{pid: 200, parent: child, execed: true, gone: true}
	if s.countedOf(img) != 800e6 || !s.closeEarly(img) {
		t.Errorf("exec image: counted %d", s.countedOf(img))
	}
	// One with its end point, or the founder, closes as before.
	other := &proc{pid: 300, parent: founder, gone: true, endPoint: true}
	if !s.closeEarly(other) || !s.closeEarly(founder) {
		t.Error("an image with its end point, or the founder, kept open")
	}
}

// A record that a read finds on one ring can be newer than one it has not yet seen on another (the
// reader lost its CPU between the rings): a child's sample before its fork. Only the records taken
// before the read started are handled; the others wait, and the sample finds its process.
func TestReadOrder(t *testing.T) {
	s := testSession(t, Spec{Clock: true, Interval: IntervalOn})
	s.recording = true
	// The first read: the child's sample, taken after the read started.
	s.batch.add(&perfabi.Sample{Pid: 20, Tid: 20, Time: 5000, Period: 1e6})
	s.handleBatch(4000)
	if s.dropped != 0 || s.cur[20] != nil || len(s.batch.recs) != 1 {
		t.Fatalf("after the first read: dropped %d, child %v, %d records wait; want 0, none, 1", s.dropped, s.cur[20], len(s.batch.recs))
	}
	// The second read finds the fork, on the ring read first, from before the sample.
	s.batch.add(&perfabi.Fork{Pid: 20, Ppid: 10, Tid: 20, Ptid: 10, Time: 3500})
	s.handleBatch(9000)
	child := s.cur[20]
	if s.dropped != 0 || child == nil || len(s.batch.recs) != 0 {
		t.Fatalf("after the second read: dropped %d, child %v, %d records wait; want 0, the child, 0", s.dropped, child, len(s.batch.recs))
	}
	if ns := s.sampledNS[20]; ns != 1e6 {
		t.Errorf("the child's samples stand for %d ns, want 1000000", ns)
	}
}

// A count the kernel reports for a thread at its exit is marked reported in the experiment; the
// count under the founder's main thread (orphanRead) and what er derives for it are not.
func TestReportedCounts(t *testing.T) {
	s := testSession(t, Spec{Clock: true, Interval: IntervalOn})
	s.recording = true
	s.cmd = &exec.Cmd{}
	s.handle(&perfabi.Read{Pid: 10, Tid: 11, Value: 300e6, Time: 5000}) // a worker thread's own
	s.handle(&perfabi.Read{Pid: 10, Tid: 10, Value: 100e6, Time: 9000}) // under the founder's main thread
	s.threadCPU[s.founder][10] = 100e6                                  // what the caller derives
	s.writeThreadCount(s.founder)
	if err := s.w.Flush(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.ThreadCount{{Tid: 10, CPUNS: 100e6}, {Tid: 11, CPUNS: 300e6, Reported: true}}
	if !slices.Equal(d.Log.ThreadCPU, want) {
		t.Errorf("thread counts %+v, want %+v", d.Log.ThreadCPU, want)
	}
}
