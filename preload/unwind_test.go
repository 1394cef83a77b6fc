package preload

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The pseudo-frames of unwind.h and trace.h.
const (
	pcTruncated = 0xfffffffffffff001
	pcFailed    = 0xfffffffffffff002
)

// unwindSrc is the directory of unwind.c and unwind.h: the collector's C sources.
func unwindSrc() string { return Dir() }

// libFlags are the collector library's flags (CFlags, with -shared), warnings as errors.
func libFlags() []string { return append(slices.Clone(CFlags), "-Werror") }

func needGCC(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		tb.Skip("gcc not found: the collector library's tests build C programs with it")
	}
}

func gcc(tb testing.TB, args ...string) {
	tb.Helper()
	out, err := exec.Command("gcc", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// buildHarness builds testdata/harness.c -O2 -fomit-frame-pointer and testdata/dso.c (the library
// it dlopens) into dir. shared: unwind.c goes into a shared library built as the collector is,
// else it is linked into the executable. It returns the paths of the harness and the library.
func buildHarness(tb testing.TB, dir string, shared bool) (exe, dso string) {
	tb.Helper()
	exe, dso = filepath.Join(dir, "harness"), filepath.Join(dir, "dso.so")
	src := unwindSrc()
	gcc(tb, "-O2", "-fomit-frame-pointer", "-fPIC", "-shared", "-o", dso, "testdata/dso.c")
	args := []string{"-O2", "-fomit-frame-pointer", "-Wall", "-Wextra", "-I" + src, "-o", exe, "testdata/harness.c"}
	if shared {
		// Built as the collector library is, but with the API exported for the harness.
		export := `-DER_UNWIND_API=__attribute__((visibility("default")))`
		lib := filepath.Join(dir, "liberunwind.so")
		gcc(tb, append(libFlags(), export, "-o", lib, filepath.Join(src, "unwind.c"))...)
		args = append(args, export, "-L"+dir, "-lerunwind", "-Wl,-rpath,"+dir)
	} else {
		args = append(args, filepath.Join(src, "unwind.c"))
	}
	gcc(tb, append(args, "-lpthread", "-ldl")...)
	return exe, dso
}

// A case of the harness's output: its stacks by tag (er, bt, ctx, ...).
type hcase struct {
	name   string
	stacks map[string][]uint64
}

type hout struct {
	cases  []hcase
	ranges map[string][2]uint64
	stats  map[string]string // key=value of the stat lines
}

func parseHex(tb testing.TB, fields []string) []uint64 {
	tb.Helper()
	var v []uint64
	for _, f := range fields {
		x, err := strconv.ParseUint(f, 16, 64)
		if err != nil {
			tb.Fatalf("bad address %q", f)
		}
		v = append(v, x)
	}
	return v
}

func parseOutput(tb testing.TB, out []byte) hout {
	tb.Helper()
	h := hout{ranges: map[string][2]uint64{}, stats: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "case":
			h.cases = append(h.cases, hcase{name: f[1], stacks: map[string][]uint64{}})
		case "range":
			r := parseHex(tb, f[2:4])
			h.ranges[f[1]] = [2]uint64{r[0], r[1]}
		case "stat":
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					h.stats[k] = v
				}
			}
		case "error":
			tb.Fatalf("harness: %s", sc.Text())
		default:
			if len(h.cases) == 0 {
				tb.Fatalf("stack before any case: %q", sc.Text())
			}
			h.cases[len(h.cases)-1].stacks[f[0]] = parseHex(tb, f[1:])
		}
	}
	return h
}

func (h hout) find(tb testing.TB, name string) hcase {
	tb.Helper()
	for _, c := range h.cases {
		if c.name == name {
			return c
		}
	}
	tb.Fatalf("no case %q in the harness output", name)
	return hcase{}
}

func (h hout) stat(tb testing.TB, key string) int {
	tb.Helper()
	v, err := strconv.Atoi(h.stats[key])
	if err != nil {
		tb.Fatalf("stat %s=%q: %v", key, h.stats[key], err)
	}
	return v
}

func hexs(v []uint64) string {
	var b strings.Builder
	for _, x := range v {
		fmt.Fprintf(&b, " %x", x)
	}
	return b.String()
}

func isPseudo(pc uint64) bool { return pc == pcTruncated || pc == pcFailed }

// near: two PCs in the same function (the harness calls er_backtrace and backtrace() from the
// same function, at two call sites).
func near(a, b uint64) bool { return max(a, b)-min(a, b) < 0x200 }

// sameAsBacktrace checks er_backtrace's list against backtrace()'s taken in the same function:
// entry 0 differs (two call sites), all later ones, down to the outermost frame, are equal.
func sameAsBacktrace(t *testing.T, c hcase, minDepth int) {
	t.Helper()
	er, bt := c.stacks["er"], c.stacks["bt"]
	switch {
	case len(er) < minDepth:
		t.Errorf("%s: %d frames, want at least %d:\ner%s", c.name, len(er), minDepth, hexs(er))
	case len(er) != len(bt) || !slices.Equal(er[1:], bt[1:]) || !near(er[0], bt[0]):
		t.Errorf("%s: er_backtrace differs from backtrace():\ner%s\nbt%s", c.name, hexs(er), hexs(bt))
	case isPseudo(er[len(er)-1]):
		t.Errorf("%s: ends with a pseudo-frame:%s", c.name, hexs(er))
	}
}

// TestUnwindBuildsClean builds unwind.c as the collector library is built, with -Werror, and checks
// that it exports nothing: the API is hidden (the library exports only the functions it
// interposes), everything else is static.
func TestUnwindBuildsClean(t *testing.T) {
	needGCC(t)
	lib := filepath.Join(t.TempDir(), "liberunwind.so")
	gcc(t, append(libFlags(), "-o", lib, filepath.Join(unwindSrc(), "unwind.c"))...)
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) != elf.STB_LOCAL {
			exported = append(exported, s.Name)
		}
	}
	if len(exported) > 0 {
		t.Errorf("the unwinder exports %v", exported)
	}
	// The API is there, hidden.
	all, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	api := map[string]bool{}
	for _, s := range all {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			api[s.Name] = true
		}
	}
	for _, name := range []string{"er_backtrace", "er_unwind_context", "er_unwind_init", "er_unwind_refresh"} {
		if !api[name] {
			t.Errorf("no function %s in the library", name)
		}
	}
}

func TestUnwind(t *testing.T) {
	needGCC(t)
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "linked-in", true: "shared-library"}[shared]
		t.Run(name, func(t *testing.T) {
			exe, dso := buildHarness(t, t.TempDir(), shared)
			out, err := exec.Command(exe, "check", dso, "300").CombinedOutput()
			if err != nil {
				t.Fatalf("harness: %v\n%s", err, out)
			}
			testHarnessOutput(t, parseOutput(t, out))
		})
	}
}

func testHarnessOutput(t *testing.T, h hout) {
	t.Run("same-as-backtrace", func(t *testing.T) {
		// probe, f_leafcall, f_big, f_alloca, f_regs, f_drap, f4..f1, main, 2 in libc, _start.
		nested := h.find(t, "nested")
		sameAsBacktrace(t, nested, 14)
		sameAsBacktrace(t, h.find(t, "recursion"), 17)
		sameAsBacktrace(t, h.find(t, "qsort"), 8)
		sameAsBacktrace(t, h.find(t, "bsearch"), 5)
		sameAsBacktrace(t, h.find(t, "dlopen"), 6)
		// probe, rbx_user, asm_rbxcfa (CFA in rbx, which rbx_user saved), rbx_cfa, main, 2 in libc, _start.
		sameAsBacktrace(t, h.find(t, "rbxcfa"), 8)
		thread := h.find(t, "thread")
		sameAsBacktrace(t, thread, 13)
		// Every main-thread stack ends at _start's frame, the thread's at another (clone3).
		outer := nested.stacks["er"][len(nested.stacks["er"])-1]
		for _, name := range []string{"recursion", "qsort", "bsearch", "dlopen", "rbxcfa"} {
			er := h.find(t, name).stacks["er"]
			if er[len(er)-1] != outer {
				t.Errorf("%s ends at %x, nested at %x", name, er[len(er)-1], outer)
			}
		}
		if er := thread.stacks["er"]; er[len(er)-1] == outer {
			t.Errorf("the thread's stack ends at _start's frame %x", outer)
		}
	})

	t.Run("signal-handlers", func(t *testing.T) {
		// In the handler: er and bt go handler, __restore_rt, interrupted PC, callers; ctx starts at
		// the interrupted PC. raise: a synchronous signal; altstack: the same, the handler on the
		// sigaltstack; sigprof: a 37 us timer interrupting a loop anywhere (prologues, epilogues,
		// the PLT, the vDSO, libc's qsort, and er_backtrace itself).
		n := 0
		for _, c := range h.cases {
			if c.name != "raise" && c.name != "altstack" && c.name != "sigprof" {
				continue
			}
			n++
			er, bt, ctx := c.stacks["er"], c.stacks["bt"], c.stacks["ctx"]
			if len(er) < 4 || len(er) != len(bt) || !slices.Equal(er[1:], bt[1:]) || !near(er[0], bt[0]) ||
				!slices.Equal(ctx, er[2:]) || isPseudo(er[len(er)-1]) {
				t.Errorf("%s: stacks differ:\ner%s\nbt%s\nctx%s", c.name, hexs(er), hexs(bt), hexs(ctx))
			}
		}
		if n != 302 {
			t.Errorf("%d signal samples, want 302", n)
		}
		// Some samples interrupted an er_backtrace on the same thread: the nested unwind worked.
		if r := h.stat(t, "reentrant"); r < 1 {
			t.Errorf("no SIGPROF sample interrupted an unwind in progress")
		} else {
			t.Logf("%d of 300 SIGPROF samples interrupted an er_backtrace in progress", r)
		}
	})

	t.Run("pseudo-frames", func(t *testing.T) {
		c := h.find(t, "limits")
		er := c.stacks["er"]
		sameLen := func(tag string, want []uint64) {
			got := c.stacks[tag]
			if len(got) != len(want) || !slices.Equal(got[1:], want[1:]) || !near(got[0], want[0]) {
				t.Errorf("%s:%s\nwant%s", tag, hexs(got), hexs(want))
			}
		}
		if len(er) < 14 || isPseudo(er[len(er)-1]) {
			t.Fatalf("limits: a full stack of %d frames:%s", len(er), hexs(er))
		}
		sameLen("trunc3", []uint64{er[0], er[1], pcTruncated})
		if got := c.stacks["one"]; !slices.Equal(got, []uint64{pcTruncated}) {
			t.Errorf("max 1:%s, want the truncated frame alone", hexs(got))
		}
		sameLen("exact", er) // max = depth: complete, no pseudo-frame
		if got := c.stacks["skip2"]; !slices.Equal(got, er[2:]) {
			t.Errorf("skip 2:%s\nwant%s", hexs(got), hexs(er[2:]))
		}
		if z := h.stat(t, "zero"); z != 0 {
			t.Errorf("max 0 returned %d", z)
		}

		// A frame without CFI whose rbp is garbage: unwinding stops there, failed.
		bad := h.find(t, "badrbp").stacks["er"]
		r := h.ranges["asm_badrbp"]
		if len(bad) != 3 || bad[1] < r[0] || bad[1] >= r[1] || bad[2] != pcFailed {
			t.Errorf("badrbp:%s, want probe, a PC in asm_badrbp [%x,%x), unwind-failed", hexs(bad), r[0], r[1])
		}
	})

	t.Run("frame-pointer-fallback", func(t *testing.T) {
		// probe_er_only <- asm_fp (no CFI, a frame pointer) <- via_asm <- ...: the frames below
		// asm_fp are via_asm's own backtrace().
		c := h.find(t, "fp")
		er, bt := c.stacks["er"], c.stacks["bt"]
		r := h.ranges["asm_fp"]
		if len(er) < 4 || er[1] < r[0] || er[1] >= r[1] || !near(er[2], bt[0]) || !slices.Equal(er[3:], bt[1:]) {
			t.Errorf("fp:\ner%s\nbt (via_asm)%s\nasm_fp [%x,%x)", hexs(er), hexs(bt), r[0], r[1])
		}
	})

	t.Run("corrupt-stack", func(t *testing.T) {
		// 20000 unwinds over frames overwritten with garbage (the harness survived them all).
		if n := h.stat(t, "smashed"); n != 20000 {
			t.Errorf("%d unwinds of a corrupt stack, want 20000", n)
		}
		if n := h.stat(t, "smash_failed"); n < 10000 {
			t.Errorf("only %d of 20000 unwinds of a corrupt stack ended with the unwind-failed frame", n)
		}
	})

	t.Run("threads", func(t *testing.T) {
		if m := h.stat(t, "mismatches"); m != 0 {
			t.Errorf("%d of %s unwinds differed from the first one at the same site", m, h.stats["unwinds"])
		}
		if u := h.stat(t, "unwinds"); u != 4*300*200 {
			t.Errorf("%d unwinds, want %d", u, 4*300*200)
		}
		if r := h.stat(t, "refreshes"); r < 1 {
			t.Errorf("no module-table refresh ran during the threads' unwinds")
		}
	})
}

// BenchmarkUnwind times er_backtrace and glibc backtrace() on the same cached stack of 5 and 20
// frames (the harness's timing mode, in a fresh thread), and reports ns per unwind and per frame.
func BenchmarkUnwind(b *testing.B) {
	needGCC(b)
	exe, _ := buildHarness(b, b.TempDir(), false)
	for _, frames := range []int{5, 20} {
		b.Run(fmt.Sprintf("frames=%d", frames), func(b *testing.B) {
			var er, bt float64
			for i := 0; i < b.N; i++ {
				out, err := exec.Command(exe, "bench", strconv.Itoa(frames), "1000000").CombinedOutput()
				if err != nil {
					b.Fatalf("harness: %v\n%s", err, out)
				}
				h := parseOutput(b, out)
				if got := h.stat(b, "frames"); got != frames {
					b.Fatalf("the timed stack has %d frames, want %d", got, frames)
				}
				e, err1 := strconv.ParseFloat(h.stats["er_ns"], 64)
				g, err2 := strconv.ParseFloat(h.stats["bt_ns"], 64)
				if err1 != nil || err2 != nil {
					b.Fatalf("bad timing line: %s", out)
				}
				er, bt = er+e, bt+g
			}
			er, bt = er/float64(b.N), bt/float64(b.N)
			b.ReportMetric(er, "ns/unwind")
			b.ReportMetric(er/float64(frames), "ns/frame")
			b.ReportMetric(bt, "backtrace-ns/unwind")
			b.ReportMetric(bt/float64(frames), "backtrace-ns/frame")
		})
	}
}
