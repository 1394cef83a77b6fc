package experiment

import (
	"fmt"

	"er/internal/events"
)

// OpenMP: the collector library's records of an OpenMP program's parallel regions and of its
// threads' time in the runtime's states (preload/c/omp.c), read from the omptrace file into two
// side tables (no kind claims their rows as events): OMPSchema, the states, and OMPRegionSchema,
// the regions. What a clock sample's state and region are is the analysis's to derive from them
// (internal/analysis, openmp.go).

// OMPState is an OpenMP thread state (er_omp_state of trace.h).
type OMPState uint8

var ompStateNames = [...]string{OMPWork: "work", OMPOverhead: "overhead", OMPIdle: "idle", OMPReduction: "reduction",
	OMPImplicitBarrier: "implicit_barrier", OMPExplicitBarrier: "explicit_barrier", OMPLockWait: "lock_wait",
	OMPCriticalWait: "critical_section_wait", OMPOrderedWait: "ordered_section_wait", OMPAtomicWait: "atomic_section_wait"}

// NumOMPStates is one more than the largest state.
const NumOMPStates = len(ompStateNames)

// String is the state's name in the <OMP-*> pseudo-functions: "implicit_barrier".
func (s OMPState) String() string {
	if int(s) < len(ompStateNames) && ompStateNames[s] != "" {
		return ompStateNames[s]
	}
	return fmt.Sprintf("state %d", uint8(s))
}

// OMPSchema is the table of OpenMP states: a row is one thread's time in one state (the header's
// time is its end, its duration the time in it), in the region it names.
var OMPSchema = &events.Schema{Name: "omp", File: OMPTraceFile, Columns: []events.Column{
	{Name: "ompstate", Title: "the OpenMP state", Type: events.U8},
	{Name: "ompregion", Title: "the parallel region (its id in the process; 0: none)", Type: events.I64},
	{Name: "omptask", Title: "the explicit task whose run the row is (its id in the process; 0: none)", Type: events.I64},
}}

// The columns of OMPSchema.
const (
	OMPColState = iota
	OMPColRegion
	OMPColTask
)

// OMPRegionSchema is the table of parallel regions: a row is one region, its header's thread its
// master, its time the end, its duration from the master's call to the return, its stack the
// master's at the call (frame 0 the runtime's entry point).
var OMPRegionSchema = &events.Schema{Name: "ompregion", File: OMPTraceFile, Columns: []events.Column{
	{Name: "regid", Title: "the region's id in its process", Type: events.I64},
	{Name: "regparent", Title: "the region its master was in (0: none)", Type: events.I64},
	{Name: "regfn", Title: "the construct: its outlined function's address, or the return address of the runtime's call in the function that holds it", Type: events.U64},
	{Name: "regteam", Title: "the threads of its team", Type: events.U32},
}}

// The columns of OMPRegionSchema.
const (
	RegColID = iota
	RegColParent
	RegColFn
	RegColTeam
)

// OMPTaskSchema is the table of explicit tasks: a row is one task, its header's time when it was
// created, its thread and stack its creator's there.
var OMPTaskSchema = &events.Schema{Name: "omptask", File: OMPTraceFile, Columns: []events.Column{
	{Name: "taskid", Title: "the task's id in its process", Type: events.I64},
	{Name: "taskregion", Title: "the parallel region its creator was in (0: none)", Type: events.I64},
	{Name: "taskfn", Title: "the construct: the task's outlined function, or the return address of the runtime's call that created it", Type: events.U64},
}}

// The columns of OMPTaskSchema.
const (
	TaskColID = iota
	TaskColRegion
	TaskColFn
)

// OMPTable returns d's OpenMP states (nil when it has none); OMPRegions its parallel regions,
// OMPTasks its explicit tasks.
func (d *Data) OMPTable() *events.Table   { return d.Tables[OMPSchema.Name] }
func (d *Data) OMPRegions() *events.Table { return d.Tables[OMPRegionSchema.Name] }
func (d *Data) OMPTasks() *events.Table   { return d.Tables[OMPTaskSchema.Name] }

// readOMP reads the OpenMP trace tf into d's two tables.
func (tr *traceReader) readOMP(tf *traceScan, sk *skipped) (string, error) {
	h := &tf.h
	st, rt, kt := tr.d.table(OMPSchema), tr.d.table(OMPRegionSchema), tr.d.table(OMPTaskSchema)
	st.Durs()
	rt.Durs()
	return tf.scan(func(r *traceRec) {
		size := sizeofRec + len(r.body)
		if r.time < h.startNS || r.time-h.startNS > 1<<62 {
			sk.out(r.off, "time %d ns, before the collector library started at %d ns", r.time, h.startNS)
			return
		}
		switch r.kind {
		case recOMPState, recOMPTaskRun:
			if size < sizeofRecOMPState {
				sk.malformed++
				return
			}
			start := r.u64(recOMPStart)
			if start < h.startNS || start > r.time || OMPState(r.aux) == 0 || int(r.aux) >= NumOMPStates {
				sk.malformed++
				return
			}
			region, task := int64(r.u64(recOMPStateRegion)), int64(0)
			if r.kind == recOMPTaskRun {
				region, task = 0, region
			}
			st.AddHeader(tr.t(r.time), int64(r.time-start), 1, h.pid, r.tid, -1, 0)
			st.Cols[OMPColState].Append(int64(r.aux))
			st.Cols[OMPColRegion].Append(region)
			st.Cols[OMPColTask].Append(task)
		case recOMPTask:
			if size < sizeofRecOMPTask {
				sk.malformed++
				return
			}
			kt.AddHeader(tr.t(r.time), 0, 1, h.pid, r.tid, -1, r.u32(recOMPTaskStack))
			kt.Cols[TaskColID].Append(int64(r.u64(recOMPTaskID)))
			kt.Cols[TaskColRegion].Append(int64(r.u64(recOMPTaskRegion)))
			kt.Cols[TaskColFn].Append(int64(r.u64(recOMPTaskFn)))
		case recOMPRegion:
			if size < sizeofRecOMPRegion {
				sk.malformed++
				return
			}
			start := r.u64(recOMPRegionStart)
			if start < h.startNS || start > r.time {
				sk.malformed++
				return
			}
			rt.AddHeader(tr.t(r.time), int64(r.time-start), 1, h.pid, r.tid, -1, r.u32(recOMPRegionStack))
			rt.Cols[RegColID].Append(int64(r.u64(recOMPRegionID)))
			rt.Cols[RegColParent].Append(int64(r.u64(recOMPRegionParent)))
			rt.Cols[RegColFn].Append(int64(r.u64(recOMPRegionFn)))
			rt.Cols[RegColTeam].Append(int64(r.u32(recOMPRegionTeam)))
		default:
			sk.malformed++
		}
	})
}

// ompFrameBase is the pseudo-frame of OpenMP state 0: the leaf frame that the OpenMP views put on
// the stack of an event of a thread in a runtime state (analysis, openmp.go). Never written in a
// file.
const ompFrameBase = PseudoFrameBase + 0x100

// OMPMarkFrame is the pseudo-frame between a thread's frames and the stack of the region's master
// that the OpenMP views put under them: the frames after it (rootward) are the master's.
const OMPMarkFrame = ompFrameBase + 0xff

// OMPTaskMarkFrame is the mark between a thread's frames and those of the explicit task's creator
// that it runs.
const OMPTaskMarkFrame = ompFrameBase + 0xfe

// OMPStateFrame is the pseudo-frame of state s, shown as <OMP-s>.
func OMPStateFrame(s OMPState) uint64 { return ompFrameBase + uint64(s) }

// OMPStateOfFrame returns the state of an OpenMP state pseudo-frame; false for any other frame.
func OMPStateOfFrame(pc uint64) (OMPState, bool) {
	if pc > ompFrameBase && pc < ompFrameBase+uint64(NumOMPStates) {
		return OMPState(pc - ompFrameBase), true
	}
	return 0, false
}
