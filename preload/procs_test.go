package preload

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"er/internal/experiment"
)

// The collector library and the test program procs (testdata/procs.c), built once for the tests
// of this file.
var (
	buildOnce           sync.Once
	buildDir            string
	libPath, procsPath  string
	buildErr            error
	errNoGCC            = errors.New("gcc not found")
	controlMessageMagic = uint32(0x31435245)
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// built builds the library and procs, once.
func built(t *testing.T) (lib, procs string) {
	t.Helper()
	buildOnce.Do(func() {
		if _, err := exec.LookPath("gcc"); err != nil {
			buildErr = errNoGCC
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "preload-procs"); buildErr != nil {
			return
		}
		libPath = filepath.Join(buildDir, "libercollector.so")
		procsPath = filepath.Join(buildDir, "procs")
		if buildErr = Build(libPath); buildErr != nil {
			return
		}
		args := []string{"-O1", "-g", "-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations", "-o", procsPath, "testdata/procs.c", "-lpthread"}
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr == errNoGCC {
		t.Skip("gcc not found: the collector library's tests build C programs with it")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return libPath, procsPath
}

// run is one run of procs with the collector library: the experiment directory (with .proc/ and
// the FIFO .control made as er makes them), the messages read from the FIFO, and procs' stat lines.
type run struct {
	dir   string
	msgs  []message
	stats map[string]string
	out   string
}

type message struct {
	kind, pid, tid uint32
	time           uint64
	arg            uint32
	parentLo       uint32
}

// expDir makes an experiment directory with .proc/, and the state page when state is not nil.
func expDir(t *testing.T, state []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if state != nil {
		if err := os.WriteFile(filepath.Join(dir, ".proc", "state"), state, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// statePage returns a control page with the given stop and pause_all words.
func statePage(stop, pauseAll uint32) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint32(b, 0x53524545)
	binary.LittleEndian.PutUint32(b[4:], 1)
	binary.LittleEndian.PutUint32(b[8:], stop)
	binary.LittleEndian.PutUint32(b[12:], pauseAll)
	return b
}

// openFIFO makes dir/.control and opens it as er does (read-write, so that writers always find
// a reader), not blocking: after the run the test reads what is there.
func openFIFO(t *testing.T, dir string) int {
	t.Helper()
	path := filepath.Join(dir, ".control")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// readMessages reads every message waiting in the FIFO.
func readMessages(t *testing.T, fd int) []message {
	t.Helper()
	var msgs []message
	var pending []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EAGAIN || n == 0 {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, buf[:n]...)
	}
	if len(pending)%32 != 0 {
		t.Fatalf("%d bytes in the FIFO: not whole 32-byte messages", len(pending))
	}
	le := binary.LittleEndian
	for b := pending; len(b) > 0; b = b[32:] {
		if le.Uint32(b) != controlMessageMagic {
			t.Fatalf("message with magic %#x", le.Uint32(b))
		}
		msgs = append(msgs, message{kind: le.Uint32(b[4:]), pid: le.Uint32(b[8:]), tid: le.Uint32(b[12:]),
			time: le.Uint64(b[16:]), arg: le.Uint32(b[24:]), parentLo: le.Uint32(b[28:])})
	}
	return msgs
}

// collectorEnv is the environment of a run: the library preloaded, writing into dir.
func collectorEnv(lib, dir string, env ...string) []string {
	out := []string{"PATH=/usr/bin:/bin", "LD_PRELOAD=" + lib, "ER_EXPDIR=" + dir}
	return append(out, env...)
}

func parseStats(t *testing.T, out string) map[string]string {
	t.Helper()
	stats := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "error" {
			t.Errorf("procs: %s", line)
		}
		if len(f) > 0 && f[0] == "stat" {
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					stats[k] = v
				}
			}
		}
	}
	return stats
}

// runProcs runs procs args with the library and env in a new experiment directory.
func runProcs(t *testing.T, state []byte, env []string, args ...string) run {
	t.Helper()
	lib, procs := built(t)
	dir := expDir(t, state)
	fifo := openFIFO(t, dir)
	cmd := exec.Command(procs, args...)
	cmd.Env = collectorEnv(lib, dir, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("procs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return run{dir: dir, msgs: readMessages(t, fifo), stats: parseStats(t, string(out)), out: string(out)}
}

// An instance is one .proc/<pid>.<start_ns> directory: its info and its data.
type instance struct {
	name string
	info map[string]string
	pid  uint32
	ppid uint32
	how  string

	start, parentStart uint64
	files              []string
	data               *experiment.Data // nil when it has no trace files
}

func (in instance) String() string { return in.name + " (" + in.how + ")" }

// instances reads every instance directory of dir/.proc.
func instances(t *testing.T, dir string) []instance {
	t.Helper()
	pd := filepath.Join(dir, ".proc")
	ents, err := os.ReadDir(pd)
	if err != nil {
		t.Fatal(err)
	}
	var ins []instance
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		in := instance{name: e.Name(), info: map[string]string{}}
		b, err := os.ReadFile(filepath.Join(pd, e.Name(), "info"))
		if err != nil {
			t.Fatalf("instance %s: %v", e.Name(), err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s/info: line %q is not key=value", e.Name(), line)
			}
			in.info[k] = v
		}
		for _, k := range []string{"pid", "ppid", "start_ns", "how", "parent_start_ns", "exe"} {
			if _, ok := in.info[k]; !ok {
				t.Errorf("%s/info has no %s:\n%s", e.Name(), k, b)
			}
		}
		in.pid = uint32(atou(t, in.info["pid"]))
		in.ppid = uint32(atou(t, in.info["ppid"]))
		in.start = atou(t, in.info["start_ns"])
		in.parentStart = atou(t, in.info["parent_start_ns"])
		in.how = in.info["how"]
		if want := fmt.Sprintf("%d.%d", in.pid, in.start); e.Name() != want {
			t.Errorf("instance directory %s, its info says %s", e.Name(), want)
		}
		files, _ := os.ReadDir(filepath.Join(pd, e.Name()))
		for _, f := range files {
			in.files = append(in.files, f.Name())
		}
		if len(in.files) > 1 {
			d, err := experiment.Open(filepath.Join(pd, e.Name()))
			if err != nil {
				t.Fatalf("reading the trace files of %s: %v", e.Name(), err)
			}
			for _, w := range d.Warnings {
				if !strings.HasPrefix(w, experiment.LogFile+": missing") && !strings.HasPrefix(w, experiment.MapFile+": missing") {
					t.Errorf("%s: %s", e.Name(), w)
				}
			}
			in.data = d
		}
		ins = append(ins, in)
	}
	return ins
}

func atou(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

// mallocSizes returns how many mallocs of each size the instance recorded.
func (in instance) mallocSizes() map[uint64]int {
	m := map[uint64]int{}
	if in.data != nil {
		for _, e := range in.data.HeapEvents() {
			if e.Op == experiment.HeapMalloc {
				m[e.Size]++
			}
		}
	}
	return m
}

// The sizes procs' processes allocate in tree mode, each its own (testdata/procs.c).
var treeSizes = []uint64{111111, 111112, 777, 222221, 222222, 222223, 333333, 444444, 555555, 666666}

// TestDescendants runs procs tree with every kind of tracing: the founder forks three children
// (one from a second thread, while a third thread allocates; the third child execs), posix_spawns,
// calls system() and vforks. Every process image is an instance with its own directory, info and
// trace files, and each has exactly its own allocations.
func TestDescendants(t *testing.T) {
	lib, procs := built(t)
	dir := expDir(t, statePage(0, 0))
	fifo := openFIFO(t, dir)
	// ER_FOUNDER_PID names the founder: a shell learns its pid and execs procs with the library.
	script := fmt.Sprintf("export ER_FOUNDER_PID=$$ LD_PRELOAD=%s; exec %s tree %s", lib, procs, procs)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ER_EXPDIR=" + dir, "ER_TRACE=heap,sync,io,clock", "ER_SYNC_THRESHOLD_NS=0",
		"ER_CLOCK_INTERVAL_NS=1000000", "ER_FOLLOW=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("procs tree: %v\n%s", err, out)
	}
	stats := parseStats(t, string(out))
	pid := func(k string) uint32 { return uint32(atou(t, stats[k])) }
	founderPid := pid("founder")
	ins := instances(t, dir)
	msgs := readMessages(t, fifo)

	byPid := map[uint32][]instance{}
	byStart := map[uint64]instance{}
	for _, in := range ins {
		byPid[in.pid] = append(byPid[in.pid], in)
		byStart[in.start] = in
	}
	one := func(pid uint32, how string) instance {
		t.Helper()
		for _, in := range byPid[pid] {
			if in.how == how {
				return in
			}
		}
		t.Fatalf("no %s instance of process %d among %v", how, pid, ins)
		return instance{}
	}
	founder := one(founderPid, "founder")
	if founder.ppid != uint32(cmd.Process.Pid) && founder.ppid != uint32(os.Getpid()) {
		t.Errorf("founder: ppid %d", founder.ppid)
	}
	if founder.parentStart != 0 {
		t.Errorf("founder: parent_start_ns %d, want 0", founder.parentStart)
	}
	c1, c2 := one(pid("child1"), "fork"), one(pid("child2"), "fork")
	c3fork, c3exec := one(pid("child3"), "fork"), one(pid("child3"), "exec")
	spawn, vf := one(pid("spawn"), "exec"), one(pid("vfork"), "exec")
	for _, in := range []instance{c1, c2, c3fork, spawn, vf} {
		if in.ppid != founderPid || in.parentStart != founder.start {
			t.Errorf("%v: ppid %d, parent_start_ns %d; want the founder's %d, %d", in, in.ppid, in.parentStart, founderPid, founder.start)
		}
	}
	if c3exec.ppid != founderPid || c3exec.parentStart != c3fork.start {
		t.Errorf("%v: ppid %d, parent_start_ns %d; want %d and the fork child's start %d", c3exec, c3exec.ppid, c3exec.parentStart, founderPid, c3fork.start)
	}
	if c3exec.start <= c3fork.start {
		t.Errorf("the exec'd image started at %d, before its fork instance %d", c3exec.start, c3fork.start)
	}
	for _, in := range ins {
		if exe := in.info["exe"]; exe != procs && !strings.HasSuffix(exe, "sh") {
			t.Errorf("%v: exe %q", in, exe)
		}
	}

	// system(): /bin/sh -c "procs leaf 555555": the shell's image and the leaf's.
	var sys instance
	for _, in := range ins {
		if in.mallocSizes()[555555] > 0 {
			sys = in
		}
	}
	if sys.name == "" || sys.how != "exec" || sys.info["exe"] != procs {
		t.Fatalf("no exec'd instance of procs leaf 555555: %+v", sys)
	}
	shell, ok := byStart[sys.parentStart]
	if !ok || !strings.HasSuffix(shell.info["exe"], "sh") || shell.how != "exec" || shell.parentStart != founder.start {
		t.Errorf("system(): the leaf's parent_start_ns %d names %+v, want the shell the founder started", sys.parentStart, shell)
	}

	// Each process's allocations are in its own files, and only there.
	want := map[uint64]instance{111111: founder, 111112: founder, 777: founder, 222221: c1, 222222: c2, 222223: c3fork,
		333333: c3exec, 444444: spawn, 555555: sys, 666666: vf}
	for _, in := range ins {
		got := in.mallocSizes()
		for _, size := range treeSizes {
			switch {
			case want[size].name == in.name && got[size] == 0:
				t.Errorf("%v: no malloc(%d)", in, size)
			case want[size].name != in.name && got[size] > 0:
				t.Errorf("%v: %d mallocs of %d, which %v made", in, got[size], size, want[size])
			}
		}
		if size := uint64(111111); want[size].name == in.name && got[size] != 3 {
			t.Errorf("%v: %d mallocs of %d, want 3", in, got[size], size)
		}
	}

	// Child 1's other data: clock samples, its mutex, its write to /dev/null, its stacks and maps.
	d := c1.data
	// Its SIGPROF timer: this kernel's CPU-time timers may fire late or not at all in 30 ms of CPU
	// time, so the timer itself is what must be there; samples are logged.
	if stats["child1_timer"] != "1" {
		t.Errorf("%v: the child has no SIGPROF timer of the library for its thread", c1)
	}
	t.Logf("%v: %d clock samples in 30 ms of CPU time at 1 ms", c1, d.ClockTable().Len())
	if d.SyncTable().Len() == 0 {
		t.Errorf("%v: no synchronization events", c1)
	}
	wrote := false
	for _, e := range d.IOEvents() {
		if e.Bytes == 5 && e.File == "/dev/null" {
			wrote = true
		}
		if e.FD == 4242 {
			t.Errorf("%v: an I/O event of the vfork child: %+v", c1, e)
		}
	}
	if !wrote {
		t.Errorf("%v: no write of 5 bytes to /dev/null in %d I/O events", c1, d.IOTable().Len())
	}
	for _, in := range ins {
		if in.data == nil {
			continue
		}
		for _, e := range in.data.IOEvents() {
			if e.FD == 4242 {
				t.Errorf("%v: the vfork child's close(4242) was recorded: %+v", in, e)
			}
		}
		for _, e := range in.data.HeapEvents() {
			if e.Op == experiment.HeapMalloc && (e.Stack == 0 || len(in.data.Stacks[e.Stack]) < 3) {
				t.Errorf("%v: malloc(%d) with stack %d", in, e.Size, e.Stack)
				break
			}
			if e.Pid != in.pid {
				t.Errorf("%v: heap event of pid %d", in, e.Pid)
				break
			}
		}
		maps, err := experiment.TraceMappings(filepath.Join(dir, ".proc", in.name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(maps, func(m experiment.Mapping) bool { return m.Path == in.info["exe"] }) {
			t.Errorf("%v: the trace files map no segment of %s (%d mappings)", in, in.info["exe"], len(maps))
		}
	}

	// Messages: one per instance, of its kind, at its start.
	kinds := map[string]uint32{"founder": 4, "fork": 5, "exec": 6}
	for _, in := range ins {
		var got []message
		for _, m := range msgs {
			if m.pid == in.pid && m.time == in.start {
				got = append(got, m)
			}
		}
		if len(got) != 1 {
			t.Errorf("%v: %d start messages, want 1: %+v", in, len(got), got)
			continue
		}
		m := got[0]
		if m.kind != kinds[in.how] || m.arg != in.ppid {
			t.Errorf("%v: message kind %d, parent pid %d; want %d, %d", in, m.kind, m.arg, kinds[in.how], in.ppid)
		}
		if lo := uint32(in.parentStart); in.how == "fork" && m.parentLo != lo || in.how != "fork" && m.parentLo != 0 {
			t.Errorf("%v: parent_start_lo32 %d (parent_start_ns %d)", in, m.parentLo, in.parentStart)
		}
	}
	if len(msgs) != len(ins) {
		t.Errorf("%d messages for %d instances", len(msgs), len(ins))
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".proc", "founder")); err != nil ||
		string(b) != fmt.Sprintf("pid=%d\nstart_ns=%d\n", founderPid, founder.start) {
		t.Errorf(".proc/founder: %q, %v", b, err)
	}
}

// TestFollowOff: with ER_FOLLOW=0 only the founder records; its descendants create nothing.
func TestFollowOff(t *testing.T) {
	_, procs := built(t)
	r := runProcs(t, nil, []string{"ER_TRACE=heap,io", "ER_FOLLOW=0"}, "tree", procs)
	ins := instances(t, r.dir)
	if len(ins) != 1 || ins[0].how != "founder" || ins[0].pid != uint32(atou(t, r.stats["founder"])) {
		t.Fatalf("instances %v, want the founder alone", ins)
	}
	got := ins[0].mallocSizes()
	for _, size := range treeSizes {
		if founder := size == 111111 || size == 111112 || size == 777; founder != (got[size] > 0) {
			t.Errorf("founder: %d mallocs of %d", got[size], size)
		}
	}
	if len(r.msgs) != 1 || r.msgs[0].kind != 4 {
		t.Errorf("messages %+v, want the founder's start alone", r.msgs)
	}
}

// TestNoTrace: with ER_TRACE empty an instance has its directory and info, and no data files.
func TestNoTrace(t *testing.T) {
	r := runProcs(t, nil, []string{"ER_TRACE=", "ER_SAMPLE_SIGNAL=10"}, "sample", "10", "2")
	ins := instances(t, r.dir)
	if len(ins) != 1 || !slices.Equal(ins[0].files, []string{"info"}) {
		t.Fatalf("instances %v with files %v, want one with its info alone", ins, ins[0].files)
	}
	var kinds []uint32
	for _, m := range r.msgs {
		kinds = append(kinds, m.kind)
	}
	if !slices.Equal(kinds, []uint32{4, 1, 1}) {
		t.Errorf("message kinds %v, want started and two samples", kinds)
	}
}

// TestPauseSignal: the pause signal stops and resumes recording in the process; it starts paused
// with ER_PAUSED=1.
func TestPauseSignal(t *testing.T) {
	for _, c := range []struct {
		paused string
		want   map[uint64]int
		kinds  []uint32
	}{
		{"0", map[uint64]int{1001: 2, 1002: 0, 1003: 2}, []uint32{4, 2, 3}},
		{"1", map[uint64]int{1001: 0, 1002: 2, 1003: 0}, []uint32{4, 3, 2}},
	} {
		t.Run("ER_PAUSED="+c.paused, func(t *testing.T) {
			r := runProcs(t, nil, []string{"ER_TRACE=heap", "ER_PAUSE_SIGNAL=12", "ER_PAUSED=" + c.paused}, "pause", "12")
			ins := instances(t, r.dir)
			if len(ins) != 1 {
				t.Fatalf("instances %v", ins)
			}
			got := ins[0].mallocSizes()
			for size, n := range c.want {
				if got[size] != n {
					t.Errorf("%d mallocs of %d, want %d", got[size], size, n)
				}
			}
			var kinds []uint32
			for _, m := range r.msgs {
				kinds = append(kinds, m.kind)
				if m.kind != 4 && (m.arg != 12 || m.pid != ins[0].pid || m.tid != ins[0].pid || m.time < ins[0].start) {
					t.Errorf("message %+v: want signal 12 from %d's main thread", m, ins[0].pid)
				}
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("message kinds %v, want %v", kinds, c.kinds)
			}
		})
	}
}

// TestSampleSignal: each sample signal sends a kind-1 message, in time order.
func TestSampleSignal(t *testing.T) {
	r := runProcs(t, nil, []string{"ER_TRACE=heap", "ER_SAMPLE_SIGNAL=10"}, "sample", "10", "3")
	ins := instances(t, r.dir)
	if len(r.msgs) != 4 || len(ins) != 1 {
		t.Fatalf("%d messages, %d instances: %+v", len(r.msgs), len(ins), r.msgs)
	}
	last := ins[0].start
	for _, m := range r.msgs[1:] {
		if m.kind != 1 || m.arg != 10 || m.pid != ins[0].pid || m.time < last {
			t.Errorf("message %+v: want a sample by signal 10 from %d after %d", m, ins[0].pid, last)
		}
		last = m.time
	}
}

// TestProgramHandlers: the program's sigaction, signal, bsd_signal, sigset, sysv_signal and
// sigignore for the sample signal succeed and report its own settings, but the library's handler
// stays: the program's handler runs for the signal it raises itself (not one er collect passes on),
// once for each, after the sample; its SIG_IGN ignores it, and SIG_DFL does not end it.
func TestProgramHandlers(t *testing.T) {
	r := runProcs(t, nil, []string{"ER_SAMPLE_SIGNAL=10"}, "handlers", "10")
	for _, k := range []string{"old_default", "reported_h1", "kernel_not_program", "signal_prev_h1", "bsd_prev_h2",
		"sigset_prev_ign", "sysv_prev_h1", "reported_ign", "kernel_same", "other_kernel", "called_other"} {
		if r.stats[k] != "1" {
			t.Errorf("%s=%q, want 1", k, r.stats[k])
		}
	}
	for _, k := range []string{"sigaction_ret", "sigignore_ret", "called2"} {
		if r.stats[k] != "0" {
			t.Errorf("%s=%q, want 0", k, r.stats[k])
		}
	}
	if r.stats["called"] != "1" {
		t.Errorf("called=%q: the program's handler h1 ran that many times for the one signal it raised while h1 was its handler, want 1", r.stats["called"])
	}
	n := 0
	for _, m := range r.msgs {
		if m.kind == 1 {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d sample messages, want 3 (one per raise)\n%s", n, r.out)
	}
}

// TestControlPage: er's pause_all and stop words suppress events while set, read live.
func TestControlPage(t *testing.T) {
	lib, procs := built(t)
	dir := expDir(t, statePage(0, 0))
	openFIFO(t, dir)
	page := filepath.Join(dir, ".proc", "state")
	cmd := exec.Command(procs, "phases")
	cmd.Env = collectorEnv(lib, dir, "ER_TRACE=heap,io")
	stdin, lines := startPiped(t, cmd)
	// After phase i the page becomes: phase 2 paused by er, phase 3 stopped, phase 4 neither.
	next := [][2]uint32{{0, 1}, {1, 0}, {0, 0}}
	for i := 1; i <= 4; i++ {
		if !lines.Scan() || lines.Text() != fmt.Sprintf("phase %d", i) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("phase %d: read %q, %v", i, lines.Text(), lines.Err())
		}
		if i < 4 {
			writeWords(t, page, next[i-1][0], next[i-1][1])
			fmt.Fprintln(stdin)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ins := instances(t, dir)
	if len(ins) != 1 {
		t.Fatalf("instances %v", ins)
	}
	got := ins[0].mallocSizes()
	for size, n := range map[uint64]int{5001: 2, 5002: 0, 5003: 0, 5004: 2} {
		if got[size] != n {
			t.Errorf("%d mallocs of %d, want %d", got[size], size, n)
		}
	}
	var phases []int64
	for _, e := range ins[0].data.IOEvents() {
		if e.FD == 1 && e.Bytes == 8 {
			phases = append(phases, e.Ret)
		}
	}
	if len(phases) != 2 {
		t.Errorf("%d writes of a phase line recorded, want 2 (phases 1 and 4)", len(phases))
	}
}

// startPiped starts cmd with pipes to its standard input and from its standard output, read by lines.
func startPiped(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, bufio.NewScanner(stdout)
}

// writeWords sets the stop and pause_all words of the control page file, in place (er's mapping).
func writeWords(t *testing.T, page string, stop, pauseAll uint32) {
	t.Helper()
	f, err := os.OpenFile(page, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], stop)
	binary.LittleEndian.PutUint32(b[4:], pauseAll)
	if _, err := f.WriteAt(b[:], 8); err != nil {
		t.Fatal(err)
	}
}

// TestStatePageAtStart: a page with pause_all or stop set from the start records no event; a
// missing page, or one without the magic number, records them.
func TestStatePageAtStart(t *testing.T) {
	bad := statePage(1, 1)
	bad[0] = 0
	for _, c := range []struct {
		name  string
		state []byte
		want  int
	}{
		{"pause_all", statePage(0, 1), 0},
		{"stop", statePage(1, 0), 0},
		{"clear", statePage(0, 0), 3},
		{"missing", nil, 3},
		{"short", statePage(1, 1)[:8], 3},
		{"bad-magic", bad, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runProcs(t, c.state, []string{"ER_TRACE=heap"}, "leaf", "4321")
			ins := instances(t, r.dir)
			if len(ins) != 1 {
				t.Fatalf("instances %v", ins)
			}
			if got := ins[0].mallocSizes()[4321]; got != c.want {
				t.Errorf("%d mallocs of 4321, want %d", got, c.want)
			}
		})
	}
}

// TestForkStress forks 40 children, every other one from a new thread, while two threads
// allocate: each child's instance has exactly its own allocations, and the founder none of theirs.
func TestForkStress(t *testing.T) {
	const n = 40
	r := runProcs(t, nil, []string{"ER_TRACE=heap,sync", "ER_SYNC_THRESHOLD_NS=0"}, "forks", strconv.Itoa(n))
	ins := instances(t, r.dir)
	if len(ins) != n+1 {
		t.Fatalf("%d instances, want %d", len(ins), n+1)
	}
	founderPid := uint32(atou(t, r.stats["founder"]))
	var founderStart uint64
	for _, in := range ins {
		if in.how == "founder" {
			founderStart = in.start
		}
	}
	seen := map[uint64]bool{}
	for _, in := range ins {
		got := in.mallocSizes()
		if in.how == "founder" {
			if in.pid != founderPid || got[777] == 0 {
				t.Errorf("%v: pid %d, %d mallocs of 777", in, in.pid, got[777])
			}
		} else if in.how != "fork" || in.ppid != founderPid || in.parentStart != founderStart || got[777] != 0 {
			t.Errorf("%v: ppid %d, parent_start_ns %d, %d mallocs of 777", in, in.ppid, in.parentStart, got[777])
		}
		for size, k := range got {
			if size < 300000 || size >= 300000+n {
				continue
			}
			if in.how != "fork" || k != 2 || seen[size] {
				t.Errorf("%v: %d mallocs of %d", in, k, size)
			}
			seen[size] = true
		}
	}
	if len(seen) != n {
		t.Errorf("%d children's allocations found, want %d", len(seen), n)
	}
	if len(r.msgs) != n+1 {
		t.Errorf("%d messages, want %d", len(r.msgs), n+1)
	}
}

// TestFounderExec: the founder's process execs; the new image is an instance of its own (how=exec,
// its parent_start_ns the founder's), active only when descendants are followed.
func TestFounderExec(t *testing.T) {
	_, procs := built(t)
	for _, follow := range []string{"1", "0"} {
		t.Run("ER_FOLLOW="+follow, func(t *testing.T) {
			r := runProcs(t, nil, []string{"ER_TRACE=heap", "ER_FOLLOW=" + follow}, "reexec", procs, "8642")
			ins := instances(t, r.dir)
			var hows []string
			for _, in := range ins {
				hows = append(hows, in.how)
			}
			slices.Sort(hows)
			want := []string{"exec", "founder"}
			if follow == "0" {
				want = want[1:]
			}
			if !slices.Equal(hows, want) {
				t.Fatalf("instances %v, want %v", ins, want)
			}
			for _, in := range ins {
				got := in.mallocSizes()
				if in.how == "founder" && (got[8643] != 2 || got[8642] != 0) {
					t.Errorf("founder: mallocs %v", got)
				}
				if in.how == "exec" {
					if got[8642] != 3 || got[8643] != 0 || in.pid != ins[0].pid && in.pid != ins[1].pid {
						t.Errorf("exec'd image: mallocs %v", got)
					}
					for _, f := range ins {
						if f.how == "founder" && (f.pid != in.pid || in.parentStart != f.start) {
							t.Errorf("exec'd image %v: parent_start_ns %d, the founder %v started at %d", in, in.parentStart, f, f.start)
						}
					}
				}
			}
		})
	}
}

// TestEnding: once er has ended the collection (the control page's stop word is 2) or is gone (its
// FIFO has no reader: er was killed), the instance records nothing more, holds no file of the
// experiment (no mapping, no descriptor), and takes the library out of the environment: its fork
// child starts no instance, and the program it execs runs without the library. Before, the
// allocations after the end were recorded, the files stayed mapped, and the child and the exec'd
// image had the library's variables.
func TestEnding(t *testing.T) {
	lib, procs := built(t)
	for _, how := range []string{"ended", "gone"} {
		t.Run(how, func(t *testing.T) {
			dir := expDir(t, statePage(0, 0))
			if err := syscall.Mkfifo(filepath.Join(dir, ".control"), 0o600); err != nil {
				t.Fatal(err)
			}
			fifo, err := os.OpenFile(filepath.Join(dir, ".control"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fifo.Close()
			cmd := exec.Command(procs, "ending", procs, dir)
			cmd.Env = collectorEnv(lib, dir, "ER_TRACE=heap")
			stdin, lines := startPiped(t, cmd)
			if !lines.Scan() || lines.Text() != "ready" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("procs said %q, %v", lines.Text(), lines.Err())
			}
			if how == "ended" {
				writeWords(t, filepath.Join(dir, ".proc", "state"), 2, 0)
			} else {
				fifo.Close() // no reader: as when er is killed
			}
			fmt.Fprintln(stdin)
			var out strings.Builder
			for lines.Scan() {
				out.WriteString(lines.Text() + "\n")
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("procs: %v\n%s", err, out.String())
			}
			stats := parseStats(t, out.String())
			for _, who := range []string{"self", "child", "exec"} {
				for _, k := range []string{"maps", "fds", "preload", "er_vars"} {
					if v := stats[who+"_"+k]; v != "0" {
						t.Errorf("%s_%s=%s, want 0 (after the end)\n%s", who, k, v, out.String())
					}
				}
			}
			if stats["exec_library"] != "0" {
				t.Errorf("the program exec'd after the end has the collector library mapped\n%s", out.String())
			}
			ins := instances(t, dir)
			if len(ins) != 1 || ins[0].how != "founder" {
				t.Fatalf("instances %v, want the founder alone (none after the end)", ins)
			}
			got := ins[0].mallocSizes()
			for size, n := range map[uint64]int{6001: 2, 6002: 0, 6003: 0} {
				if got[size] != n {
					t.Errorf("%d mallocs of %d recorded, want %d", got[size], size, n)
				}
			}
		})
	}
}
