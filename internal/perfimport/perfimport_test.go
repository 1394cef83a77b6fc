package perfimport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfdata"
)

// The fixtures are perfdata's (see its file_test.go): perf record of a busy loop, whose binary
// (/tmp/pt/busy) is on the machine that recorded them only; the figures are perf report's.
const fixtures = "../perfdata/testdata/"

func importFile(t *testing.T, name string) (*Result, *experiment.Data) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test.1.er")
	r, err := Import(fixtures+name, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

func TestImportFP(t *testing.T) {
	r, d := importFile(t, "fp.data")
	if r.ClockSamples != 15 || r.CounterSamples != 5 || r.Experiments != 1 {
		t.Errorf("result %+v, want 15 clock and 5 counter samples in 1 experiment", r)
	}
	// perf report: 15 samples of cpu-clock, event count 15000000; 5 of page-faults, 376.
	var clock, faults int64
	for _, s := range d.ClockSamples() {
		clock += s.Period
	}
	nc := d.CounterTable().Len()
	for i := range nc {
		faults += d.CounterAt(i).Value
	}
	if d.ClockTable().Len() != 15 || clock != 15000000 || nc != 5 || faults != 376 {
		t.Errorf("%d clock samples of %d ns, %d counter samples of %d events; want 15 of 15000000, 5 of 376", d.ClockTable().Len(), clock, nc, faults)
	}
	l := d.Log
	if len(l.Counters) != 1 || l.Counters[0].Name != "page-faults" || l.Counters[0].Metric != "page-faults" || l.Counters[0].Config != 2 {
		t.Errorf("counters %+v", l.Counters)
	}
	if v, _ := l.Setting(experiment.SettingClockInterval); v != "1000000" {
		t.Errorf("clock interval %q, want 1000000 (1000 Hz)", v)
	}
	if strings.Join(l.Command, " ") != "./busy" || l.Pid != 21398 || l.Host != "vm" || l.CPUs != 2 || !l.KernelStacks || !l.Exited {
		t.Errorf("log: command %q pid %d host %q cpus %d kernel stacks %v exited %v", l.Command, l.Pid, l.Host, l.CPUs, l.KernelStacks, l.Exited)
	}
	// The first record with a time (the exec's COMM) starts the experiment; the last (the EXIT) ends it.
	if l.StartPerfNS != 85340190419618 || l.EndTime != 85340225331386-85340190419618 {
		t.Errorf("start %d, end %d", l.StartPerfNS, l.EndTime)
	}
	// The first sample (page-faults, in elf_load during the exec): its call chain less the markers.
	want := experiment.Stack{0xffffffff817554ea, 0xffffffff81755b8a, 0xffffffff816c599f, 0xffffffff816c7016,
		0xffffffff816c8064, 0xffffffff821ef691, 0xffffffff81000130, 0x7fe2cc4f2ad7}
	if c, got := d.CounterAt(0), d.Stacks[d.CounterAt(0).Stack]; !slices.Equal(got, want) || c.Mode != experiment.ModeKernel || c.Time != 99818 {
		t.Errorf("first counter sample at %d, mode %v, stack %x; want at 99818 in kernel mode %x", c.Time, c.Mode, got, want)
	}
	var busy, kernel int
	for _, m := range d.Mappings {
		switch m.Path {
		case "/tmp/pt/busy":
			busy++
			if m.BuildID != "3272e69c1105d0b17809c0c8c99a1ec9450a9b18" || m.Pid != 21398 {
				t.Errorf("busy's mapping %+v", m)
			}
		case "[kernel]":
			kernel++
		}
	}
	if busy != 1 || kernel != 1 {
		t.Errorf("%d mappings of busy and %d of the kernel, want 1 and 1: %+v", busy, kernel, d.Mappings)
	}
}

func TestImportDwarfAndPipe(t *testing.T) {
	r, d := importFile(t, "dwarf.data")
	var ns int64
	for _, s := range d.ClockSamples() {
		ns += s.Period
		// Each stack starts at the sample's leaf, in busy's code (the mapping at 0x558ac5f57000).
		if st := d.Stacks[s.Stack]; len(st) == 0 || st[0] < 0x558ac5f57000 || st[0] >= 0x558ac5f58000 {
			t.Errorf("sample at %d: stack %x", s.Time, st)
		}
	}
	if r.ClockSamples != 5 || d.ClockTable().Len() != 5 || ns != 10000000 {
		t.Errorf("%d samples of %d ns, want 5 of 10000000", d.ClockTable().Len(), ns)
	}
	r, d = importFile(t, "pipe.data")
	if r.ClockSamples != 5 || d.ClockTable().Len() != 5 || strings.Join(d.Log.Command, " ") != "./busy" {
		t.Errorf("pipe mode: %d samples, command %q", d.ClockTable().Len(), d.Log.Command)
	}
}

func TestImportErrors(t *testing.T) {
	tmp := t.TempDir()
	fp, err := os.ReadFile(fixtures + "fp.data")
	if err != nil {
		t.Fatal(err)
	}
	// The data section cut inside a record: the header's sections are rewritten to end there.
	cut := filepath.Join(tmp, "cut.data")
	if err := os.WriteFile(cut, fp[:0x500], 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "x.er")
	if _, err := Import(cut, dir); err == nil || !strings.Contains(err.Error(), "cut.data: offset 0x28: the data section") {
		t.Errorf("a cut file: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed import left %s (%v)", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(fixtures+"fp.data", dir); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("into an existing directory: %v", err)
	}
}

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{"cycles:u": "cycles", "cpu/event=0x3c/": "cpu_event_0x3c_", "sched:sched_switch": "sched_sched_switch",
		"page-faults": "page-faults", "instructions:ppp": "instructions"} {
		if got := metricName(in); got != want {
			t.Errorf("metricName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestImportCutStream: a stream in pipe mode that ends inside a record (perf record -o - | er import -
// stopped while perf wrote a record) is imported up to the cut, with a warning that says what was
// cut and where (issue 27, item 20: it was refused whole).
func TestImportCutStream(t *testing.T) {
	b, err := os.ReadFile(fixtures + "pipe.data")
	if err != nil {
		t.Fatal(err)
	}
	// Cut 10 bytes into the last sample.
	_, rd, err := perfdata.NewPipe(bytes.NewReader(b), "pipe.data")
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	samples := 0
	for {
		r, err := rd.Next()
		if err != nil {
			break
		}
		if _, ok := r.(*perfabi.Sample); ok {
			last = r.Head().Offset
			samples++
		}
	}
	cut := filepath.Join(t.TempDir(), "cut.data")
	if err := os.WriteFile(cut, b[:last+10], 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cut.er")
	r, err := Import(cut, dir)
	if err != nil {
		t.Fatalf("a stream cut inside its last sample: %v", err)
	}
	want := "cut short and not read: a record of type SAMPLE, 10 of its"
	var warned string
	for _, w := range r.Warnings {
		if strings.Contains(w, "ends inside a record") {
			warned = w
		}
	}
	if r.ClockSamples != int64(samples-1) || !strings.HasPrefix(warned, cut+": the stream ends inside a record") || !strings.Contains(warned, want) ||
		!strings.HasSuffix(warned, fmt.Sprintf("bytes, at offset %#x", last)) {
		t.Errorf("%d samples imported (want %d), warning %q", r.ClockSamples, samples-1, warned)
	}
	t.Logf("warning: %s", warned)
	d, err := experiment.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClockTable().Len() != samples-1 {
		t.Errorf("%d clock samples in the experiment, want %d", d.ClockTable().Len(), samples-1)
	}
}

// TestImportForksLinear: what er import allocates for a process with n mappings that forks n
// times grows as n, not n² (issue 27, siblings of item 5: each forked child copied its parent's
// mappings, twice (the experiment's and the unwinder's), and each MMAP record filtered all of the
// process's mappings). Four times the records may cost at most twice the bytes per record.
func TestImportForksLinear(t *testing.T) {
	perRecord := func(n int) float64 {
		p := manyMappings(n, n).write(t)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		if _, err := Import(p, filepath.Join(t.TempDir(), "x.er")); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		return float64(ms.TotalAlloc-before) / float64(2*n)
	}
	small, large := perRecord(500), perRecord(2000)
	if large > 2*small {
		t.Errorf("%.0f bytes allocated per record for 500 mappings and 500 forks, %.0f for 2000 and 2000: more than twice", small, large)
	}
	t.Logf("%.0f and %.0f bytes per record", small, large)
}

// TestImportInheritBounded: the mappings that forked children's experiments inherit are bounded
// in all (maxInherited, and one for each byte of the file): past the bound a child's experiment
// has its own mappings only, and a warning says how many were left out (issue 27, a sibling of item
// 5: n mappings and n forks with a sample each wrote n² mappings, 161 MB for a file of 136 KB).
func TestImportInheritBounded(t *testing.T) {
	defer func(n int64) { maxInherited = n }(maxInherited)
	maxInherited = 1000
	const n = 200
	c := manyMappings(n, 0)
	for i := range n {
		pid := uint64(craftPid + 1 + i)
		c.record(perfabi.RecordFork, 0, wordsOf(pid|craftPid<<32, pid|craftPid<<32, uint64(2000+i))...)
		c.sample(uint32(pid), 0x7f0000000000-0x2000+0x10, uint64(3000+i))
	}
	dir := filepath.Join(t.TempDir(), "x.er")
	r, err := Import(c.write(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	bound := int(maxInherited) + len(c.b)
	written, full := 0, 0 // inherited mappings in the children's experiments, children with all of them
	subs, err := experiment.Descendants(dir)
	if err != nil || len(subs) != n {
		t.Fatalf("%d subexperiments (%v), want %d", len(subs), err, n)
	}
	for _, s := range subs {
		d, err := experiment.Open(s)
		if err != nil {
			t.Fatal(err)
		}
		written += len(d.Mappings)
		if len(d.Mappings) == n {
			full++
		}
	}
	skipped := n - full
	want := fmt.Sprintf("%d experiments of forked processes are written without the %d mappings they inherited: all the forked processes inherit more than er writes for a file of %d bytes",
		skipped, skipped*n, len(c.b))
	var warned bool
	for _, w := range r.Warnings {
		warned = warned || strings.HasPrefix(w, want)
	}
	if written > bound || full != bound/n || !warned {
		t.Errorf("%d inherited mappings written (bound %d), %d children with all %d; warnings %q, want one %q", written, bound, full, n, r.Warnings, want)
	}
}
