package gprofng

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/experiment"
	"er/internal/regfile"
)

// converter turns the data packets of a gprofng experiment into er's events.
type converter struct {
	d        *experiment.Data
	log      *Log
	stacks   *Stacks
	byInfo   map[uint64]uint32   // interned stacks, by frame info
	ids      map[uint64][]uint32 // interned stacks, by the hash of their frames
	names    *namer
	missing  int // events whose frame info data.frameinfo lacks
	warnings []string
}

func newConverter(d *experiment.Data, l *Log, st *Stacks) *converter {
	return &converter{d: d, log: l, stacks: st, byInfo: map[uint64]uint32{}, ids: map[uint64][]uint32{}, names: newNamer(d)}
}

// required are the fields of each profile's packets that er reads.
var required = map[string][]string{
	"profile":   {"LWPID", "TSTAMP", "FRINFO", "MSTATE", "NTICK"},
	"heaptrace": {"LWPID", "TSTAMP", "FRINFO", "HTYPE", "HSIZE", "HVADDR"},
	"synctrace": {"LWPID", "TSTAMP", "FRINFO", "SRQST", "SOBJ"},
	"iotrace":   {"LWPID", "TSTAMP", "FRINFO", "IOTYPE", "IOFD", "IONBYTE", "IORQST"},
}

// read reads the data file of profile p.
func (c *converter) read(dir string, p *Profile) error {
	file := filepath.Join(dir, p.File)
	descs := map[int]*PacketDesc{}
	for i := range p.Packets {
		pd := &p.Packets[i]
		for _, name := range required[p.Name] {
			if _, ok := pd.Field(name); !ok {
				return fmt.Errorf("%s: profile %q: its packets (kind %d) have no field %s", filepath.Join(dir, logFile), p.Name, pd.Kind, name)
			}
		}
		descs[pd.Kind] = pd
	}
	f, fi, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: missing; the experiment has no %s data", p.File, p.Name))
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var recs []Record
	unknown := 0
	w, err := ReadPackets(file, f, fi.Size(), func(off int64, typ int, pk []byte) error {
		pd := descs[typ]
		if pd == nil {
			unknown++
			return nil
		}
		r, err := decode(file, off, pd, pk)
		if err != nil {
			return err
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return err
	}
	if w != "" {
		c.warnings = append(c.warnings, strings.TrimPrefix(w, dir+string(filepath.Separator)))
	}
	if unknown > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %d packets of kinds its log.xml does not describe; ignored", p.File, unknown))
	}
	switch p.Name {
	case "profile":
		c.clock(p, recs)
	case "heaptrace":
		c.heap(p, recs)
	case "synctrace":
		c.sync(recs)
	case "iotrace":
		c.io(recs)
	}
	return nil
}

// common reads what every packet has: the time (ns since the start), the thread and the stack.
func (c *converter) common(r *Record) (t int64, tid uint32, stack uint32) {
	t = max(r.Int("TSTAMP")-c.log.Start, 0)
	return t, uint32(r.Ints["LWPID"]), c.stack(r.Ints["FRINFO"])
}

// stack interns the stack of frame info fr (a pseudo-frame last where it was cut or its unwind
// failed), once for each frame info.
func (c *converter) stack(fr uint64) uint32 {
	if id, ok := c.byInfo[fr]; ok {
		return id
	}
	pcs, _, ok := c.stacks.frinfo(fr)
	if !ok {
		c.missing++
		return 0
	}
	id := c.intern(pcs)
	c.byInfo[fr] = id
	return id
}

// intern returns the id of stack pcs in c.d.Stacks, adding it when new.
func (c *converter) intern(pcs []uint64) uint32 {
	if len(pcs) == 0 {
		return 0
	}
	h := uint64(0xcbf29ce484222325) // FNV-1a of the frames
	for _, pc := range pcs {
		h = (h ^ pc) * 0x100000001b3
	}
	for _, id := range c.ids[h] {
		if slices.Equal(c.d.Stacks[id], pcs) {
			return id
		}
	}
	id := uint32(len(c.d.Stacks))
	c.d.Stacks = append(c.d.Stacks, pcs)
	c.ids[h] = append(c.ids[h], id)
	return id
}

// Thread states of a clock packet's MSTATE.
const (
	lmsUser      = 0
	lmsSystem    = 1
	lmsTrap      = 2
	lmsTextFault = 3
	lmsDataFault = 4
	lmsKernFault = 5
	lmsUserLock  = 6
	lmsSleep     = 7
	lmsWaitCPU   = 8
	lmsStopped   = 9
	lmsLinuxCPU  = 10 // user and system CPU time together: what gprofng records on Linux
	lmsKernelCPU = 11
)

// modes maps the thread states to er's modes. On Linux gprofng records only lmsLinuxCPU, CPU time
// that it does not split into user and system time: er's unknown mode, which counts as Total CPU
// time alone.
var modes = map[int64]experiment.Mode{
	lmsUser: experiment.ModeUser, lmsSystem: experiment.ModeKernel, lmsTrap: experiment.ModeKernel,
	lmsTextFault: experiment.ModeTextFault, lmsDataFault: experiment.ModeDataFault, lmsKernFault: experiment.ModeDataFault,
	lmsUserLock: experiment.ModeSleep, lmsSleep: experiment.ModeSleep, lmsWaitCPU: experiment.ModeWaitCPU,
	lmsStopped: experiment.ModeSleep, lmsLinuxCPU: experiment.ModeUnknown, lmsKernelCPU: experiment.ModeKernel,
}

// clock converts clock-profiling packets: each stands for NTICK profiling intervals (ptimer µs).
func (c *converter) clock(p *Profile, recs []Record) {
	interval := int64(10_000_000)
	if us, err := atoi(p.Attrs, "ptimer"); err == nil && us > 0 && us < 60e6 {
		interval = us * 1000
	}
	bad := 0
	samples := make([]experiment.ClockSample, 0, len(recs))
	defer func() { c.d.AddClock(samples) }()
	for i := range recs {
		r := &recs[i]
		t, tid, st := c.common(r)
		mode, ok := modes[r.Int("MSTATE")]
		n := r.Int("NTICK")
		if !ok || n <= 0 || n > 6000 {
			bad++
			continue
		}
		samples = append(samples, experiment.ClockSample{Time: t, Pid: c.log.Pid, Tid: tid,
			CPU: uint32(r.Ints["CPUID"]), Mode: mode, Period: n * interval, Stack: st})
	}
	if bad > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %d clock packets with an unknown thread state or tick count; ignored", p.File, bad))
	}
}

// Types of a synchronization, heap and I/O packet.
const (
	heapMalloc  = 0
	heapFree    = 1
	heapRealloc = 2
	heapMmap    = 3
	heapMunmap  = 4

	ioRead  = 0
	ioWrite = 1
	ioOpen  = 2
	ioClose = 3
	ioOther = 4
	ioError = 5 // ioRead + ioError is a read that failed, and so on
)

// traced returns the operation that the function named by one of the first frames of stack
// calls (the collector's interposer is named as the function it traces, and the mmap one calls
// a function of its own to record), when ok accepts it.
func (c *converter) traced(stack uint32, ops map[string]uint8, ok func(uint8) bool) (uint8, bool) {
	st := c.d.Stacks[stack]
	for i := 0; i < len(st) && i < 3; i++ {
		name, _, _ := strings.Cut(c.names.name(st[i]), "@")
		if op, found := ops[name]; found && ok(op) {
			return op, true
		}
	}
	return 0, false
}

var heapOps = map[string]uint8{
	"malloc": uint8(experiment.HeapMalloc), "calloc": uint8(experiment.HeapCalloc), "realloc": uint8(experiment.HeapRealloc),
	"free": uint8(experiment.HeapFree), "posix_memalign": uint8(experiment.HeapPosixMemalign),
	"aligned_alloc": uint8(experiment.HeapAlignedAlloc), "memalign": uint8(experiment.HeapMemalign),
	"valloc": uint8(experiment.HeapValloc), "pvalloc": uint8(experiment.HeapPvalloc),
	"reallocarray": uint8(experiment.HeapReallocarray), "mmap": uint8(experiment.HeapMmap),
	"mmap64": uint8(experiment.HeapMmap), "munmap": uint8(experiment.HeapMunmap),
}

// heapKind is the operation an HTYPE stands for when no frame names one.
var heapKind = map[int64]experiment.HeapOp{heapMalloc: experiment.HeapMalloc, heapFree: experiment.HeapFree,
	heapRealloc: experiment.HeapRealloc, heapMmap: experiment.HeapMmap, heapMunmap: experiment.HeapMunmap}

// heap converts heap-tracing packets. gprofng 2.40 records no old block for realloc (HOVADDR is 0),
// so a realloc frees no block, and its new block, when at the address of a block still allocated,
// does not end that one either: gprofng keeps both, and frees the oldest block at an address when
// it is freed. The blocks get addresses of their own where they share one (gprofngHeap), so that
// er's replay of the events finds the same leaks as gprofng's display.
func (c *converter) heap(p *Profile, recs []Record) {
	// In time order, as gprofng replays them: the file holds each thread's packets in blocks.
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.Int("TSTAMP"), b.Int("TSTAMP")) })
	h := newGprofngHeap()
	noOld, bad := 0, 0
	evs := make([]experiment.HeapEvent, 0, len(recs))
	defer func() { c.d.AddHeap(evs) }()
	for i := range recs {
		r := &recs[i]
		t, tid, st := c.common(r)
		htype := r.Int("HTYPE")
		kind, ok := heapKind[htype]
		if !ok {
			bad++
			continue
		}
		op := kind
		if o, found := c.traced(st, heapOps, func(o uint8) bool { return sameHeapClass(experiment.HeapOp(o), kind) }); found {
			op = experiment.HeapOp(o)
		}
		addr, size, old := r.Ints["HVADDR"], r.Ints["HSIZE"], r.Ints["HOVADDR"]
		e := experiment.HeapEvent{Time: t, Pid: c.log.Pid, Tid: tid, Stack: st, Op: op, Size: size}
		switch htype {
		case heapMalloc:
			if addr != 0 {
				e.Addr = h.alloc(i, addr)
			}
		case heapFree:
			if addr != 0 {
				e.Old = h.free(addr)
			}
		case heapRealloc:
			if old != 0 {
				e.Old = h.free(old)
			} else if addr != 0 {
				noOld++
			}
			if addr != 0 {
				e.Addr = h.alloc(i, addr)
			}
		case heapMmap:
			e.Addr = addr
		case heapMunmap:
			e.Old = addr
		}
		evs = append(evs, e)
	}
	if noOld > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %d realloc calls recorded without the block they were given (gprofng %s does not record it): the block a realloc moved or resized is not freed by it, as gprofng's own display counts it", p.File, noOld, c.log.Collector))
	}
	if bad > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %d heap packets of an unknown type; ignored", p.File, bad))
	}
}

// sameHeapClass says whether op is a function of the kind that an HTYPE recorded.
func sameHeapClass(op, kind experiment.HeapOp) bool {
	switch kind {
	case experiment.HeapMalloc:
		return op != experiment.HeapFree && op != experiment.HeapRealloc && op != experiment.HeapReallocarray &&
			op != experiment.HeapMmap && op != experiment.HeapMunmap
	case experiment.HeapRealloc:
		return op == experiment.HeapRealloc || op == experiment.HeapReallocarray
	}
	return op == kind
}

var syncOps = map[string]uint8{
	"pthread_mutex_lock": uint8(experiment.SyncMutexLock), "pthread_mutex_timedlock": uint8(experiment.SyncMutexLock),
	"pthread_cond_wait": uint8(experiment.SyncCondWait), "pthread_cond_timedwait": uint8(experiment.SyncCondWait),
	"pthread_cond_clockwait": uint8(experiment.SyncCondWait), "pthread_rwlock_rdlock": uint8(experiment.SyncRwlockRdlock),
	"pthread_rwlock_wrlock": uint8(experiment.SyncRwlockWrlock), "pthread_join": uint8(experiment.SyncJoin),
	"pthread_timedjoin_np": uint8(experiment.SyncJoin), "sem_wait": uint8(experiment.SyncSemWait),
	"sem_timedwait": uint8(experiment.SyncSemWait), "sem_clockwait": uint8(experiment.SyncSemWait),
	"pthread_barrier_wait": uint8(experiment.SyncBarrierWait), "pthread_spin_lock": uint8(experiment.SyncSpinLock),
}

// sync converts synchronization-tracing packets: a wait from SRQST to TSTAMP on object SOBJ.
func (c *converter) sync(recs []Record) {
	evs := make([]experiment.SyncEvent, 0, len(recs))
	defer func() { c.d.AddSync(evs) }()
	for i := range recs {
		r := &recs[i]
		t, tid, st := c.common(r)
		op, _ := c.traced(st, syncOps, func(uint8) bool { return true })
		wait := max(r.Int("TSTAMP")-r.Int("SRQST"), 0)
		evs = append(evs, experiment.SyncEvent{Time: t, Pid: c.log.Pid, Tid: tid, Stack: st,
			Op: experiment.SyncOp(op), Wait: wait, Object: r.Ints["SOBJ"]})
	}
}

// ioOps names er's I/O operations, and the 64-bit variants of the same functions.
var ioOps = func() map[string]uint8 {
	m := map[string]uint8{}
	for v := 1; v < 64; v++ {
		if name := experiment.IOOp(v).String(); !strings.HasPrefix(name, "io_op_") && !strings.HasPrefix(name, "<") {
			m[name] = uint8(v)
			m[name+"64"] = uint8(v)
		}
	}
	return m
}()

// ioKind is the operation an IOTYPE stands for when no frame names one (an other I/O call as an
// fsync: a call of the other class, which names no file of its own).
var ioKind = map[int64]experiment.IOOp{ioRead: experiment.IOReadOp, ioWrite: experiment.IOWriteOp,
	ioOpen: experiment.IOOpen, ioClose: experiment.IOClose, ioOther: experiment.IOFsync}

// OtherIOName is the file of the calls that gprofng records as other I/O (lseek, fsync, fflush,
// fseek, ...): gprofng's display counts them all against this pseudo-file, whatever descriptor
// they were made on (the packet's IOFD, which the event keeps), and so does er.
const OtherIOName = "<Other IO activity>"

// errUnknown is the errno of a call that failed: gprofng does not record which.
const errUnknown = -1

// io converts I/O-tracing packets: a call from IORQST to TSTAMP on descriptor IOFD, of IONBYTE
// bytes, opening IOFNAME or duplicating IOOFD.
func (c *converter) io(recs []Record) {
	bad := 0
	evs := make([]experiment.IOEvent, 0, len(recs))
	defer func() { c.d.AddIO(evs) }()
	for i := range recs {
		r := &recs[i]
		t, tid, st := c.common(r)
		typ := r.Int("IOTYPE")
		var errno int32
		if typ >= ioError {
			typ -= ioError
			errno = errUnknown
		}
		kind, ok := ioKind[typ]
		if !ok {
			bad++
			continue
		}
		op := kind
		if o, found := c.traced(st, ioOps, func(o uint8) bool { return ioOpFits(experiment.IOOp(o), typ) }); found {
			op = experiment.IOOp(o)
		}
		fd, ofd := int32(r.Int("IOFD")), int32(r.Int("IOOFD"))
		e := experiment.IOEvent{Time: t, Pid: c.log.Pid, Tid: tid, Stack: st, Op: op, Dur: max(r.Int("TSTAMP")-r.Int("IORQST"), 0),
			FD: fd, FD2: -1, Err: errno, File: r.Texts["IOFNAME"]}
		switch typ {
		case ioOther:
			e.File = OtherIOName
		case ioRead, ioWrite:
			if errno == 0 {
				e.Bytes = max(r.Int("IONBYTE"), 0)
				e.Ret = e.Bytes
			} else {
				e.Ret = -1
			}
		case ioOpen:
			e.Ret = int64(fd)
			switch {
			case errno != 0:
				e.FD, e.Ret = -1, -1
			case e.File == "" && ofd > 0 && op != experiment.IOFdopen:
				// A descriptor made from another: the name is the other's.
				if op == experiment.IODup2 || op == experiment.IODup3 {
					e.FD, e.FD2 = ofd, fd
				} else {
					e.Op, e.FD = experiment.IODup, ofd
				}
			}
		}
		evs = append(evs, e)
	}
	if bad > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("iotrace: %d I/O packets of an unknown type; ignored", bad))
	}
}

// ioOpFits says whether op is a function of the kind an IOTYPE recorded: gprofng records
// opening and duplicating calls as OPEN, closing ones as CLOSE, reads and writes by their class.
func ioOpFits(op experiment.IOOp, typ int64) bool {
	opens := false
	switch op {
	case experiment.IOOpen, experiment.IOOpenat, experiment.IOCreat, experiment.IOFopen, experiment.IOFdopen,
		experiment.IOFreopen, experiment.IODup, experiment.IODup2, experiment.IODup3, experiment.IOPipe, experiment.IOPipe2:
		opens = true
	}
	closes := op == experiment.IOClose || op == experiment.IOFclose
	switch typ {
	case ioRead:
		return op.Class() == experiment.IORead
	case ioWrite:
		return op.Class() == experiment.IOWrite
	case ioOpen:
		return opens
	case ioClose:
		return closes
	}
	return op.Class() == experiment.IOOther && !opens && !closes
}
