package experiment_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"er/internal/collect"
	"er/internal/experiment"
	"er/preload"
)

// buildCollector builds er, the collector library beside it, and testdata/procheap.c into a
// temporary directory, or skips when this machine lacks gcc or go.
func buildCollector(t *testing.T) (er, prog string) {
	t.Helper()
	for _, tool := range []string{"gcc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	dir := t.TempDir()
	er, prog = filepath.Join(dir, "er"), filepath.Join(dir, "procheap")
	if out, err := exec.Command("go", "build", "-o", er, "er/cmd/er").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := preload.Build(filepath.Join(dir, collect.LibraryName)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-g", "-o", prog, filepath.Join("testdata", "procheap.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return er, prog
}

// procHeap counts what testdata/procheap.c allocates: blocks of 1000 to 1099 bytes (and how many
// of those were freed), of 333 bytes (in its child), and of 2000 bytes (after the test let it go on).
type procHeap struct{ first, freed, child, last int }

func countHeap(d *experiment.Data) procHeap {
	var c procHeap
	first := map[uint64]bool{}
	for _, e := range d.HeapEvents() {
		switch {
		case e.Op == experiment.HeapMalloc && e.Size >= 1000 && e.Size < 1100:
			c.first++
			first[e.Addr] = true
		case e.Op == experiment.HeapMalloc && e.Size == 333:
			c.child++
		case e.Op == experiment.HeapMalloc && e.Size == 2000:
			c.last++
		case e.Op == experiment.HeapFree && first[e.Old]:
			c.freed++
		}
	}
	return c
}

// waitFor polls cond until it holds; it fails the test after a minute (a collection that is
// stuck, not a slow one).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

func hasWarning(d *experiment.Data, prefix string) bool {
	for _, w := range d.Warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// liveCollect is a running er collect of testdata/procheap, which has said "ready" and waits for
// its FIFO to be opened.
type liveCollect struct {
	cmd     *exec.Cmd
	exp     string // the experiment
	fifo    string
	errFile string // er collect's stderr
	killed  bool
}

// startLive starts er collect with opts on procheap into a new experiment and waits for procheap to
// say ready.
func startLive(t *testing.T, er, prog string, opts ...string) *liveCollect {
	t.Helper()
	dir := t.TempDir()
	l := &liveCollect{exp: filepath.Join(dir, "test.1.er"), fifo: filepath.Join(dir, "fifo"), errFile: filepath.Join(dir, "stderr")}
	if err := syscall.Mkfifo(l.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	l.cmd = exec.Command(er, append(append([]string{"collect"}, opts...), "-o", l.exp, prog, l.fifo)...)
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: procheap inherits it and outlives er, and Wait would wait for a pipe's end.
	ef, err := os.Create(l.errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	l.cmd.Stderr = ef
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !l.killed {
			l.cmd.Process.Kill()
			l.cmd.Wait()
		}
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		l.cmd.Process.Kill()
		l.cmd.Wait()
		l.killed = true
		t.Fatalf("procheap did not say ready: %q, %v; er collect's stderr:\n%s", lines.Text(), lines.Err(), l.stderr())
	}
	return l
}

func (l *liveCollect) stderr() string { b, _ := os.ReadFile(l.errFile); return string(b) }

// killEr SIGKILLs er collect, lets procheap (process pid) go on, and waits for it to end.
func (l *liveCollect) killEr(t *testing.T, pid uint32) {
	t.Helper()
	l.cmd.Process.Signal(syscall.SIGKILL)
	l.cmd.Wait()
	l.killed = true
	w, err := os.OpenFile(l.fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	waitFor(t, "procheap to end", func() bool {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ") // gone, or a zombie nobody reaps
	})
}

// The heap data of a real collection is read while er collect runs (from .proc/, where the
// collector library writes it), and after er collect was killed: the founder's into the founder
// experiment, the child's into its subexperiment, each with a warning that says where it came from
// and that the experiment is live or was not finished. Before, both read no heap event at all. What
// the target allocates after er was killed is not recorded (the library stops when er is gone).
func TestOpenProcLive(t *testing.T) {
	er, prog := buildCollector(t)
	l := startLive(t, er, prog, "-H", "on")
	exp := l.exp
	// The child's subexperiment: er makes it when it sees the fork in perf's records.
	sub := filepath.Join(exp, "_f1.er")
	haveSub := true
	waitFor(t, "the child's subexperiment or its end", func() bool {
		if _, err := os.Stat(filepath.Join(sub, experiment.LogFile)); err == nil {
			return true
		}
		// Without perf events er follows no descendant: the child's data has no experiment.
		if strings.Contains(l.stderr(), "perf") {
			haveSub = false
			return true
		}
		return false
	})

	t.Logf("the child has a subexperiment: %v", haveSub)

	// Live: procheap waits for the FIFO, er collect runs.
	d, err := experiment.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := countHeap(d), (procHeap{first: 100, freed: 60}); got != want {
		t.Errorf("live founder: %+v, want %+v", got, want)
	}
	for _, w := range []string{"the experiment is live: er collect is still recording it",
		"the trace data of process " + itoa(d.Log.Pid) + " (heaptrace, tracestacks) is read from .proc/"} {
		if !hasWarning(d, w) {
			t.Errorf("live founder: warnings %q lack %q", d.Warnings, w)
		}
	}
	if haveSub {
		sd, err := experiment.Open(sub)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := countHeap(sd), (procHeap{child: 7}); got != want {
			t.Errorf("live child: %+v, want %+v", got, want)
		}
		if w := "the trace data of process " + itoa(sd.Log.Pid) + " (heaptrace, tracestacks) is read from .proc/"; !hasWarning(sd, w) {
			t.Errorf("live child: warnings %q lack %q", sd.Warnings, w)
		}
	}

	// Killed: er collect dies; procheap goes on alone and ends. The collector library sees that er is
	// gone (the FIFO has no reader) and stops: the 50 blocks procheap allocates after that are not
	// recorded, and nothing is written into the experiment after er's end.
	l.killEr(t, d.Log.Pid)
	d, err = experiment.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := countHeap(d), (procHeap{first: 100, freed: 60, last: 0}); got != want {
		t.Errorf("founder after er was killed: %+v, want %+v", got, want)
	}
	for _, w := range []string{"the experiment was not finished: er collect stopped before the end",
		"the trace data of process " + itoa(d.Log.Pid) + " (heaptrace, tracestacks) is read from .proc/"} {
		if !hasWarning(d, w) {
			t.Errorf("founder after er was killed: warnings %q lack %q", d.Warnings, w)
		}
	}
	if haveSub {
		sd, err := experiment.Open(sub)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := countHeap(sd), (procHeap{child: 7}); got != want {
			t.Errorf("child after er was killed: %+v, want %+v", got, want)
		}
	} else if !hasWarning(d, "the collector library's data of process ") {
		t.Errorf("no subexperiment, and no warning about the child's data: %q", d.Warnings)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// A clock-only collection (no collector library) is read as live while er collect records it, and as
// not finished once er collect was killed; a finished one leaves no FIFO. Before, a live clock-only
// experiment was said to be not finished ("er collect stopped before the end"): only the library's
// control FIFO told readers that er collect was running.
func TestClockOnlyLive(t *testing.T) {
	er, prog := buildCollector(t)
	l := startLive(t, er, prog, "-F", "off")
	d, err := experiment.Open(l.exp)
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(d, "the experiment is live: er collect is still recording it") {
		t.Errorf("live clock-only experiment: warnings %q", d.Warnings)
	}
	l.killEr(t, d.Log.Pid)
	if d, err = experiment.Open(l.exp); err != nil {
		t.Fatal(err)
	}
	if !hasWarning(d, "the experiment was not finished: er collect stopped before the end") {
		t.Errorf("clock-only experiment after er was killed: warnings %q", d.Warnings)
	}

	// To the end: no FIFO is left, and no warning.
	exp2 := filepath.Join(t.TempDir(), "test.2.er")
	done := exec.Command(er, "collect", "-F", "off", "-o", exp2, prog, l.fifo)
	go func() {
		if w, err := os.OpenFile(l.fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	}()
	if b, err := done.CombinedOutput(); err != nil {
		t.Fatalf("er collect: %v\n%s", err, b)
	}
	if _, err := os.Lstat(filepath.Join(exp2, experiment.ControlName)); !os.IsNotExist(err) {
		t.Errorf("a finished experiment holds %s: %v", experiment.ControlName, err)
	}
	if d, err = experiment.Open(exp2); err != nil || len(d.Warnings) != 0 {
		t.Errorf("finished: %v, warnings %q", err, d.Warnings)
	}
}
