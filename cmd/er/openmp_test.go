package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ompPart is what testdata/ompprog.c measured of one construct on one thread, in seconds: its
// work (the thread's CPU clock), its waits to get in (the monotonic clock), and its wait at the
// region's implicit barrier.
type ompPart struct{ work, wait, implicit float64 }

// ompMeasured parses what testdata/ompprog.c measured of itself, by function and thread.
func ompMeasured(t *testing.T, out string) map[string]map[int]ompPart {
	t.Helper()
	parts := map[string]map[int]ompPart{}
	for _, line := range strings.Split(out, "\n") {
		// omp FUNCTION thread T work_ns W wait_ns X implicit_ns Y
		f := strings.Fields(line)
		if len(f) != 10 || f[0] != "omp" || f[2] != "thread" || f[4] != "work_ns" || f[6] != "wait_ns" || f[8] != "implicit_ns" {
			continue
		}
		th, err1 := strconv.Atoi(f[3])
		work, err2 := strconv.ParseFloat(f[5], 64)
		wait, err3 := strconv.ParseFloat(f[7], 64)
		impl, err4 := strconv.ParseFloat(f[9], 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("ompprog printed %q", line)
		}
		if parts[f[1]] == nil {
			parts[f[1]] = map[int]ompPart{}
		}
		parts[f[1]][th] = ompPart{work / 1e9, wait / 1e9, impl / 1e9}
	}
	if len(parts) != 9 {
		t.Fatalf("ompprog measured %d constructs, want main and 8:\n%s", len(parts), out)
	}
	return parts
}

// TestOpenMPMachineMode: an OpenMP program (gcc's libgomp, 2 threads, the passive wait policy, so
// that waiting costs little CPU) in machine mode, the raw stacks: each construct's outlined function
// (f._omp_fn.0) holds the work of both threads, the function that holds the region only the
// master's, and spin every thread's work, each within 5% of what the program measured with its
// threads' CPU clocks. The machine mode shows the raw stacks as before OpenMP had its views.
func TestOpenMPMachineMode(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "ompprog", "-fopenmp", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline")
	// -p hi: a sample of 1 ms is 1% of the shortest part measured (0.1 s).
	exp, r := collectExp(t, []string{"OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=passive"}, "-p", "hi", prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	parts := ompMeasured(t, r.stdout)
	p := er(t, "", nil, "print", "-viewmode", "machine", "-metrics", "i.totalcpu", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	incl := functionRows(p.stdout, 1)
	check := func(name string, want float64) {
		t.Helper()
		got, err := strconv.ParseFloat(incl[name], 64)
		if err != nil {
			t.Errorf("%s: no inclusive time in er print's functions (%q)", name, incl[name])
			return
		}
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: inclusive %.3f s, the program measured %.3f s (not within 5%%)", name, got, want)
		}
	}
	var all float64
	for fn, threads := range parts {
		for _, p := range threads {
			all += p.work
		}
		if fn == "main" {
			continue
		}
		outlined := fn + "._omp_fn.0"
		if fn == "region_tasks" {
			outlined = fn + "._omp_fn.1" // the task's: the threads run the tasks at the region's end, in the runtime
		}
		check(outlined, threads[0].work+threads[1].work)
		check(fn, threads[0].work)
	}
	check("spin", all)
	// The passive waits sleep in the runtime's futexes: User Lock, in the user mode too, whose
	// stacks have lost the runtime's frames (the lock is told before the view mode's passes).
	ulock := func(mode string) float64 {
		u := er(t, "", nil, "print", "-viewmode", mode, "-metrics", "i.ulock", "-functions", exp)
		v, _ := strconv.ParseFloat(functionRows(u.stdout, 1)["<Total>"], 64)
		return v
	}
	if um, uu := ulock("machine"), ulock("user"); um < 0.1 || math.Abs(uu-um) > 0.002 {
		t.Errorf("User Lock: %.3f s in the machine mode, %.3f s in the user mode; want the same, the waits' (0.1 s or more)", um, uu)
	}
	// The machine mode is what er showed before it knew OpenMP: byte for byte the views of the same
	// experiment without its OpenMP records (omptrace).
	bare := filepath.Join(t.TempDir(), "bare.er")
	if c := er(t, "", nil, "cp", exp, bare); c.code != 0 {
		t.Fatalf("er cp: exit %d\n%s", c.code, c.stderr)
	}
	if err := os.Remove(filepath.Join(bare, "omptrace")); err != nil {
		t.Fatal(err)
	}
	for _, view := range []string{"-functions", "-calltree", "-callers-callees"} {
		with := er(t, "", nil, "print", "-viewmode", "machine", view, exp)
		without := er(t, "", nil, "print", "-viewmode", "machine", view, bare)
		if with.code != 0 || with.stdout != without.stdout {
			t.Errorf("machine mode %s: the OpenMP experiment's output is not that of the same experiment without its OpenMP records\n%s\nwithout them:\n%s", view, with.stdout, without.stdout)
		}
	}
	if t.Failed() {
		t.Logf("ompprog:\n%ser print:\n%s", r.stdout, p.stdout)
	}
}

// ompStates are the <OMP-*> states that testdata/ompprog.c measures, with the construct that waits
// in each ("": the implicit barriers at the ends of all regions).
var ompStates = []struct {
	fn, construct string
	state         int // OMPSTATE
}{
	{"<OMP-explicit_barrier>", "region_barrier", 6},
	{"<OMP-critical_section_wait>", "region_critical", 8},
	{"<OMP-lock_wait>", "region_lock", 7},
	{"<OMP-ordered_section_wait>", "region_ordered", 9},
	{"<OMP-implicit_barrier>", "", 5},
}

// TestOpenMPUserMode: the same program, built with gcc (libgomp) and clang (libomp), under both
// wait policies (passive: the waits sleep; active: they spin), in the user mode: each construct's
// function holds the work of both threads (its inclusive CPU time in the work state, OMPSTATE 1),
// each state the waits the program measured there (its events' Total Thread Time: on a CPU or not),
// within 5%, all of it at the state's <OMP-*> pseudo-function but for the collector library's time
// recording them (<Collector>, which the program's clock counts in its waits) and the runtime's
// lazy bindings (@plt); OpenMP Work and Wait
// add up to each thread's Total Thread Time exactly. In the expert mode the outlined functions are
// functions of their own, named for their regions, and hold the same work.
func TestOpenMPUserMode(t *testing.T) {
	needCollect(t)
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) { testOpenMPModes(t, cc) })
	}
}

// ompBuild builds testdata/ompprog.c with compiler cc: gcc (its runtime libgomp) or clang (LLVM's
// libomp).
func ompBuild(t *testing.T, cc string) string {
	t.Helper()
	flags := []string{"-fopenmp", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline"}
	if cc == "gcc" {
		return cbuild(t, "ompprog", flags...)
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s is not installed (.ci/run installs clang and libomp-dev)", cc)
	}
	bin := filepath.Join(workDir, "ompprog-"+cc)
	args := append(flags, "-Wall", "-o", bin, filepath.Join("..", "..", "testdata", "ompprog.c"))
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return bin
}

func testOpenMPModes(t *testing.T, cc string) {
	prog := ompBuild(t, cc)
	// The outlined functions' names: GCC's region_for._omp_fn.0, clang's .omp_outlined..N.
	outlined := func(fn string) string {
		if cc == "gcc" {
			return fn + "._omp_fn."
		}
		return ".omp_outlined."
	}
	for _, policy := range []string{"passive", "active"} {
		t.Run(policy, func(t *testing.T) {
			exp, r := collectExp(t, []string{"OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=" + policy}, "-p", "hi", prog)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			parts := ompMeasured(t, r.stdout)
			print := func(args ...string) map[string]string {
				t.Helper()
				p := er(t, "", nil, append(append([]string{"print"}, args...), exp)...)
				if p.code != 0 {
					t.Fatalf("er print %s: exit %d\n%s", strings.Join(args, " "), p.code, p.stderr)
				}
				return functionRows(p.stdout, 3)
			}
			within := func(what string, row string, col int, want float64) {
				t.Helper()
				f := strings.Fields(row)
				if len(f) <= col {
					t.Errorf("%s: not in er print's functions", what)
					return
				}
				got, err := strconv.ParseFloat(f[col], 64)
				if err != nil || math.Abs(got-want) > 0.05*want {
					t.Errorf("%s: %s s, the program measured %.3f s (not within 5%%)", what, f[col], want)
				} else {
					t.Logf("%s: er %s s, the program %.3f s", what, f[col], want)
				}
			}
			// The work, as the program measures it: the CPU time in the work state (OpenMP Work is
			// the thread time there, which holds the waits for a CPU of a busy machine too).
			work := print("-filters", "OMPSTATE==1", "-metrics", "i.totalcpu:i.ompwork:e.total", "-functions")
			var all, implicit float64
			for fn, threads := range parts {
				var sum float64
				for _, p := range threads {
					sum += p.work
					implicit += p.implicit
				}
				all += sum
				if fn != "main" {
					within(fn+": CPU in the work state", work[fn], 0, sum)
				}
			}
			within("spin: CPU in the work state", work["spin"], 0, all)
			for _, s := range ompStates {
				want := implicit
				if s.construct != "" {
					want = parts[s.construct][0].wait + parts[s.construct][1].wait
				}
				// The state's time (OMPSTATE), and where it is: at its pseudo-function, or at
				// <Collector> where er's library recorded it meanwhile (its cost, which the
				// program's clock counts in the wait).
				in := er(t, "", nil, "print", "-filters", "OMPSTATE=="+strconv.Itoa(s.state), "-metrics", "e.total", "-functions", exp)
				rows := functionRows(in.stdout, 1)
				within(s.fn+": its state's time", rows["<Total>"], 0, want)
				total, _ := strconv.ParseFloat(rows["<Total>"], 64)
				at, _ := strconv.ParseFloat(rows[s.fn], 64)
				coll, _ := strconv.ParseFloat(rows["<Collector>"], 64)
				plt, _ := strconv.ParseFloat(rows["@plt"], 64) // the runtime's lazy bindings meanwhile
				if math.Abs(at+coll+plt-total) > 0.0025 {
					t.Errorf("%s: %.3f s, <Collector> %.3f s, @plt %.3f s of its state's %.3f s: the rest is elsewhere\n%s", s.fn, at, coll, plt, total, in.stdout)
				}
			}
			// The OpenMP Task view: the tasks' construct holds their work.
			tv := er(t, "", nil, "print", "-filters", "OMPSTATE==1", "-metrics", "e.totalcpu", "-indxobj", "OMP_task", exp)
			found := false
			for name, row := range functionRows(tv.stdout, 1) {
				if strings.HasPrefix(name, "region_tasks -- OMP task from line ") {
					found = true
					within(name+": CPU in the work state", row, 0, parts["region_tasks"][0].work+parts["region_tasks"][1].work)
				}
			}
			if !found {
				t.Errorf("indxobj OMP_task: no row of region_tasks' task\n%s%s", tv.stdout, tv.stderr)
			}
			expert := print("-viewmode", "expert", "-filters", "OMPSTATE==1", "-metrics", "i.totalcpu:i.ompwork:e.total", "-functions")
			for fn, threads := range parts {
				if fn == "main" {
					continue
				}
				var name string
				best := -1.0
				for n, row := range expert { // (the largest: a region's outlined function may show with a sample or two elsewhere)
					v, _ := strconv.ParseFloat(strings.Fields(row)[0], 64)
					if strings.HasPrefix(n, fn+" -- OMP parallel region from line ") && strings.Contains(n, " ["+outlined(fn)) && strings.HasSuffix(n, "]") && v > best {
						name, best = n, v
					}
				}
				if name == "" {
					t.Errorf("expert mode: no function named for %s's region (%s -- OMP parallel region from line N [%s...])", fn, fn, outlined(fn))
					continue
				}
				within(name+": CPU in the work state", expert[name], 0, threads[0].work+threads[1].work)
			}
			// Work + Wait = Total Thread Time, exactly, for each thread (json: the values in ns).
			threads := er(t, "", nil, "print", "-thread_list", exp)
			n := 0
			for _, line := range strings.Split(threads.stdout, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[1] == "yes" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("thread_list: %d threads, want 2\n%s", n, threads.stdout)
			}
			for th := 1; th <= n; th++ {
				p := er(t, "", nil, "print", "-printmode", "json", "-filters", "THRID=="+strconv.Itoa(th), "-metrics", "e.total:e.ompwork:e.ompwait",
					"-limit", "1", "-functions", exp)
				m := jsonTotals.FindStringSubmatch(p.stdout)
				if m == nil {
					t.Fatalf("thread %d: no <Total> in %s", th, p.stdout)
				}
				total, _ := strconv.ParseInt(m[1], 10, 64)
				work, _ := strconv.ParseInt(m[2], 10, 64)
				wait, _ := strconv.ParseInt(m[3], 10, 64)
				if total == 0 || work+wait != total {
					t.Errorf("thread %d: OpenMP Work %d + Wait %d ns = %d, Total Thread Time %d ns", th, work, wait, work+wait, total)
				} else {
					t.Logf("thread %d: OpenMP Work %d + Wait %d ns = Total Thread Time %d ns", th, work, wait, total)
				}
			}
			if t.Failed() {
				p := er(t, "", nil, "print", "-metrics", "i.ompwork:e.total:i.ompwait", "-calltree", exp)
				t.Logf("ompprog:\n%ser print:\n%s", r.stdout, p.stdout)
			}
		})
	}
}

// jsonTotals finds the <Total> row of er print's json functions of three metrics.
var jsonTotals = regexp.MustCompile(`"name":"<Total>","cells":\[\{"v":(\d+)[^}]*\},\{"v":(\d+)[^}]*\},\{"v":(\d+)`)

// TestOpenMPNested: nested regions (2 threads, each the master of an inner region of 2): in the
// user mode every thread's work is at main → outer → inner → spin, the inner region's workers
// stitched under the outer region's worker that started it, within 5% of what the four threads
// measured; in the expert mode each outlined function is there, named for its region.
func TestOpenMPNested(t *testing.T) {
	needCollect(t)
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) {
			var prog string
			flags := []string{"-fopenmp", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline"}
			if cc == "gcc" {
				prog = cbuild(t, "ompnested", flags...)
			} else {
				if _, err := exec.LookPath(cc); err != nil {
					t.Skipf("%s is not installed (.ci/run installs clang and libomp-dev)", cc)
				}
				prog = filepath.Join(workDir, "ompnested-"+cc)
				args := append(flags, "-Wall", "-o", prog, filepath.Join("..", "..", "testdata", "ompnested.c"))
				if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", cc, err, out)
				}
			}
			exp, r := collectExp(t, []string{"OMP_NUM_THREADS=2,2", "OMP_MAX_ACTIVE_LEVELS=2", "OMP_WAIT_POLICY=passive"}, "-p", "hi", prog)
			if r.code != 0 {
				t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
			}
			var levels int
			var ns float64
			if _, err := fmt.Sscanf(r.stdout, "nested levels %d work_ns %g", &levels, &ns); err != nil || levels != 2 {
				t.Fatalf("nesting is off, or the program printed something else (%v): %s", err, r.stdout)
			}
			want := ns / 1e9
			p := er(t, "", nil, "print", "-filters", `OMPSTATE==1 && (FNAME("outer"), FNAME("inner"), FNAME("spin")) ORDERED IN USTACK`,
				"-metrics", "i.totalcpu", "-functions", exp)
			rows := functionRows(p.stdout, 1)
			got, err := strconv.ParseFloat(rows["spin"], 64)
			if err != nil || math.Abs(got-want) > 0.05*want {
				t.Errorf("user mode: spin at main → outer → inner: %q s, the four threads measured %.3f s\n%s%s", rows["spin"], want, p.stdout, p.stderr)
			}
			x := er(t, "", nil, "print", "-viewmode", "expert", "-metrics", "i.totalcpu", "-functions", exp)
			for _, fn := range []string{"outer", "inner"} {
				ok := false
				for name, v := range functionRows(x.stdout, 1) {
					f, _ := strconv.ParseFloat(v, 64)
					if strings.HasPrefix(name, fn+" -- OMP parallel region from line ") && math.Abs(f-want) <= 0.05*want {
						ok = true
					}
				}
				if !ok {
					t.Errorf("expert mode: no %s -- OMP parallel region of %.3f s\n%s", fn, want, x.stdout)
				}
			}
			// The parallel region view lists both regions, the outer one though its threads spent
			// their time in the inner ones (it may have no sample of its own).
			pr := er(t, "", nil, "print", "-indxobj", "OMP_preg", exp)
			for _, fn := range []string{"outer", "inner"} {
				if !strings.Contains(pr.stdout, fn+" -- OMP parallel region from line ") {
					t.Errorf("indxobj OMP_preg: no row of %s's region\n%s%s", fn, pr.stdout, pr.stderr)
				}
			}
			// The Analyzer: an OpenMP tab, with both regions (its static report holds the answers).
			dir := filepath.Join(t.TempDir(), "report")
			if a := er(t, "", nil, "analyzer", "--html", dir, exp); a.code != 0 {
				t.Fatalf("er analyzer --html: exit %d\n%s", a.code, a.stderr)
			}
			data, err := os.ReadFile(filepath.Join(dir, "data.js"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"openmp"`, `/api/table?cmd=omp_preg`, `outer -- OMP parallel region from line `, `inner -- OMP parallel region from line `} {
				if !strings.Contains(string(data), want) {
					t.Errorf("the Analyzer's report lacks %s", want)
				}
			}
		})
	}
}
