package erprint

import (
	"bytes"
	"strings"
	"testing"

	"er/internal/analysis"
)

// FuzzInterpreter feeds arbitrary command lines to the interpreter over the synthetic experiments: whatever
// the input, er print answers with output or an error, never a panic.
func FuzzInterpreter(f *testing.F) {
	for _, seed := range []string{
		"functions\n", "metrics e.%totalcpu:i.totalcpu\nsort i.user\nfunctions\n", "csingle main\ncprepend work\ncallers-callees\n",
		"limit 2\ncalltree\n", "name short:soname\nfunctions\n", "fsingle work 2\n", "printmode csv\nlobjects\n",
		"header\nstatistics\noverview\nthread_list\ncpu_list\nsample_list\nexperiment_list\n", "metrics !\n", "sort \"\n",
		"lines\npcs\nlsummary\npsummary\nsource main\ndisasm main\ninline off\nfunctions\nlines\n",
		"setpath /nonexistent:.\naddpath x\npathmap /a /b\nsthresh 10\ndthresh 5\nsource compute.c 2\n",
		"leaks\nallocs\nheap\nheapstat\nioactivity\niodetail\niocallstack\niostat\n",
		"metrics i+heapleakcnt:e.%sync:i+%ioreadbytes\nsort heapleakbytes\nprintmode json\nheap\ncalltree\n",
		"thread_select 1:2+2:all\nsample_select 2\ncpu_select 0-1\nlwp_select 4242\nexperiment_select 1\nfunctions\nleaks\niostat\n",
		"filters THRID IN (1,2) && TSTAMP >= 1.5e9 || !(SAMPLE % 2) ? CPUID : -1\ndescribe\nsample_detail\noverview\nthread_list\n",
		"filters (((1)\nfilters 0x\nfilters 1e400\nfilters 9223372036854775807 * -1 / -1 << 70\nfunctions\nfilters\n",
		"filters INSTK(compute) && !INSTK(worker)\ncsingle compute\nthread_list\nleaks\niostat\nname short\nfunctions\n",
		"filters (FNAME(\"main\"), FNAME(\"comp.*\") ORDERED IN USTACK) || LEAF IN (3, 4)\nlines\ncalltree\nindxobj Threads\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		t.Chdir(t.TempDir()) // a command that writes a file (outfile with an odd spelling) writes it there
		lower := strings.ToLower(input)
		if strings.Contains(lower, "outfile") || strings.Contains(lower, "appendfile") || strings.Contains(lower, "script") {
			t.Skip("commands that touch files are not fuzzed")
		}
		// The clock experiments, and the tracing ones.
		for _, exps := range [][]string{{"demo.1.er", "demo.2.er"}, {"heap.1.er", "io.1.er"}} {
			var out, errb bytes.Buffer
			code := run(exps, strings.NewReader(input), &out, &errb, testEnv())
			if code != 0 && code != exitUsage && code != exitError {
				t.Errorf("%v: exit code %d", exps, code)
			}
		}
	})
}

// FuzzFilter compiles arbitrary filter expressions: an error or a function that evaluates without
// a panic, however the expression nests.
func FuzzFilter(f *testing.F) {
	for _, seed := range []string{"THRID==3", "((((1))))", "!!!!-~1", "1 ? 2 : 3 ? 4 : 5", "1 IN (1 IN (2), 3)",
		strings.Repeat("(", 1200) + "1" + strings.Repeat(")", 1200), "1" + strings.Repeat("+1", 1100), "TSTAMP / 0 % -1",
		`INSTK(main)`, `INSTK(f(int, (char)))`, `(FNAME("a.*"), 3, FNAME("b") ORDERED IN MSTACK)`, `LEAF IN FNAME("x") || 2 SOME IN LEAF`,
		`FNAME("\\") IN (1, FNAME("y"))`, `(1,2) ORDERED IN (2,1,2)`} {
		f.Add(seed)
	}
	ev := &analysis.EventInfo{Exp: 1, Thread: 2, Tid: 3, Time: 4, Dur: 5, Sample: 6, CPU: 7}
	// And the events of a profile, with their call stacks.
	var s session
	s.env = testEnv()
	s.stderr = new(bytes.Buffer)
	if err := s.load([]string{"demo.1.er"}); err != nil {
		f.Fatal(err)
	}
	all, err := s.profile()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := compileFilter(expr, nil)
		if err != nil {
			return
		}
		c.eval(ev)
		if _, err := all.Refilter(func(ev *analysis.EventInfo) bool { return c.eval(ev) != 0 }, false); err != nil {
			t.Fatal(err)
		}
	})
}
