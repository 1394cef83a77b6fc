package unwind

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"er/internal/perfabi"
	"er/internal/perfevent"
)

// The tests here run real programs (testdata/*.c, built with gcc -O2, hence without frame
// pointers) under perf with user register and stack sampling, unwind every sample while the
// program runs, as the collector does, and check the stacks against the programs' call chains.

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	goOnce    sync.Once
	goErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// program builds testdata/name.c with gcc -O2 (once for all the C programs), skipping the test
// when gcc is missing; "gospin" is built from testdata/gospin with go.
func program(t testing.TB, name string) string {
	t.Helper()
	if name == "gospin" {
		return goProgram(t)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: cannot build the test programs in testdata/")
	}
	buildOnce.Do(func() {
		if buildErr = makeBuildDir(); buildErr != nil {
			return
		}
		for _, p := range []string{"chain", "qsort", "threads", "recurse", "signal"} {
			out, err := exec.Command(gcc, "-O2", "-g", "-pthread", "-o", filepath.Join(buildDir, p),
				filepath.Join("testdata", p+".c")).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("gcc %s.c: %v\n%s", p, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, name)
}

var dirOnce sync.Once
var dirErr error

func makeBuildDir() error {
	dirOnce.Do(func() { buildDir, dirErr = os.MkdirTemp("", "unwind-test") })
	return dirErr
}

// goProgram builds testdata/gospin (a Go binary with its symbols and .debug_frame).
func goProgram(t testing.TB) string {
	t.Helper()
	gotool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gotool); err != nil {
		if gotool, err = exec.LookPath("go"); err != nil {
			t.Skip("the go tool is not installed: cannot build testdata/gospin")
		}
	}
	goOnce.Do(func() {
		if goErr = makeBuildDir(); goErr != nil {
			return
		}
		out, err := exec.Command(gotool, "build", "-o", filepath.Join(buildDir, "gospin"), "./testdata/gospin").CombinedOutput()
		if err != nil {
			goErr = fmt.Errorf("go build testdata/gospin: %v\n%s", err, out)
		}
	})
	if goErr != nil {
		t.Fatal(goErr)
	}
	return filepath.Join(buildDir, "gospin")
}

// unwound is one sample and what the unwinders made of it.
type unwound struct {
	main     bool     // taken in the process's main thread
	frames   []uint64 // the DWARF unwinder's stack
	status   Status
	reason   string
	live     bool     // the unwind read live memory past the stack copy
	fp       []uint64 // the kernel's frame-pointer call chain (user part)
	copySize uint64
}

// runResult is what profiling one program gave.
type runResult struct {
	space      *Space
	samples    []unwound
	lost       uint64
	unwindNS   int64 // time spent in Unwind
	frames     int   // frames Unwind returned
	kept       []keptSample
	keepStacks bool
}

// keptSample is a sample kept for the benchmarks.
type keptSample struct {
	regs Regs
	sp   uint64
	data []byte
}

// permission skips the test when perf events cannot be opened here.
func permission(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, perfevent.ErrPermission) {
		t.Skipf("perf events are not permitted here: %v", err)
	}
}

// runCfg says how to profile a program.
type runCfg struct {
	stack  uint32                      // bytes of stack to copy with each sample
	period uint64                      // sample period in ns of CPU time; 0 means 1 ms
	keep   bool                        // keep the samples' registers and stacks (runResult.kept)
	atDone func(r *runResult, pid int) // called when the program says "done", before it may go on
}

// profile runs bin with args under perf and unwinds each sample while the program runs.
// A program that prints "done" (recurse with "wait") then blocks until its standard input
// closes, which profile does once every sample taken before "done" is unwound (and cfg.atDone
// has run).
func profile(t testing.TB, cfg runCfg, bin string, args ...string) *runResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := perfevent.StartStopped(cmd); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	stackSize, keep := cfg.stack, cfg.keep
	res := &runResult{space: &Space{}, keepStacks: keep}
	var cache Cache
	addMapping := func(start, end, off uint64, path string) {
		tab, _ := cache.Table(path) // no table: the unwinder falls back to frame pointers
		res.space.Add(NewModule(start, end, off, path, tab))
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		cmd.Process.Kill()
		perfevent.Detach(pid)
		cmd.Wait()
		t.Fatal(err)
	}
	for _, m := range ParseMaps(maps) {
		if m.Exec {
			addMapping(m.Start, m.End, m.Offset, m.Path)
		}
	}
	o := perfevent.TaskClock(max(cfg.period, 1e6))
	o.SampleRegsUser = perfevent.RegsAMD64All
	o.SampleStackUser = stackSize
	o.RingPages = 1024
	o.WakeupEvents = 1 // unwind each sample soon, while the thread's stack is still there
	g, err := perfevent.OpenTask(pid, o)
	if err != nil {
		cmd.Process.Kill()
		perfevent.Detach(pid)
		cmd.Wait()
		permission(t, err)
		t.Fatal(err)
	}
	defer g.Close()
	if err := perfevent.Detach(pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "done" {
				close(done)
			}
		}
		io.Copy(io.Discard, stdout)
	}()

	u := &Unwinder{Modules: res.space.Find}
	stack := &StackCopy{Live: LiveReader(pid)}
	type pending struct {
		s    perfabi.Sample
		data []byte
	}
	var batch []pending
	collect := func(r perfabi.Record) {
		switch v := r.(type) {
		case *perfabi.Sample:
			if v.RegsABI == 0 || len(v.Regs) == 0 {
				return
			}
			s := *v
			s.Regs = slices.Clone(v.Regs)
			s.Callchain = slices.Clone(v.Callchain)
			batch = append(batch, pending{s: s, data: slices.Clone(v.Stack[:v.StackDynSize])})
		case *perfabi.Mmap:
			if v.Executable && v.Pid == uint32(pid) {
				addMapping(v.Addr, v.Addr+v.Len, v.Pgoff, v.Filename)
			}
		case *perfabi.Lost:
			res.lost += v.Lost
		}
	}
	var frames []uint64
	// unwindBatch unwinds the samples of one Drain after its mappings were added: the rings of
	// different CPUs are not ordered with each other.
	unwindBatch := func() {
		for _, p := range batch {
			regs := RegsFromSample(p.s.Regs, o.SampleRegsUser)
			stack.Reset(regs.SP(), p.data)
			t0 := time.Now()
			var st Status
			var why string
			frames, st, why = u.Unwind(regs, stack, frames)
			res.unwindNS += time.Since(t0).Nanoseconds()
			res.frames += len(frames)
			_, user := perfabi.SplitCallchain(p.s.Callchain)
			res.samples = append(res.samples, unwound{main: p.s.Tid == p.s.Pid, frames: slices.Clone(frames),
				status: st, reason: why, live: stack.UsedLive(), fp: user, copySize: uint64(len(p.data))})
			if keep {
				res.kept = append(res.kept, keptSample{regs: regs, sp: regs.SP(), data: p.data})
			}
		}
		batch = batch[:0]
	}
	deadline := time.Now().Add(60 * time.Second)
	closed := false
	for {
		werr := g.Wait(10 * time.Millisecond)
		if err := g.Drain(collect); err != nil {
			t.Error(err)
		}
		unwindBatch()
		if werr == perfevent.ErrTaskExited {
			break
		}
		if werr != nil {
			t.Fatal(werr)
		}
		if !closed {
			select {
			case <-done:
				// Every sample up to "done" is in the rings now: drain them, then let it go.
				if err := g.Drain(collect); err != nil {
					t.Error(err)
				}
				unwindBatch()
				if cfg.atDone != nil {
					cfg.atDone(res, pid)
				}
				stdin.Close()
				closed = true
			default:
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the program did not exit within 60 s")
		}
	}
	if !closed {
		stdin.Close()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	if len(res.samples) < 50 {
		t.Fatalf("%s: only %d samples", bin, len(res.samples))
	}
	return res
}

// symbolizer names addresses by the function symbols of the load objects (elfSyms).
type symbolizer struct {
	space *Space
	objs  map[string]*elfSyms
}

// name names the function at pc; ret says pc is a return address (named by pc-1).
func (s *symbolizer) name(pc uint64, ret bool) string {
	if ret {
		pc--
	}
	m := s.space.Find(pc)
	if m == nil {
		return "?"
	}
	o, ok := s.objs[m.Path]
	if !ok {
		o = loadElfSyms(m.Path)
		s.objs[m.Path] = o
	}
	if o == nil {
		return "?"
	}
	return o.at(m.Offset + pc - m.Start)
}

// names names a stack's frames.
func (s *symbolizer) names(frames []uint64) []string {
	out := make([]string, len(frames))
	for i, pc := range frames {
		out[i] = s.name(pc, i > 0)
	}
	return out
}

// isRoot reports whether the outermost frame of a stack is a stack root: its CFI marks the
// return address undefined (_start, clone3).
func isRoot(sp *Space, frames []uint64) bool {
	if len(frames) == 0 {
		return false
	}
	pc := frames[len(frames)-1]
	if len(frames) > 1 {
		pc--
	}
	m := sp.Find(pc)
	if m == nil || m.Table == nil {
		return false
	}
	r, err := m.Table.Row(pc - m.Bias)
	return err == nil && r.Regs[r.RA].Kind == RuleUndefined
}

// subsequence reports whether want appears in names in order (not necessarily adjacent).
func subsequence(names, want []string) bool {
	i := 0
	for _, n := range names {
		if i < len(want) && n == want[i] {
			i++
		}
	}
	return i == len(want)
}

// figures is what a run's samples say about stack completeness.
type figures struct {
	samples                     int
	complete, truncated, failed int // DWARF statuses
	dwarfRoot, fpRoot           int // the outermost frame is the program's or thread's root
	dwarfStart, fpStart         int // the stack reaches main or the thread's start routine
	keyed                       int // samples whose leaf is the key function
	dwarfChain, fpChain         int // ... with the whole expected chain, in order
	live                        int // complete stacks that needed live memory
	reasons                     map[string]int
}

// measure checks every sample: key is the function whose samples must show chain (leaf first).
func measure(res *runResult, key string, chain []string, start func(u unwound) string) figures {
	sy := &symbolizer{space: res.space, objs: map[string]*elfSyms{}}
	f := figures{samples: len(res.samples), reasons: map[string]int{}}
	for _, s := range res.samples {
		switch s.status {
		case Complete:
			f.complete++
			if s.live {
				f.live++
			}
		case Truncated:
			f.truncated++
		case Failed:
			f.failed++
		}
		if s.status != Complete {
			r := s.reason
			if i := strings.Index(r, "0x"); i >= 0 {
				r = r[:i]
			}
			f.reasons[s.status.String()+": "+r]++
		}
		dn, fn := sy.names(s.frames), sy.names(s.fp)
		if s.status == Complete && isRoot(res.space, s.frames) {
			f.dwarfRoot++
		}
		if isRoot(res.space, s.fp) {
			f.fpRoot++
		}
		st := start(s)
		if slices.Contains(dn, st) {
			f.dwarfStart++
		}
		if slices.Contains(fn, st) {
			f.fpStart++
		}
		if len(dn) > 0 && dn[0] == key {
			f.keyed++
			if subsequence(dn, chain) {
				f.dwarfChain++
			}
			if subsequence(fn, chain) {
				f.fpChain++
			}
		}
	}
	return f
}

func pct(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

func (f figures) log(t *testing.T, name string, res *runResult) {
	t.Helper()
	t.Logf("%s: %d samples (%d lost); DWARF: %d complete (%d via live memory), %d truncated, %d failed; "+
		"reach the root: DWARF %.1f%%, FP %.1f%%; reach the start function: DWARF %.1f%%, FP %.1f%%; "+
		"full chain in %d key samples: DWARF %.1f%%, FP %.1f%%; unwind %.0f ns/sample, %.0f ns/frame",
		name, f.samples, res.lost, f.complete, f.live, f.truncated, f.failed,
		pct(f.dwarfRoot, f.samples), pct(f.fpRoot, f.samples), pct(f.dwarfStart, f.samples), pct(f.fpStart, f.samples),
		f.keyed, pct(f.dwarfChain, f.keyed), pct(f.fpChain, f.keyed),
		float64(res.unwindNS)/float64(max(f.samples, 1)), float64(res.unwindNS)/float64(max(res.frames, 1)))
	for r, n := range f.reasons {
		t.Logf("  %d × %s", n, r)
	}
}

// check asserts that at least 99% of the samples reach the root and of the key samples show the chain.
func (f figures) check(t *testing.T, minKeyed int) {
	t.Helper()
	if pct(f.dwarfRoot, f.samples) < 99 {
		t.Errorf("only %d of %d samples (%.1f%%) unwound to the root", f.dwarfRoot, f.samples, pct(f.dwarfRoot, f.samples))
	}
	if f.keyed < minKeyed {
		t.Errorf("only %d samples in the key function, want at least %d", f.keyed, minKeyed)
	}
	if pct(f.dwarfChain, f.keyed) < 99 {
		t.Errorf("only %d of %d key samples (%.1f%%) show the whole call chain", f.dwarfChain, f.keyed, pct(f.dwarfChain, f.keyed))
	}
}

// stackSizes are the stack copy sizes every program runs with.
var stackSizes = []uint32{65528, 16384}

func mainStart(unwound) string { return "main" }

func TestProgramChain(t *testing.T) {
	bin := program(t, "chain")
	for _, size := range stackSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			res := profile(t, runCfg{stack: size}, bin, "0.3")
			f := measure(res, "leaf", []string{"leaf", "c", "b", "a", "main", "__libc_start_main", "_start"}, mainStart)
			f.log(t, "chain", res)
			f.check(t, 100)
		})
	}
}

func TestProgramQsort(t *testing.T) {
	bin := program(t, "qsort")
	for _, size := range stackSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			res := profile(t, runCfg{stack: size}, bin, "0.3")
			f := measure(res, "compare", []string{"compare", "qsort_r", "sort_it", "main", "__libc_start_main", "_start"}, mainStart)
			f.log(t, "qsort", res)
			f.check(t, 100)
		})
	}
}

func TestProgramThreads(t *testing.T) {
	bin := program(t, "threads")
	for _, size := range stackSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			res := profile(t, runCfg{stack: size}, bin, "0.15")
			start := func(u unwound) string {
				if u.main {
					return "main"
				}
				return "worker"
			}
			// start_thread and clone3 have no symbols in Debian's libc: the root check
			// (the outermost frame's return address is undefined: clone3) stands for them.
			f := measure(res, "spin", []string{"spin", "work", "worker"}, start)
			f.log(t, "threads", res)
			f.check(t, 200)
			if pct(f.dwarfStart, f.samples) < 99 {
				t.Errorf("only %.1f%% of samples reach the thread's start routine", pct(f.dwarfStart, f.samples))
			}
		})
	}
}

func TestProgramRecursion(t *testing.T) {
	bin := program(t, "recurse")
	for _, size := range stackSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			res := profile(t, runCfg{stack: size}, bin, "0.3", "10000", "wait")
			chain := []string{"bottom"}
			for range 10000 {
				chain = append(chain, "rec")
			}
			chain = append(chain, "main", "_start")
			f := measure(res, "bottom", chain, mainStart)
			f.log(t, "recurse", res)
			f.check(t, 100)
			if f.live < f.keyed*99/100 {
				t.Errorf("only %d of %d samples at the bottom were completed from live memory", f.live, f.keyed)
			}
		})
	}
	t.Run("exit", func(t *testing.T) {
		// As in a real collection, the program returns and exits right after its last
		// samples: those unwound after that cannot use live memory and end as Truncated.
		// Every 10 ms, so that even with -race the unwinds keep up with the samples.
		res := profile(t, runCfg{stack: 65528, period: 10e6}, bin, "0.6", "10000")
		f := measure(res, "bottom", []string{"bottom", "rec", "main"}, mainStart)
		f.log(t, "recurse (exits)", res)
		// How many end truncated depends on how far the reader lags behind at the exit (on a
		// loaded machine, a few dozen samples): the bound is loose.
		if pct(f.complete, f.samples) < 50 {
			t.Errorf("only %d of %d samples complete", f.complete, f.samples)
		}
	})
	t.Run("no-live", func(t *testing.T) {
		// Without live memory the deep stacks end at the copy, as Truncated.
		res := profile(t, runCfg{stack: 65528, keep: true}, bin, "0.1", "10000", "wait")
		u := &Unwinder{Modules: res.space.Find}
		trunc := 0
		for _, k := range res.kept {
			_, st, _ := u.Unwind(k.regs, &StackCopy{SP: k.sp, Data: k.data}, nil)
			if st == Truncated {
				trunc++
			}
		}
		t.Logf("recurse without live memory: %d of %d samples truncated", trunc, len(res.kept))
		if pct(trunc, len(res.kept)) < 90 {
			t.Errorf("only %d of %d deep samples truncated without live memory", trunc, len(res.kept))
		}
	})
}

func TestProgramSignal(t *testing.T) {
	bin := program(t, "signal")
	for _, size := range stackSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			res := profile(t, runCfg{stack: size}, bin, "0.3")
			// The handler shows as called from the interrupted function (seed 004).
			f := measure(res, "handler_spin", []string{"handler_spin", "on_alarm", "busy", "main", "_start"}, mainStart)
			f.log(t, "signal", res)
			f.check(t, 30)
		})
	}
}

func TestProgramGo(t *testing.T) {
	// Go code has only .debug_frame; goroutine stacks end at runtime.goexit.
	bin := program(t, "gospin")
	res := profile(t, runCfg{stack: 65528}, bin, "0.3")
	// The main goroutine runs on whichever thread the scheduler picks.
	start := func(unwound) string { return "main.main" }
	f := measure(res, "main.leaf", []string{"main.leaf", "main.c", "main.b", "main.a", "main.main", "runtime.main", "runtime.goexit.abi0"}, start)
	f.log(t, "gospin", res)
	if f.keyed < 100 || pct(f.dwarfChain, f.keyed) < 99 {
		t.Errorf("only %d of %d samples in main.leaf show the whole chain up to runtime.goexit", f.dwarfChain, f.keyed)
	}
	if pct(f.complete, f.samples) < 97 {
		t.Errorf("only %d of %d samples complete", f.complete, f.samples)
	}
}
