package collect

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"er/internal/experiment"
)

// proc is one process image of the target's tree: the founder, a process a fork (or vfork,
// or clone without CLONE_THREAD) created, or the new image an exec started in a process. Each
// followed image has an experiment of its own: the founder's, or a subexperiment inside it named
// by lineage, as seed 003 says: _f3.er for the third child its creator forked, _f3_x1.er for
// the image that child's first exec started.
type proc struct {
	pid, ppid   uint32
	lineage     string // "" for the founder; "_f3_x1" for a descendant
	parent      *proc
	start       int64 // ns since the session start when the image began (the fork or the exec)
	exited      bool
	exitTime    int64
	forks       int // children forked so far: the next is _f<forks+1>
	execs       int // images exec started so far
	prog        string
	args        []string           // the command line, as its experiment's log records it
	w           *experiment.Writer // nil when the image is not followed (-F)
	closed      bool               // w was closed
	perfMapRead bool               // its process's perf map was read into w
	javaWritten bool               // its JAVA_CLASSES file and Java map.xml records were written
	jitdumpPath string             // the jitdump file its JIT mapped (jit-PID.dump), "" where none
	jitdumpRead bool               // it was read into the experiment's dyntext
	sampleNo    uint32             // sample points recorded in its experiment
	stackBuf    experiment.Stack
	mapped      map[mapKey]bool

	execed     bool      // exec started the image
	exec       execFacts // what er read of it at its exec
	unrecorded bool      // the kernel sent nothing of it after its exec (warnUnrecordedExecs)

	seccomp     *seccompNote // it installed a seccomp filter that denies the collector library
	seccompSaid bool         // its experiment says that it runs under one (seccompInherited)

	initPaused bool     // recording was paused when the image began (-y)
	toggles    []toggle // pause and resume by signal, in time order

	gone      bool      // its process exited (not replaced by exec)
	replaced  bool      // exec replaced it: the process's usage after that is the new image's
	endPoint  bool      // its "end" sample point is recorded
	last      procUsage // the usage recorded at its last sample point
	lastPoint int64     // the time of that point
	// The periods of its clock samples in user and in kernel mode after its last sample point.
	tailUser, tailSys int64
	sampled           map[uint32]int64 // the periods of its clock samples, by thread
	stolen            map[uint32]int64 // the steal time taken out of its clock samples, by thread
}

// priorSampled is the period of the clock samples of thread tid in the images that exec replaced
// before image p in p's process. The kernel reports a thread's count once, at its exit, into the image
// it ends in, and that count holds the time it ran in those images too: a forked child sampled before
// it exec'd cc1 had its 10 ms sample in its first image while cc1's count, weighted onto cc1's samples,
// held it again (make -j2 at -p on 103.7% beside two CPU hogs); one with no sample after the exec lost
// its count but that sample.
func (p *proc) priorSampled(tid uint32) int64 {
	var ns int64
	for q := p; q.execed && q.parent != nil; q = q.parent {
		ns += q.parent.sampled[tid]
	}
	return ns
}

// ownCount is thread tid's count in image p less what its samples in the images before it (exec)
// stand for: the CPU time that p's own samples, or its <Unsampled> record, are to show.
func (s *Session) ownCount(p *proc, tid uint32) int64 {
	return s.threadCPU[p][tid] - p.priorSampled(tid)
}

type toggle struct {
	t      int64
	paused bool
}

type mapKey struct {
	start uint64
	path  string
}

// pausedAt reports whether recording in the image was paused at time t.
func (p *proc) pausedAt(t int64) bool {
	paused := p.initPaused
	for _, tg := range p.toggles {
		if tg.t > t {
			break
		}
		paused = tg.paused
	}
	return paused
}

// addToggle records a pause or resume at time t, keeping the list in time order.
func (p *proc) addToggle(t int64, paused bool) {
	i := sort.Search(len(p.toggles), func(i int) bool { return p.toggles[i].t > t })
	p.toggles = append(p.toggles, toggle{})
	copy(p.toggles[i+1:], p.toggles[i:])
	p.toggles[i] = toggle{t, paused}
}

// open reports whether the image's experiment takes records.
func (p *proc) open() bool { return p != nil && p.w != nil && !p.closed }

// newImage adds the image of process pid that began at time t, with parent as its creator (the
// forking process, or the image the exec replaced), and opens its subexperiment when -F follows
// it. code is 'f' or 'x'.
func (s *Session) newImage(pid, ppid uint32, parent *proc, code byte, t int64, prog string) *proc {
	var n int
	if code == 'x' {
		parent.execs++
		n = parent.execs
	} else {
		parent.forks++
		n = parent.forks
	}
	p := &proc{pid: pid, ppid: ppid, parent: parent, start: t, prog: prog,
		lineage: parent.lineage + "_" + string(code) + strconv.Itoa(n)}
	if code == 'x' {
		p.initPaused = s.spec.StartPaused && s.spec.PauseSignal != 0
	} else {
		p.initPaused = parent.pausedAt(t)
	}
	s.images = append(s.images, p)
	s.cur[pid] = p
	if !s.spec.Following(prog, p.lineage) {
		return p
	}
	log := s.baseLog
	log.Pid, log.Ppid, log.Lineage = pid, ppid, p.lineage
	if code == 'x' {
		log.Command = processArgs(pid, prog)
	} else {
		log.Command = parent.command(s)
	}
	p.args = log.Command
	log.KernelStacks = s.kernel
	log.Settings = append([]experiment.Setting{}, s.baseLog.Settings...)
	log.Events = nil
	dir := filepath.Join(s.dir, p.lineage+".er")
	w, err := experiment.Create(dir, log)
	if err != nil {
		s.founder.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: pid,
			Text: fmt.Sprintf("cannot create the subexperiment %s: %v; the process is not recorded", filepath.Base(dir), err)})
		if isDiskFull(err.Error()) {
			s.writeFailed(err)
		}
		return p
	}
	p.w = w
	p.mapped = map[mapKey]bool{}
	how := "forked by"
	if code == 'x' {
		how = "exec in"
	}
	w.Event(experiment.Event{Time: t, Kind: "start", Pid: pid,
		Text: fmt.Sprintf("%s (%s process %d, %s)", strings.Join(log.Command, " "), how, parent.pid, nameOr(parent.lineage, "founder"))})
	if s.kernel {
		w.AddMapping(experiment.Mapping{Pid: 0, Start: experiment.KernelBase, End: ^uint64(0), Path: "[kernel]", UnloadTime: -1})
	}
	s.subexperiments++
	if !s.recording {
		w.Event(experiment.Event{Time: t, Kind: "limit", Text: "recording had stopped before this process began"})
	}
	s.startPoint(p, t, code)
	s.seccompInherited(p)
	return p
}

// startPoint records the first sample point of a new image. A forked child's counts start at zero
// at the fork, with one thread and its parent's memory (the resident size of the parent's last
// point): er reads nothing of it in /proc (each file read there is work for the kernel when the
// process is reaped: procPath). An exec image starts where the image it replaced ended, read from
// /proc when er handles the exec record, at the same reading as that image's end (so the two add up
// to the process's usage); when the process is gone before er reads it (a vfork child that exec'd
// and exited at once), where the image it replaced last had a point: the usage between is then the
// new image's.
func (s *Session) startPoint(p *proc, t int64, code byte) {
	prev := p.parent
	if code == 'f' {
		s.writeOverview(p, t, "start", procUsage{threads: 1, rssBytes: prev.last.rssBytes})
		return
	}
	execPoint := prev.pid == p.pid && prev.sampleNo > 0
	if execPoint && prev.lastPoint == t {
		s.writeOverview(p, t, "start", prev.last)
		return
	}
	u, err := readUsage(int(p.pid))
	switch {
	case err != nil && execPoint:
		u = prev.last
	case err != nil:
		return
	}
	s.writeOverview(p, t, "start", u)
}

func nameOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// processArgs reads the arguments of process pid, which exec has just started.
func processArgs(pid uint32, prog string) []string {
	if data, err := os.ReadFile(procPath(pid, 0, "cmdline")); err == nil && len(data) > 0 {
		return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	}
	return []string{prog}
}

// command is the image's program and arguments; a forked child has its parent's.
func (p *proc) command(s *Session) []string {
	if p.args == nil && p == s.founder {
		return s.spec.Target
	}
	return p.args
}

// progName is the program an image runs: the base name of its executable, or comm when the
// process is gone.
func progName(pid uint32, comm string) string {
	if exe, err := os.Readlink(procPath(pid, 0, "exe")); err == nil {
		return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	}
	return comm
}

// imageAt is the image of process pid that was running at time t (ns since the session start).
func (s *Session) imageAt(pid uint32, t int64) *proc {
	var best *proc
	for _, p := range s.images {
		if p.pid == pid && p.start <= t && (best == nil || p.start >= best.start) {
			best = p
		}
	}
	return best
}

// imageEnded records the end of an image at time t: its process exited, or exec replaced it.
func (s *Session) imageEnded(p *proc, t int64, exited bool) {
	if p == nil || p.exited {
		return
	}
	p.exited, p.exitTime = true, t
	if !p.open() {
		return
	}
	p.w.ProcessExit(p.pid, t)
	if !exited {
		p.replaced = true
		if u, err := readUsage(int(p.pid)); err == nil && s.stoppedAt == 0 {
			// The usage of the process so far, where the new image's start point takes it up: what
			// the process used before its exec is this image's, and not the new image's.
			s.writeOverview(p, t, "exec", u)
		}
	}
	if p == s.founder {
		return // the founder's end is recorded from its wait status
	}
	text := "exec started a new image"
	if exited {
		text = "exited"
		p.gone = true
		if u, err := readUsage(int(p.pid)); err == nil && s.stoppedAt == 0 { // a zombie not yet reaped still has its usage
			s.writeOverview(p, t, "end", u)
		}
	}
	p.w.Event(experiment.Event{Time: t, Kind: "exit", Pid: p.pid, Text: text})
	p.w.UpdateLog(func(l *experiment.Log) { l.EndTime, l.Exited = t, exited })
}

func (s *Session) closeImage(p *proc) {
	if !p.open() {
		return
	}
	s.countedEnd(p)
	if p != s.founder && s.spec.Clock && s.events != nil {
		s.writeThreadCount(p) // its threads have all exited and reported their counts
	}
	if s.spec.Clock && s.events != nil {
		s.recordUnsampled(p)
	}
	if prior, err := p.w.Err(), p.w.Close(); err != nil && (err != prior || s.writeErr == nil) {
		s.founder.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: fmt.Sprintf("writing %s: %v", filepath.Base(p.w.Dir()), err)})
	}
	p.closed = true
}

// liveFollowed counts the followed images whose processes are still running. An image whose
// process is gone without an exit record (a lost record) is ended here.
func (s *Session) liveFollowed(now int64) int {
	n := 0
	for _, p := range s.cur {
		if p.exited || p.w == nil {
			continue
		}
		if _, err := os.Stat(procPath(p.pid, 0, "")); err != nil {
			s.imageEnded(p, now, true)
			continue
		}
		n++
	}
	return n
}

// forEachOpen calls f for every image whose experiment is open.
func (s *Session) forEachOpen(f func(p *proc)) {
	for _, p := range s.images {
		if p.open() {
			f(p)
		}
	}
}

// countedEnd records the end sample point of a descendant whose parent reaped it before er read its
// usage (make and gcc wait for their children at once; er reads /proc in batches): without it the
// image's usage would stop at its last sample point, up to a whole sampling period early, or at its
// start. The kernel's count of the CPU time of its threads is the process's CPU time to its end (the
// count of an image that exec began holds what its process used before the exec, as /proc does): the
// point takes it, the part after the last point split between user and system time as the image's
// clock samples after that point are (or as the usage before it, without such samples). Faults and
// context switches after the last point are not known, and stay as they were.
func (s *Session) countedEnd(p *proc) {
	if !s.needsCountedEnd(p) {
		return
	}
	counted := s.countedOf(p)
	if counted <= 0 {
		return
	}
	u := p.last
	u.rssBytes, u.threads = 0, 0 // the process is gone
	if rest := counted - u.userNS - u.systemNS; rest > 0 {
		user, sys := p.tailUser, p.tailSys
		if user+sys == 0 {
			user, sys = u.userNS, u.systemNS
		}
		if user+sys == 0 {
			user = 1
		}
		toUser := int64(float64(rest) * float64(user) / float64(user+sys))
		u.userNS += toUser
		u.systemNS += rest - toUser
	}
	s.writeOverview(p, p.exitTime, "end", u)
}

// needsCountedEnd reports whether image p's end point is still to come from its kernel count
// (countedEnd).
func (s *Session) needsCountedEnd(p *proc) bool {
	return p != s.founder && p.gone && !p.endPoint && s.stoppedAt == 0
}

// countedOf is the kernel's count of the CPU time of the process of image p to its end: its
// threads' counts over p and the images before it that exec replaced in the same process.
func (s *Session) countedOf(p *proc) int64 {
	var counted int64
	for q := p; q != nil; q = q.parent {
		for _, ns := range s.threadCPU[q] {
			counted += ns
		}
		if !q.execed {
			break // q.parent is another process (q was forked), or q is the founder
		}
	}
	return counted
}

// closeEarly reports whether the experiment of image p, whose process ended a while ago, may be
// closed before the end of the collection: not while its end point waits for a count that the
// kernel has not reported yet (it may come at the founder's exit, under the founder's main thread,
// and go to p then: assignOrphanRead).
func (s *Session) closeEarly(p *proc) bool {
	return !s.needsCountedEnd(p) || s.countedOf(p) > 0
}
