package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
)

// io adds an I/O event of process progPid with the stack of funcs (root first).
func (fk *fake) io(e experiment.IOEvent, funcs ...string) {
	e.Pid, e.Tid = progPid, progPid
	if e.Time == 0 {
		e.Time = int64(fk.d.IOTable().Len() + 1)
	}
	if len(funcs) > 0 {
		e.Stack = fk.stack(funcs...)
	}
	fk.d.AddIO([]experiment.IOEvent{e})
}

func ioFake() *fake {
	fk := heapFake()
	fk.io(experiment.IOEvent{Op: experiment.IOInherited, FD: 1, FD2: -1, File: "/dev/pts/0"})
	fk.io(experiment.IOEvent{Op: experiment.IOOpen, FD: -1, FD2: -1, Ret: 3, Dur: 6, File: "/etc/passwd"}, "main", "open")
	fk.io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 3, FD2: -1, Ret: 100, Bytes: 100, Dur: 92}, "main", "read")
	fk.io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 3, FD2: -1, Ret: 0, Bytes: 0, Dur: 8}, "main", "read")
	fk.io(experiment.IOEvent{Op: experiment.IODup2, FD: 3, FD2: 7, Ret: 7, Dur: 1}, "main", "open")
	fk.io(experiment.IOEvent{Op: experiment.IOClose, FD: 3, FD2: -1, Dur: 2}, "main", "close")
	fk.io(experiment.IOEvent{Op: experiment.IOReadOp, FD: 7, FD2: -1, Ret: 50, Bytes: 50, Dur: 10}, "main", "read")
	fk.io(experiment.IOEvent{Op: experiment.IOWriteOp, FD: 1, FD2: -1, Ret: 5, Bytes: 5, Dur: 6}, "main", "write")
	fk.io(experiment.IOEvent{Op: experiment.IOWriteOp, FD: 99, FD2: -1, Ret: -1, Err: 9, Dur: 1}, "main", "write")
	fk.io(experiment.IOEvent{Op: experiment.IOOpen, FD: -1, FD2: -1, Ret: -1, Err: 2, Dur: 3, File: "/nonexistent"}, "main", "open")
	fk.io(experiment.IOEvent{Op: experiment.IOPipe, FD: 4, FD2: 5, Dur: 4}, "main", "open")
	fk.io(experiment.IOEvent{Op: experiment.IOWriteOp, FD: 5, FD2: -1, Ret: 9000, Bytes: 9000, Dur: 20}, "main", "write")
	return fk
}

func TestIOMetrics(t *testing.T) {
	p := analyze(t, ioFake().d)
	var names []string
	for _, m := range p.Metrics {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, " "); got != "ioreadtime ioreadbytes ioreadcnt iowritetime iowritebytes iowritecnt ioothertime ioothercnt ioerrortime ioerrorcnt" {
		t.Fatalf("metrics %s", got)
	}
	want := map[string]int64{"ioreadtime": 110, "ioreadbytes": 150, "ioreadcnt": 3, "iowritetime": 26, "iowritebytes": 9005,
		"iowritecnt": 2, "ioothertime": 13, "ioothercnt": 4, "ioerrortime": 4, "ioerrorcnt": 2}
	for name, w := range want {
		if got := total(t, p, name); got != w {
			t.Errorf("%s = %d, want %d", name, got, w)
		}
	}
	// The failed write counts only as an error, at write.
	if got := heapMetric(t, p, "write", "ioerrorcnt"); got != [2]int64{1, 1} {
		t.Errorf("write errors %v", got)
	}
	if got := heapMetric(t, p, "main", "iowritetime"); got != [2]int64{0, 26} {
		t.Errorf("main write time %v", got)
	}
	// The inherited descriptor is no event of a stack.
	if p.Events != 11 || p.DataEvents[DataIO] != 12 {
		t.Errorf("events %d, I/O events %d", p.Events, p.DataEvents[DataIO])
	}
	st := p.IO
	if st.Read.Count != 3 || st.Read.Bytes != 150 || st.Read.Min != 0 || st.Read.Max != 100 || st.Read.Longest != 92 || st.Read.Time != 110 ||
		st.Write.Count != 2 || st.Write.Hist[0] != 1 || st.Write.Hist[2] != 1 || st.Other.Count != 4 || st.Other.Time != 13 ||
		st.Error.Count != 2 || st.Error.Time != 4 || st.Events != 12 {
		t.Errorf("stats %+v", st)
	}
	checkIdentities(t, p)
}

// TestIOInterfaces: the calls are counted by interface, system-call wrappers and stdio, failed
// ones too; the kernel's count noted at exit is read, and a process without it is counted as such.
func TestIOInterfaces(t *testing.T) {
	fk := ioFake()
	fk.io(experiment.IOEvent{Op: experiment.IOFopen, FD: 6, FD2: -1, Ret: 6, Dur: 3, File: "/tmp/out"}, "main", "open")
	for range 3 {
		fk.io(experiment.IOEvent{Op: experiment.IOFprintf, FD: 6, FD2: -1, Ret: 10, Bytes: 10, Dur: 1}, "main", "write")
	}
	fk.io(experiment.IOEvent{Op: experiment.IOFgets, FD: 6, FD2: -1, Ret: 0, Err: 5, Dur: 1}, "main", "read")
	fk.d.Log.Settings = append(fk.d.Log.Settings, experiment.Setting{Name: "collector.io_syscalls", Value: "4 5"})
	p := analyze(t, fk.d)
	st := p.IO
	if want := (IOCalls{Reads: 3, Writes: 3, Other: 5, Failed: 2}); st.Syscall != want {
		t.Errorf("system calls %+v, want %+v", st.Syscall, want)
	}
	if want := (IOCalls{Reads: 1, Writes: 3, Other: 1, Failed: 1}); st.Stdio != want {
		t.Errorf("stdio calls %+v, want %+v", st.Stdio, want)
	}
	if st.Kernel != (IOCalls{Reads: 4, Writes: 5}) || st.KernelProcs != 1 || st.Procs != 1 || st.Syscall.Total() != 11 {
		t.Errorf("kernel %+v in %d of %d processes", st.Kernel, st.KernelProcs, st.Procs)
	}
	if !IsStdio(experiment.IOPutc) || IsStdio(experiment.IOPipe2) || IsStdio(experiment.IOInherited) {
		t.Error("IsStdio")
	}
	// Without the note (a process that ended by _exit or a signal).
	p = analyze(t, ioFake().d)
	if p.IO.KernelProcs != 0 || p.IO.Procs != 1 || p.IO.Kernel != (IOCalls{}) {
		t.Errorf("no note: kernel %+v in %d of %d processes", p.IO.Kernel, p.IO.KernelProcs, p.IO.Procs)
	}
}

func groupString(p *Profile, gs []IOGroup, metric string) string {
	m := MetricIndex(p.Metrics, metric)
	var parts []string
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%s/%d=%d", g.Name, g.FD, g.Values[m]))
	}
	return strings.Join(parts, " ")
}

func TestIOFiles(t *testing.T) {
	fk := ioFake()
	names, fds := IOEventFiles(fk.d)
	wantNames := []string{"/dev/pts/0", "/etc/passwd", "/etc/passwd", "/etc/passwd", "/etc/passwd", "/etc/passwd", "/etc/passwd",
		"/dev/pts/0", UnknownFileName, "/nonexistent", PipeName, PipeName}
	if !slices.Equal(names, wantNames) {
		t.Errorf("names %q", names)
	}
	if want := []int32{1, 3, 3, 3, 3, 3, 7, 1, 99, -1, 4, 5}; !slices.Equal(fds, want) {
		t.Errorf("fds %v", fds)
	}
	p := analyze(t, fk.d)
	if got := groupString(p, p.IOFiles, "ioothercnt"); got != "/etc/passwd/-1=3 /dev/pts/0/-1=0 <unknown file>/-1=0 /nonexistent/-1=0 <pipe>/-1=1" {
		t.Errorf("files %s", got)
	}
	if got := groupString(p, p.IODescriptors, "ioreadbytes"); got != "/etc/passwd/3=100 /etc/passwd/7=50 /dev/pts/0/1=0 <unknown file>/99=0 /nonexistent/-1=0 <pipe>/4=0 <pipe>/5=0" {
		t.Errorf("descriptors %s", got)
	}
	// Descriptors 0 to 2 without a record of their own are the standard streams; a closed
	// descriptor is unknown again; each process has its own descriptors. The calls are in time
	// order in their table (the close before the second read).
	d := &experiment.Data{}
	d.AddIO([]experiment.IOEvent{
		{Time: 1, Pid: 1, Op: experiment.IOWriteOp, FD: 2},
		{Time: 2, Pid: 1, Op: experiment.IOOpen, FD: 5, File: "/a"},
		{Time: 3, Pid: 2, Op: experiment.IOReadOp, FD: 5},
		{Time: 5, Pid: 1, Op: experiment.IOReadOp, FD: 5},
		{Time: 4, Pid: 1, Op: experiment.IOClose, FD: 5},
		{Time: 6, Pid: 1, Op: experiment.IOFopen, FD: 6, File: "/b"},
		{Time: 7, Pid: 1, Op: experiment.IOFwrite, FD: 6},
		{Time: 8, Pid: 1, Op: experiment.IODup, FD: 6, Ret: 8},
		{Time: 9, Pid: 1, Op: experiment.IOReadOp, FD: 8},
	})
	names, _ = IOEventFiles(d)
	if want := []string{"<stderr>", "/a", UnknownFileName, "/a", UnknownFileName, "/b", "/b", "/b", "/b"}; !slices.Equal(names, want) {
		t.Errorf("names %q", names)
	}
}

func TestSyncMetrics(t *testing.T) {
	fk := heapFake()
	var waits []experiment.SyncEvent
	for i, w := range []int64{1000, 2500, 400} {
		waits = append(waits, experiment.SyncEvent{Time: int64(i), Pid: progPid, Tid: progPid, Op: experiment.SyncMutexLock, Wait: w,
			Stack: fk.stack("main", "good", "pthread_mutex_lock")})
	}
	waits = append(waits, experiment.SyncEvent{Time: 9, Pid: progPid, Tid: progPid, Op: experiment.SyncJoin, Wait: 7000,
		Stack: fk.stack("main", "pthread_join")})
	fk.d.AddSync(waits)
	p := analyze(t, fk.d)
	if len(p.Metrics) != 2 || p.Metrics[0].Name != "sync" || !p.Metrics[0].Time || p.Metrics[1].Name != "syncn" || p.Metrics[1].Time {
		t.Fatalf("metrics %v", p.Metrics)
	}
	if !slices.Equal(p.Total, []int64{10900, 4}) {
		t.Errorf("totals %v", p.Total)
	}
	if got := heapMetric(t, p, "good", "sync"); got != [2]int64{0, 3900} {
		t.Errorf("good %v", got)
	}
	if got := heapMetric(t, p, "pthread_join", "syncn"); got != [2]int64{1, 1} {
		t.Errorf("pthread_join %v", got)
	}
	checkIdentities(t, p)
}

func TestMetricsFor(t *testing.T) {
	names := func(ms []Metric) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return strings.Join(s, " ")
	}
	empty := &experiment.Data{}
	if got := names(MetricsFor([]*experiment.Data{empty})); got != "totalcpu user system" {
		t.Errorf("no data: %s", got)
	}
	all := &experiment.Data{}
	all.AddClock(make([]experiment.ClockSample, 1))
	all.AddHeap(make([]experiment.HeapEvent, 1))
	all.AddIO(make([]experiment.IOEvent, 1))
	all.AddSync(make([]experiment.SyncEvent, 1))
	ms := MetricsFor([]*experiment.Data{empty, all})
	if len(ms) != 3+4+2+10 || ms[0].Name != "totalcpu" || ms[3].Name != "heapallocbytes" || ms[7].Name != "sync" || ms[9].Name != "ioreadtime" {
		t.Errorf("all: %s", names(ms))
	}
	// Settings: clock profiling on without a sample, and tracing switched on without an event.
	set := &experiment.Data{Log: experiment.Log{Settings: []experiment.Setting{{Name: "clock_interval_ns", Value: "10007000"},
		{Name: "io_tracing", Value: "on"}, {Name: "heap_tracing", Value: "off"}}}}
	if got := names(MetricsFor([]*experiment.Data{set})); got != "totalcpu user system ioreadtime ioreadbytes ioreadcnt iowritetime iowritebytes iowritecnt ioothertime ioothercnt ioerrortime ioerrorcnt" {
		t.Errorf("settings: %s", got)
	}
	off := &experiment.Data{Log: experiment.Log{Settings: []experiment.Setting{
		{Name: "clock_profiling", Value: "off"}, {Name: "clock_interval_ns", Value: "10007000"}}}}
	off.AddSync(make([]experiment.SyncEvent, 1))
	if got := names(MetricsFor([]*experiment.Data{off})); got != "sync syncn" {
		t.Errorf("clock off: %s", got)
	}
	if DataHeap.String() != "heap-tracing" || DataIO.String() != "I/O-tracing" {
		t.Error("DataKind names")
	}
}
