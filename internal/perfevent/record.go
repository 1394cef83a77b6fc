package perfevent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"golang.org/x/sys/unix"
)

// Record is one decoded perf record: *Sample, *Mmap2, *Comm, *Fork, *Exit,
// *Lost, *Throttle, *LostSamples, *Switch, or *Unknown for any other type.
// The value passed to a Drain callback, and every slice in it, is reused
// after the callback returns: copy what you keep.
type Record any

// Sample is a PERF_RECORD_SAMPLE.
type Sample struct {
	IP       uint64 // the interrupted instruction
	Pid, Tid uint32 // process and thread
	Time     uint64 // CLOCK_MONOTONIC nanoseconds
	CPU      uint32 // the CPU it ran on
	Period   uint64 // events (for the clocks, nanoseconds) this sample stands for
	Count    uint64 // with Options.ReadCount, the event's count in thread Tid on this CPU so far
	// Siblings, with Options.ReadGroup, are the counts of the group's events in thread Tid on this
	// CPU so far, in the group's order: the leader's first, then Options.Siblings' (Count is the
	// sample's own event's). Like Callchain, it is the decoder's until the next record.
	Siblings  []uint64
	Leader    bool     // with Options.ReadGroup, the sample's event leads the group (not a sibling's)
	Addr      uint64   // with Options.SampleAddr, the data address (a page fault's faulting address)
	ID        uint64   // the event's id
	Callchain []uint64 // raw call chain with PERF_CONTEXT_* markers, leaf first; see SplitCallchain
	Misc      uint16   // header misc bits; the CPU mode is Misc & PERF_RECORD_MISC_CPUMODE_MASK
	Regs      []uint64 // user registers of the mask, in increasing register number (see RegIndex); nil when RegsABI is 0
	RegsABI   uint64   // PERF_SAMPLE_REGS_ABI_*: 0 when no user registers (a kernel thread)
	// Stack is the copy of the user stack from the stack pointer up; only its
	// first StackDynSize bytes were filled by the kernel.
	Stack        []byte
	StackDynSize uint64
}

// Kernel reports whether the sample was taken in kernel mode.
func (s *Sample) Kernel() bool {
	return s.Misc&unix.PERF_RECORD_MISC_CPUMODE_MASK == unix.PERF_RECORD_MISC_KERNEL
}

// Mmap2 is a PERF_RECORD_MMAP2: an executable mapping made by the task.
type Mmap2 struct {
	Pid, Tid         uint32
	Addr, Len, Pgoff uint64
	Maj, Min         uint32 // device (zero when BuildID is set)
	Ino, InoGen      uint64 // inode and its generation (zero when BuildID is set)
	Prot, Flags      uint32 // PROT_* and MAP_* of the mapping
	BuildID          []byte // set when the kernel sent a build id (PERF_RECORD_MISC_MMAP_BUILD_ID)
	Filename         string
	Time             uint64
	Executable       bool // mapped with PROT_EXEC
}

// Comm is a PERF_RECORD_COMM: a thread changed its name, or the process called exec (Exec).
type Comm struct {
	Pid, Tid uint32
	Comm     string
	Exec     bool
	Time     uint64
}

// Fork is a PERF_RECORD_FORK: a process or thread Pid/Tid was created by Ppid/Ptid.
// A new thread has Pid == Ppid.
type Fork struct {
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
}

// Exit is a PERF_RECORD_EXIT: thread Tid of process Pid exited.
type Exit struct {
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
}

// Read is a PERF_RECORD_READ: with Options.InheritStat, the count of the event in thread Tid of
// process Pid when it exited (one record per CPU's event: sum them).
type Read struct {
	Pid, Tid uint32
	Value    uint64
	Time     uint64
	ID       uint64 // the id of the event (the one opened: Group.SiblingIDs); 0 without PERF_SAMPLE_IDENTIFIER
}

// Lost is a PERF_RECORD_LOST: the ring was full and Lost records were dropped.
type Lost struct {
	ID   uint64
	Lost uint64
	Time uint64
}

// Throttle is a PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE: the kernel
// stopped (or resumed) sampling because samples came too fast for
// kernel.perf_event_max_sample_rate.
type Throttle struct {
	Time       uint64
	ID         uint64
	Unthrottle bool
}

// LostSamples is a PERF_RECORD_LOST_SAMPLES: samples the kernel could not take.
type LostSamples struct {
	Lost uint64
	Time uint64
}

// Switch is a PERF_RECORD_SWITCH or PERF_RECORD_SWITCH_CPU_WIDE: thread Pid/Tid
// was switched out (Out) or in at Time; Preempt when it was switched out while runnable.
type Switch struct {
	Pid, Tid                 uint32
	CPU                      uint32 // the CPU switched on (with PERF_SAMPLE_CPU in the sample_id)
	Out, Preempt             bool
	NextPrevPid, NextPrevTid uint32 // the other thread (CPU-wide records only)
	Time                     uint64
}

// Unknown is a record of a type this package does not decode.
type Unknown struct {
	Type uint32
	Misc uint16
	Data []byte // the record after its 8-byte header
}

// Decoder decodes raw perf records for one event configuration.
// It reuses its record values and buffers; it is not safe for concurrent use.
type Decoder struct {
	sampleType  uint64
	regsMask    uint64
	nregs       int
	sampleIDAll bool
	idSize      int      // bytes of the sample_id trailer on non-sample records
	readGroup   bool     // the events' read format is PERF_FORMAT_GROUP|PERF_FORMAT_ID (Options.ReadGroup)
	groupVals   []uint64 // the values of the last group read
	groupIDs    []uint64 // and their events' ids

	sample  Sample
	mmap2   Mmap2
	comm    Comm
	fork    Fork
	exit    Exit
	lost    Lost
	read    Read
	thr     Throttle
	lostS   LostSamples
	sw      Switch
	unknown Unknown
	cc      []uint64
	regs    []uint64
}

// supportedSampleType lists the PERF_SAMPLE_* bits that Decoder understands.
const supportedSampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
	unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_ID | unix.PERF_SAMPLE_STREAM_ID | unix.PERF_SAMPLE_CPU |
	unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN | unix.PERF_SAMPLE_RAW |
	unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER | unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_READ

// NewDecoder returns a decoder for records of an event opened with the given
// sample_type, sample_regs_user mask and sample_id_all flag.
func NewDecoder(sampleType, regsUserMask uint64, sampleIDAll bool) (*Decoder, error) {
	if bad := sampleType &^ supportedSampleType; bad != 0 {
		return nil, fmt.Errorf("perfevent: sample type bits %#x are not supported by the decoder", bad)
	}
	d := &Decoder{sampleType: sampleType, regsMask: regsUserMask, nregs: bits.OnesCount64(regsUserMask), sampleIDAll: sampleIDAll}
	if sampleIDAll {
		for _, b := range []uint64{unix.PERF_SAMPLE_TID, unix.PERF_SAMPLE_TIME, unix.PERF_SAMPLE_ID,
			unix.PERF_SAMPLE_STREAM_ID, unix.PERF_SAMPLE_CPU, unix.PERF_SAMPLE_IDENTIFIER} {
			if sampleType&b != 0 {
				d.idSize += 8
			}
		}
	}
	return d, nil
}

// recordName names perf record types in errors.
func recordName(t uint32) string {
	switch t {
	case unix.PERF_RECORD_SAMPLE:
		return "sample"
	case unix.PERF_RECORD_MMAP2:
		return "mmap2"
	case unix.PERF_RECORD_COMM:
		return "comm"
	case unix.PERF_RECORD_FORK:
		return "fork"
	case unix.PERF_RECORD_EXIT:
		return "exit"
	case unix.PERF_RECORD_LOST:
		return "lost"
	case unix.PERF_RECORD_THROTTLE:
		return "throttle"
	case unix.PERF_RECORD_UNTHROTTLE:
		return "unthrottle"
	case unix.PERF_RECORD_LOST_SAMPLES:
		return "lost-samples"
	case unix.PERF_RECORD_SWITCH, unix.PERF_RECORD_SWITCH_CPU_WIDE:
		return "switch"
	}
	return fmt.Sprintf("type %d", t)
}

// reader reads little-endian fields from a record, remembering the first short read.
type reader struct {
	b   []byte
	off int
	err error
	typ uint32
}

func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("%s record of %d bytes is too short: %s needs %d bytes at offset %d",
			recordName(r.typ), len(r.b), what, n, r.off)
		return false
	}
	return true
}

func (r *reader) u64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("%s record of %d bytes is too short: %s of %d bytes at offset %d",
			recordName(r.typ), len(r.b), what, n, r.off)
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}

// u64s decodes n little-endian words into buf (grown as needed).
func (r *reader) u64s(n uint64, buf []uint64, what string) []uint64 {
	buf = buf[:0]
	if r.err != nil {
		return buf
	}
	if n > uint64(len(r.b)-r.off)/8 {
		r.err = fmt.Errorf("%s record of %d bytes is too short: %s of %d words at offset %d",
			recordName(r.typ), len(r.b), what, n, r.off)
		return buf
	}
	raw := r.bytes(n*8, what)
	for i := 0; i < len(raw); i += 8 {
		buf = append(buf, binary.LittleEndian.Uint64(raw[i:]))
	}
	return buf
}

// cstring returns b up to its first NUL.
func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Decode decodes one record: rec is the whole record, starting with its
// 8-byte header (u32 type, u16 misc, u16 size), and exactly size bytes long.
// The returned record is reused by the next Decode, and its slices may
// point into rec. A short or malformed record gives an error, never a panic.
func (d *Decoder) Decode(rec []byte) (Record, error) {
	if len(rec) < 8 {
		return nil, fmt.Errorf("record of %d bytes is shorter than its 8-byte header", len(rec))
	}
	typ := binary.LittleEndian.Uint32(rec)
	misc := binary.LittleEndian.Uint16(rec[4:])
	size := binary.LittleEndian.Uint16(rec[6:])
	if int(size) != len(rec) {
		return nil, fmt.Errorf("%s record header says %d bytes, have %d", recordName(typ), size, len(rec))
	}
	if size%8 != 0 {
		return nil, fmt.Errorf("%s record size %d is not a multiple of 8", recordName(typ), size)
	}
	body := rec[8:]
	if typ == unix.PERF_RECORD_SAMPLE {
		return d.decodeSample(body, misc)
	}
	var time, ident uint64
	if d.sampleIDAll && knownSideBand(typ) {
		if len(body) < d.idSize {
			return nil, fmt.Errorf("%s record of %d bytes is too short for its %d-byte sample_id", recordName(typ), len(rec), d.idSize)
		}
		time = d.sampleIDTime(body[len(body)-d.idSize:])
		if d.sampleType&unix.PERF_SAMPLE_IDENTIFIER != 0 {
			ident = binary.LittleEndian.Uint64(body[len(body)-8:]) // the identifier ends the sample_id
		}
		body = body[:len(body)-d.idSize]
	}
	r := &reader{b: body, typ: typ}
	var out Record
	switch typ {
	case unix.PERF_RECORD_MMAP2:
		m := &d.mmap2
		*m = Mmap2{Time: time}
		m.Pid, m.Tid = r.u32("pid"), r.u32("tid")
		m.Addr, m.Len, m.Pgoff = r.u64("addr"), r.u64("len"), r.u64("pgoff")
		if misc&unix.PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
			id := r.bytes(24, "build id")
			if id != nil {
				n := min(int(id[0]), 20)
				m.BuildID = id[4 : 4+n]
			}
		} else {
			m.Maj, m.Min = r.u32("maj"), r.u32("min")
			m.Ino, m.InoGen = r.u64("ino"), r.u64("ino_generation")
		}
		m.Prot, m.Flags = r.u32("prot"), r.u32("flags")
		if r.need(1, "filename") {
			m.Filename = cstring(r.b[r.off:])
		}
		m.Executable = m.Prot&unix.PROT_EXEC != 0 && misc&unix.PERF_RECORD_MISC_MMAP_DATA == 0
		out = m
	case unix.PERF_RECORD_COMM:
		c := &d.comm
		*c = Comm{Time: time, Exec: misc&unix.PERF_RECORD_MISC_COMM_EXEC != 0}
		c.Pid, c.Tid = r.u32("pid"), r.u32("tid")
		if r.need(1, "comm") {
			c.Comm = cstring(r.b[r.off:])
		}
		out = c
	case unix.PERF_RECORD_FORK, unix.PERF_RECORD_EXIT:
		pid, ppid, tid, ptid := r.u32("pid"), r.u32("ppid"), r.u32("tid"), r.u32("ptid")
		t := r.u64("time")
		if typ == unix.PERF_RECORD_FORK {
			d.fork = Fork{Pid: pid, Ppid: ppid, Tid: tid, Ptid: ptid, Time: t}
			out = &d.fork
		} else {
			d.exit = Exit{Pid: pid, Ppid: ppid, Tid: tid, Ptid: ptid, Time: t}
			out = &d.exit
		}
	case unix.PERF_RECORD_READ:
		d.read = Read{Pid: r.u32("pid"), Tid: r.u32("tid"), Time: time, ID: ident}
		if d.readGroup {
			d.readGroupValues(r)
			d.read.Value = d.groupValue(ident)
		} else {
			d.read.Value = r.u64("value")
		}
		out = &d.read
	case unix.PERF_RECORD_LOST:
		d.lost = Lost{ID: r.u64("id"), Lost: r.u64("lost"), Time: time}
		out = &d.lost
	case unix.PERF_RECORD_THROTTLE, unix.PERF_RECORD_UNTHROTTLE:
		d.thr = Throttle{Time: r.u64("time"), ID: r.u64("id"), Unthrottle: typ == unix.PERF_RECORD_UNTHROTTLE}
		r.u64("stream_id")
		out = &d.thr
	case unix.PERF_RECORD_LOST_SAMPLES:
		d.lostS = LostSamples{Lost: r.u64("lost"), Time: time}
		out = &d.lostS
	case unix.PERF_RECORD_SWITCH, unix.PERF_RECORD_SWITCH_CPU_WIDE:
		s := &d.sw
		*s = Switch{Time: time,
			Out:     misc&unix.PERF_RECORD_MISC_SWITCH_OUT != 0,
			Preempt: misc&unix.PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0}
		if typ == unix.PERF_RECORD_SWITCH_CPU_WIDE {
			s.NextPrevPid, s.NextPrevTid = r.u32("next_prev_pid"), r.u32("next_prev_tid")
		}
		if d.sampleIDAll && d.sampleType&unix.PERF_SAMPLE_TID != 0 {
			s.Pid, s.Tid = d.sampleIDTid(rec[len(rec)-d.idSize:])
		}
		if d.sampleIDAll {
			s.CPU = d.sampleIDCPU(rec[len(rec)-d.idSize:])
		}
		out = s
	default:
		d.unknown = Unknown{Type: typ, Misc: misc, Data: rec[8:]}
		out = &d.unknown
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// maxGroup bounds the events of a group read: the leader and MaxSiblings.
const maxGroup = 1 + MaxSiblings

// readGroupValues reads a group read (PERF_FORMAT_GROUP|PERF_FORMAT_ID: the number of events, then
// each one's value and id) into groupVals and groupIDs.
func (d *Decoder) readGroupValues(r *reader) {
	d.groupVals, d.groupIDs = d.groupVals[:0], d.groupIDs[:0]
	n := r.u64("group read events")
	if n > maxGroup {
		if r.err == nil {
			r.err = fmt.Errorf("%s record: a group read of %d events at offset %d (at most %d)", recordName(r.typ), n, r.off-8, maxGroup)
		}
		return
	}
	for range n {
		d.groupVals = append(d.groupVals, r.u64("group read value"))
		d.groupIDs = append(d.groupIDs, r.u64("group read id"))
	}
}

// groupValue returns the value of event id in the last group read; the leader's (the first) where no
// event has id (a record without PERF_SAMPLE_IDENTIFIER).
func (d *Decoder) groupValue(id uint64) uint64 {
	for i, x := range d.groupIDs {
		if x == id {
			return d.groupVals[i]
		}
	}
	if len(d.groupVals) > 0 {
		return d.groupVals[0]
	}
	return 0
}

// knownSideBand reports whether records of type typ carry a sample_id trailer that Decode strips.
func knownSideBand(typ uint32) bool {
	switch typ {
	case unix.PERF_RECORD_MMAP2, unix.PERF_RECORD_COMM, unix.PERF_RECORD_FORK, unix.PERF_RECORD_EXIT, unix.PERF_RECORD_READ,
		unix.PERF_RECORD_LOST, unix.PERF_RECORD_THROTTLE, unix.PERF_RECORD_UNTHROTTLE,
		unix.PERF_RECORD_LOST_SAMPLES, unix.PERF_RECORD_SWITCH, unix.PERF_RECORD_SWITCH_CPU_WIDE:
		return true
	}
	return false
}

// sampleIDTime returns the time in a sample_id trailer (0 when not sampled).
func (d *Decoder) sampleIDTime(id []byte) uint64 {
	if d.sampleType&unix.PERF_SAMPLE_TIME == 0 {
		return 0
	}
	off := 0
	if d.sampleType&unix.PERF_SAMPLE_TID != 0 {
		off = 8
	}
	return binary.LittleEndian.Uint64(id[off:])
}

// sampleIDCPU returns the CPU in a sample_id trailer (0 when not sampled).
func (d *Decoder) sampleIDCPU(id []byte) uint32 {
	if d.sampleType&unix.PERF_SAMPLE_CPU == 0 {
		return 0
	}
	off := 0
	for _, b := range []uint64{unix.PERF_SAMPLE_TID, unix.PERF_SAMPLE_TIME, unix.PERF_SAMPLE_ID, unix.PERF_SAMPLE_STREAM_ID} {
		if d.sampleType&b != 0 {
			off += 8
		}
	}
	return binary.LittleEndian.Uint32(id[off:])
}

// sampleIDTid returns pid and tid from a sample_id trailer that has PERF_SAMPLE_TID.
func (d *Decoder) sampleIDTid(id []byte) (pid, tid uint32) {
	return binary.LittleEndian.Uint32(id), binary.LittleEndian.Uint32(id[4:])
}

// decodeSample decodes the body of a PERF_RECORD_SAMPLE.
func (d *Decoder) decodeSample(body []byte, misc uint16) (Record, error) {
	r := &reader{b: body, typ: unix.PERF_RECORD_SAMPLE}
	st := d.sampleType
	s := &d.sample
	*s = Sample{Misc: misc}
	if st&unix.PERF_SAMPLE_IDENTIFIER != 0 {
		s.ID = r.u64("identifier")
	}
	if st&unix.PERF_SAMPLE_IP != 0 {
		s.IP = r.u64("ip")
	}
	if st&unix.PERF_SAMPLE_TID != 0 {
		s.Pid, s.Tid = r.u32("pid"), r.u32("tid")
	}
	if st&unix.PERF_SAMPLE_TIME != 0 {
		s.Time = r.u64("time")
	}
	if st&unix.PERF_SAMPLE_ADDR != 0 {
		s.Addr = r.u64("addr")
	}
	if st&unix.PERF_SAMPLE_ID != 0 {
		s.ID = r.u64("id")
	}
	if st&unix.PERF_SAMPLE_STREAM_ID != 0 {
		r.u64("stream_id")
	}
	if st&unix.PERF_SAMPLE_CPU != 0 {
		s.CPU = r.u32("cpu")
		r.u32("cpu reserved")
	}
	if st&unix.PERF_SAMPLE_PERIOD != 0 {
		s.Period = r.u64("period")
	}
	if st&unix.PERF_SAMPLE_READ != 0 {
		if d.readGroup {
			d.readGroupValues(r)
			s.Siblings = d.groupVals
			s.Count = d.groupValue(s.ID)
			s.Leader = len(d.groupIDs) > 0 && d.groupIDs[0] == s.ID
		} else {
			s.Count = r.u64("read value") // read_format 0: the value alone
		}
	}
	if st&unix.PERF_SAMPLE_CALLCHAIN != 0 {
		n := r.u64("callchain length")
		d.cc = r.u64s(n, d.cc, "callchain")
		s.Callchain = d.cc
	}
	if st&unix.PERF_SAMPLE_RAW != 0 {
		n := r.u32("raw size")
		r.bytes(uint64(n), "raw data")
	}
	if st&unix.PERF_SAMPLE_REGS_USER != 0 {
		s.RegsABI = r.u64("regs abi")
		if s.RegsABI != 0 {
			d.regs = r.u64s(uint64(d.nregs), d.regs, "user regs")
			s.Regs = d.regs
		}
	}
	if st&unix.PERF_SAMPLE_STACK_USER != 0 {
		n := r.u64("user stack size")
		if n != 0 {
			s.Stack = r.bytes(n, "user stack")
			s.StackDynSize = r.u64("user stack dyn_size")
			if r.err == nil && s.StackDynSize > n {
				r.err = fmt.Errorf("sample record: user stack dyn_size %d exceeds its size %d", s.StackDynSize, n)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

// Call chain context markers (PERF_CONTEXT_*, as unsigned words): the entries
// after ContextKernel are kernel addresses, after ContextUser user addresses.
// Every entry >= ContextMax is a marker.
const (
	ContextKernel uint64 = 1<<64 - 128
	ContextUser   uint64 = 1<<64 - 512
	ContextMax    uint64 = 1<<64 - 4095
)

// isContext reports whether a call chain entry is a PERF_CONTEXT_* marker.
func isContext(v uint64) bool {
	return v >= ContextMax
}

// SplitCallchain splits a raw call chain into its kernel and user parts, leaf
// first, dropping the PERF_CONTEXT_* markers and any guest or hypervisor
// frames. Entries before the first marker are placed by address (kernel
// addresses have the top bit set). The results are new slices.
func SplitCallchain(cc []uint64) (kernel, user []uint64) {
	ctx := uint64(0) // 0: no marker seen yet
	for _, v := range cc {
		if isContext(v) {
			ctx = v
			continue
		}
		switch {
		case ctx == ContextKernel || ctx == 0 && v>>63 == 1:
			kernel = append(kernel, v)
		case ctx == ContextUser || ctx == 0:
			user = append(user, v)
		}
	}
	return kernel, user
}
