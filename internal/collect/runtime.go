package collect

import (
	"er/internal/perfabi"
	"er/internal/perfevent"
	"golang.org/x/sys/unix"
)

// runtimeCounts are the threads' CPU time as the scheduler reports it to the trace event
// sched:sched_stat_runtime, counted in the clock event's group. It never holds steal time, but it misses
// what the scheduler accounts from another CPU (a wakeup there updates the running thread's time) and
// each thread's time after its last tick or switch: 0.1% of a thread that reads its own CPU clock often,
// 12% of threads that never do (8 threads sharing 2 CPUs). So a thread's own CPU time lies between its
// runtime count r and its task clock count c (which holds steal time), and for the founder er knows the
// sum: scaleToRusage places each thread at the same fraction of its [r, c] range.
type runtimeCounts struct {
	hooks
	s       *Session
	events  map[uint64]int             // the counter's event ids: its Read records carry them
	threads map[*proc]map[uint32]int64 // counts reported by exited threads
	sum     int64                      // their sum
	orphan  int64                      // counts reported under the founder's main thread
	total   int64                      // the counter's total count, read at the end; -1 when unread
}

// runtimeSibling returns the runtime counter, to open in the clock event's group, or false where the
// trace event's id cannot be read (tracefs is often readable by root only).
func runtimeSibling() (perfevent.Sibling, bool) {
	id, err := perfevent.TracepointID("sched", "sched_stat_runtime")
	if err != nil {
		return perfevent.Sibling{}, false
	}
	return perfevent.Sibling{Type: unix.PERF_TYPE_TRACEPOINT, Config: id}, true
}

// newRuntimeCounts starts the runtime counts of the clock events g, opened with runtimeSibling as their
// first sibling.
func newRuntimeCounts(s *Session, g *perfevent.Group) *runtimeCounts {
	ids := map[uint64]int{}
	for id, i := range g.SiblingIDs() {
		if i == 0 {
			ids[id] = i
		}
	}
	return &runtimeCounts{s: s, events: ids, total: -1}
}

// isRuntime reports whether r is a runtime count.
func (rc *runtimeCounts) isRuntime(r *perfabi.Read) bool {
	if rc == nil {
		return false
	}
	_, ok := rc.events[r.ID]
	return ok
}

// exitCount takes a runtime count, reported at a thread's exit.
func (rc *runtimeCounts) exitCount(r *perfabi.Read) bool {
	if !rc.isRuntime(r) {
		return false
	}
	rc.add(rc.s, r)
	return true
}

// closing reads the counter's total.
func (rc *runtimeCounts) closing(g *perfevent.Group) { rc.readTotal(g) }

// add records a count the counter reported when a thread exited.
func (rc *runtimeCounts) add(s *Session, r *perfabi.Read) {
	rc.sum += int64(r.Value)
	if r.Pid == uint32(s.pid) && r.Tid == uint32(s.pid) {
		rc.orphan += int64(r.Value) // as the task clock's (see Session.orphanRead)
		return
	}
	p := s.imageAt(r.Pid, s.rel(r.Time))
	if p == nil {
		return
	}
	if rc.threads == nil {
		rc.threads = map[*proc]map[uint32]int64{}
	}
	if rc.threads[p] == nil {
		rc.threads[p] = map[uint32]int64{}
	}
	rc.threads[p][r.Tid] += int64(r.Value)
}

// readTotal reads the counter's total before the events are closed.
func (rc *runtimeCounts) readTotal(g *perfevent.Group) {
	if rc == nil {
		return
	}
	if n, err := g.SiblingCounts(); err == nil && len(n) >= 1 {
		rc.total = int64(n[0])
	}
}

// lows returns the runtime counts of the threads of each process, the lower bounds of their CPU time,
// with the founder's main thread's and the one task's that reported none placed as assignOrphanRead
// placed their clock counts (the total less what exited threads reported, and the count reported
// under the founder's main thread); nil when unknown.
func (rc *runtimeCounts) lows(s *Session) map[*proc]map[uint32]int64 {
	if rc == nil || rc.total < 0 || s.cmd == nil {
		return nil
	}
	low := map[*proc]map[uint32]int64{s.founder: {}}
	for p, tids := range rc.threads {
		if low[p] == nil {
			low[p] = map[uint32]int64{}
		}
		for tid, n := range tids {
			low[p][tid] = n
		}
	}
	// The orphan and the rest of the total are placed as assignOrphanRead placed the clock's.
	main := uint32(s.pid)
	rest := rc.total - rc.sum
	if rc.orphan == 0 {
		low[s.founder][main] += rest
		return low
	}
	type task struct {
		p   *proc
		tid uint32
	}
	var missing []task
	for p, tids := range s.threadCPU {
		for tid := range tids {
			if _, ok := low[p][tid]; !ok && (p != s.founder || tid != main) {
				missing = append(missing, task{p, tid})
			}
		}
	}
	if len(missing) != 1 {
		low[s.founder][main] += rest
		return low
	}
	m := missing[0]
	if low[m.p] == nil {
		low[m.p] = map[uint32]int64{}
	}
	if s.orphanToTask {
		low[s.founder][main] += rest
		low[m.p][m.tid] = rc.orphan
	} else {
		low[s.founder][main] += rc.orphan
		low[m.p][m.tid] = rest
	}
	return low
}
