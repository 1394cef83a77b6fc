package collect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/perfevent"
)

// TestExperimentDir: er collect's -d, -o and -g name the directory as experiment.NewDir does.
func TestExperimentDir(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "runs.3.er"), 0o755)
	if got, err := (Spec{Dir: dir, Group: "runs.erg"}).experimentDir(); err != nil || got != filepath.Join(dir, "runs.4.er") {
		t.Errorf("-g runs.erg: %q, %v", got, err)
	}
}

func TestLookTarget(t *testing.T) {
	if p, err := LookTarget("sh"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("sh: %q, %v", p, err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	for name, want := range map[string]string{
		"no-such-program-here": "no such program",
		plain:                  "not executable",
		dir:                    "",
	} {
		_, err := LookTarget(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookTarget(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}

// TestRunExitStatus runs a real target through the whole session: the exit status comes back and the
// experiment is complete.
func TestRunExitStatus(t *testing.T) {
	if _, err := perfevent.Paranoid(); err != nil {
		t.Skipf("perf events not available: %v", err)
	}
	if !perfevent.Probe().ClockProfiling {
		t.Skipf("clock profiling not available: %s", perfevent.Probe().ClockError)
	}
	spec := DefaultSpec()
	spec.Dir = t.TempDir()
	spec.Comments = []string{"first", "second"}
	spec.Target = []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3"}
	var stderr strings.Builder
	dir, err := Run(spec, &stderr)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Run = %v, want exit status 3 (stderr %q)", err, stderr.String())
	}
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Log.Exited || d.Log.ExitStatus != 3 || d.Notes != "first\nsecond\n" || d.ClockTable().Len() == 0 || len(d.Overview) < 2 {
		t.Errorf("experiment: exited %v status %d notes %q, %d samples, %d overview records",
			d.Log.Exited, d.Log.ExitStatus, d.Notes, d.ClockTable().Len(), len(d.Overview))
	}
	if _, ok := d.Archives["/bin/sh"]; !ok {
		if _, ok := d.Archives["/usr/bin/dash"]; !ok {
			t.Errorf("no archive for the shell; archives: %d", len(d.Archives))
		}
	}
}

func TestNextName(t *testing.T) {
	for in, want := range map[string]string{
		"/d/test.1.er":     "/d/test.2.er",
		"/d/test.99.er":    "/d/test.100.er",
		"/d/my.grp.7.er":   "/d/my.grp.8.er",
		"rel/other.er":     "rel/other.1.er",
		"/d/test.x.er":     "/d/test.x.1.er",
		"/d/test.0009.er":  "/d/test.10.er",
		"/d/a.b.c.12.er":   "/d/a.b.c.13.er",
		"/d/plain.name.er": "/d/plain.name.1.er",
	} {
		if got := nextName(in); got != want {
			t.Errorf("nextName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCreateClaims has 12 sessions claim a name in one directory at once, all having chosen the same
// one: each gets a directory of its own, test.1.er to test.12.er; an -o name taken is an error.
func TestCreateClaims(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSession(Spec{Dir: dir, Target: []string{"prog"}}, io.Discard, filepath.Join(dir, "test.1.er"))
			errs[i] = s.create("/bin/true")
			if errs[i] == nil {
				got[i] = filepath.Base(s.dir)
				errs[i] = s.w.Close()
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("session %d: %v", i, errs[i])
		}
		seen[got[i]] = true
	}
	for i := 1; i <= n; i++ {
		if name := fmt.Sprintf("test.%d.er", i); !seen[name] {
			t.Errorf("no session took %s: %v", name, got)
		}
	}
	s := newSession(Spec{Dir: dir, Output: "test.3.er", Target: []string{"prog"}}, io.Discard, filepath.Join(dir, "test.3.er"))
	if err := s.create("/bin/true"); err == nil || !strings.Contains(err.Error(), "test.3.er already exists") {
		t.Errorf("-o test.3.er taken: %v", err)
	}
}

// orphanSession is a session whose founder (pid 100) and one child (pid 200) exited, the child with
// no count of its own: counts of 0.8 s left on the original events and 0.4 s reported under the
// founder's main thread, with samples of the founder and the child adding up to founderNS and
// childNS.
func orphanSession(founderNS, childNS int64) (*Session, *proc, *proc) {
	founder, child := &proc{pid: 100}, &proc{pid: 200, lineage: "_f1"}
	s := &Session{spec: Spec{Interval: IntervalHi}, cmd: &exec.Cmd{}, pid: 100, founder: founder,
		exitedTasks: map[*proc][]uint32{child: {200}},
		threadCPU:   map[*proc]map[uint32]int64{founder: {100: 800e6}},
		orphanRead:  400e6,
		sampledNS:   map[uint32]int64{100: founderNS, 200: childNS},
	}
	return s, founder, child
}

func TestAssignOrphanRead(t *testing.T) {
	// The kernel swapped the founder's and the child's perf contexts: the child exited with the
	// original events (0.8 s of its own on them) and the founder reported its own 0.4 s at its exit.
	// Read the other way round, the founder had 0.8 s for its 0.4 s sampled (3 runs in 12 of
	// TestDescendants under load).
	for _, tc := range []struct {
		name                   string
		founderNS, childNS     int64
		wantFounder, wantChild int64
		toTask                 bool
	}{
		{"kernel's pairing", 400e6, 800e6, 400e6, 800e6, false},
		{"samples say the other way", 800e6, 400e6, 800e6, 400e6, true},
		// The rest is more than the child's samples: the CPU of threads the kernel neither sampled nor
		// reported, which the founder's main thread keeps for the unsampled warning (issue 11, 9).
		{"the rest is not the child's", 400e6, 10e6, 800e6, 400e6, true},
		{"unsampled", 0, 0, 800e6, 400e6, true},
		{"samples agree with neither", 100e6, 100e6, 800e6, 400e6, true},
		// Few samples are noisy: the swapped contexts carry the timer's progress between the tasks.
		// The kernel's pairing is the nearer one (TestWorkBeforeExec under load: the founder had 6
		// samples for its 0.1 s, and showed its child's 0.2 s).
		{"noisy founder samples", 240e6, 800e6, 400e6, 800e6, false},
		{"noisy child samples", 400e6, 550e6, 400e6, 800e6, false},
	} {
		s, founder, child := orphanSession(tc.founderNS, tc.childNS)
		s.assignOrphanRead()
		if f, c := s.threadCPU[founder][100], s.threadCPU[child][200]; f != tc.wantFounder || c != tc.wantChild || s.orphanToTask != tc.toTask {
			t.Errorf("%s: founder %d, child %d, to task %v; want %d, %d, %v", tc.name, f, c, s.orphanToTask, tc.wantFounder, tc.wantChild, tc.toTask)
		}
	}
	// Two tasks without counts: neither gets one, and the founder keeps the rest.
	s, founder, child := orphanSession(400e6, 800e6)
	other := &proc{pid: 300, lineage: "_f2"}
	s.exitedTasks[other] = []uint32{300}
	s.assignOrphanRead()
	if _, ok := s.threadCPU[child][200]; ok || s.threadCPU[founder][100] != 800e6 {
		t.Errorf("two tasks without counts: %v", s.threadCPU)
	}
}

// TestSignalPointOfExitedProcess: a signal's sample point whose message er reads after the process
// exited and was reaped (er late beside two CPU hogs) is still written, in time order, with the
// usage last read of the process.
func TestSignalPointOfExitedProcess(t *testing.T) {
	s := testSession(t, Spec{Clock: true, Interval: IntervalOn})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	s.founder.pid = uint32(gone.Process.Pid)
	s.founder.last = procUsage{userNS: 7e6}
	s.founder.lastPoint = 3000
	s.founder.sampleNo = 1
	s.imagePoint(s.founder, 2000, "signal SIGUSR1")
	if err := s.w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Overview) != 1 || d.Overview[0].Label != "signal SIGUSR1" || d.Overview[0].Time != 3000 || d.Overview[0].UserNS != 7e6 {
		t.Errorf("overview %+v, want the signal's point at 3000 ns with 7 ms of user time", d.Overview)
	}
}

// TestPreopenFiles: where the archiving makes compact archives (the default), the objects the
// unwinder went through are opened ahead, for the archiving to take; with -a copy or off, none is.
func TestPreopenFiles(t *testing.T) {
	exe, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	for _, mode := range []string{"usedsrc", "copy", "off"} {
		s := &Session{spec: Spec{Archive: mode}, stacks: newStacker()}
		_, _ = s.stacks.cache.Table(exe)
		s.preopenFiles()
		if (s.preopen != nil) != (mode == "usedsrc") {
			t.Errorf("-a %s: opened ahead %v", mode, s.preopen != nil)
			continue
		}
		if s.preopen == nil {
			continue
		}
		a, err := archive.Describe(exe)
		if err != nil {
			t.Fatal(err)
		}
		if of, err := s.preopen.OpenFile(exe, a); err != nil || of.Path != exe {
			t.Errorf("-a %s: the file opened ahead: %+v, %v", mode, of, err)
		}
	}
}
