package perfabi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Decoder decodes the records of the events of one Format (those of a ring, or those of one event
// of a perf.data file) into the record types here: *Sample, *Mmap, *Comm, *Fork, *Exit, *Read,
// *Lost, *LostSamples, *Throttle, *Switch, and *Unknown for the others. It is not safe for
// concurrent use.
type Decoder struct {
	f            Format
	nUser, nIntr int // registers in the user and interrupt masks
	idSize       int // bytes of the sample_id
	// where the sample_id's fields are in it, in bytes from its start; -1 where it has none
	sidTid, sidTime, sidID, sidCPU int

	// The values Decode reuses.
	sample   Sample
	more     SampleMore
	mmap     Mmap
	comm     Comm
	fork     Fork
	exit     Exit
	read     Read
	lost     Lost
	lostS    LostSamples
	thr      Throttle
	sw       Switch
	unknown  Unknown
	cc       []uint64
	regs     []uint64
	intr     []uint64
	sibs     []uint64
	vals     []ReadValue
	branches []Branch
}

// NewDecoder returns a decoder of the records of events of format f.
func NewDecoder(f Format) (*Decoder, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	d := &Decoder{f: f, nUser: bits.OnesCount64(f.SampleRegsUser), nIntr: bits.OnesCount64(f.SampleRegsIntr),
		sidTid: -1, sidTime: -1, sidID: -1, sidCPU: -1}
	if f.SampleIDAll {
		off := 0
		word := func(bit uint64, at *int) {
			if f.SampleType&bit != 0 {
				if at != nil {
					*at = off
				}
				off += 8
			}
		}
		word(SampleTID, &d.sidTid)
		word(SampleTime, &d.sidTime)
		word(SampleID, &d.sidID)
		word(SampleStreamID, nil)
		word(SampleCPU, &d.sidCPU)
		word(SampleIdentifier, &d.sidID) // the same id as SampleID's
		d.idSize = off
	}
	return d, nil
}

// Format returns the format the decoder decodes.
func (d *Decoder) Format() Format { return d.f }

// Decode decodes one record: rec is the whole record, starting with its 8-byte header (u32 type,
// u16 misc, u16 size), and exactly size bytes long. The record returned, and its slices, are the
// decoder's until the next Decode, and its slices may point into rec: copy what you keep, and do
// not change them. A short or malformed record is an error (saying which field, at which byte, is
// cut short), never a panic.
func (d *Decoder) Decode(rec []byte) (Record, error) { return d.decode(rec, false) }

// DecodeNew is Decode, except that the record returned is a new one, and its slices its own or
// rec's: the decoder does not reuse them.
func (d *Decoder) DecodeNew(rec []byte) (Record, error) { return d.decode(rec, true) }

func (d *Decoder) decode(rec []byte, fresh bool) (Record, error) {
	if len(rec) < 8 {
		return nil, fmt.Errorf("record of %d bytes is shorter than its 8-byte header", len(rec))
	}
	le := binary.LittleEndian
	size := le.Uint16(rec[6:])
	if int(size) != len(rec) {
		return nil, fmt.Errorf("record header says %d bytes, have %d", size, len(rec))
	}
	if size%8 != 0 {
		return nil, fmt.Errorf("record size %d is not a multiple of 8", size)
	}
	if le.Uint32(rec) == RecordSample {
		return d.decodeSample(rec, fresh)
	}
	return d.decodeOther(rec, le.Uint32(rec), le.Uint16(rec[4:]), size, fresh)
}

// slot returns keep, or with fresh a new value.
func slot[T any](keep *T, fresh bool) *T {
	if fresh {
		return new(T)
	}
	return keep
}

// reuse returns buf for a decoder that reuses its buffers, nil for one that does not.
func reuse[T any](buf []T, fresh bool) []T {
	if fresh {
		return nil
	}
	return buf[:0]
}

// orNil returns s, or nil where it is empty: a record's empty slices are nil, whether the
// decoder reuses its buffers or not.
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// fields reads the little-endian fields of a record in turn, failing once at the first short one.
type fields struct {
	b   []byte // the record, its header included
	off int    // the next field's
	end int    // where the fields end: where the sample_id begins; -1 after a failure
	err error
}

// fail notes that what, of n bytes, does not fit at off.
func (c *fields) fail(n uint64, what string) {
	if c.err == nil {
		c.err = fmt.Errorf("%s needs %d bytes at byte %d of its %d%s", what, n, c.off, len(c.b), c.tail())
	}
	c.end = -1
}

// failWords notes that what, n entries of size bytes each, does not fit at off.
func (c *fields) failWords(n, size uint64, what string) {
	if n <= math.MaxUint64/size {
		c.fail(n*size, what)
		return
	}
	if c.err == nil {
		c.err = fmt.Errorf("%s of %d entries of %d bytes does not fit in the record's %d bytes (at byte %d)%s", what, n, size, len(c.b), c.off, c.tail())
	}
	c.end = -1
}

// tail says how much of the record is its sample_id.
func (c *fields) tail() string {
	if c.end >= 0 && c.end < len(c.b) {
		return fmt.Sprintf(" (its last %d bytes are its sample_id)", len(c.b)-c.end)
	}
	return ""
}

// left returns the bytes left for fields, 0 after a failure.
func (c *fields) left() uint64 {
	if c.end < c.off {
		return 0
	}
	return uint64(c.end - c.off)
}

func (c *fields) u64(what string) uint64 {
	if c.off+8 > c.end {
		c.fail(8, what)
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *fields) u32(what string) uint32 {
	if c.off+4 > c.end {
		c.fail(4, what)
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

// bytes returns the next n bytes, nil where they do not fit.
func (c *fields) bytes(n uint64, what string) []byte {
	if n > c.left() || c.end < 0 {
		c.fail(n, what)
		return nil
	}
	v := c.b[c.off : c.off+int(n) : c.off+int(n)]
	c.off += int(n)
	return v
}

// u64s decodes n words into buf (grown as needed: nil makes a new one).
func (c *fields) u64s(n uint64, buf []uint64, what string) []uint64 {
	if n > c.left()/8 || c.end < 0 {
		c.failWords(n, 8, what)
		return buf[:0]
	}
	if uint64(cap(buf)) < n {
		buf = make([]uint64, n)
	}
	buf = buf[:n]
	b := c.b[c.off : c.off+8*int(n)]
	for i := range buf {
		buf[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	c.off += 8 * int(n)
	return buf
}

// cstring returns the rest of the fields up to the first NUL; what must have at least a byte.
func (c *fields) cstring(what string) string {
	if c.off+1 > c.end {
		c.fail(1, what)
		return ""
	}
	b := c.b[c.off:c.end]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// decodeSample decodes a PERF_RECORD_SAMPLE by the format's sample type.
func (d *Decoder) decodeSample(rec []byte, fresh bool) (Record, error) {
	// The decoder's own sample (and SampleMore) is not cleared, which was a good part of the time
	// of a drain: each field of the format is written, whatever the record holds, and the others
	// stay zero. The header and the fields reader are set a field at a time: copies of composite
	// values built on the stack stalled on their stores.
	s := slot(&d.sample, fresh)
	s.set(RecordSample, binary.LittleEndian.Uint16(rec[4:]), uint16(len(rec)))
	var c fields
	c.b, c.off, c.end = rec, 8, len(rec)
	st := d.f.SampleType
	if st&SampleIdentifier != 0 {
		s.ID = c.u64("identifier")
	}
	if st&SampleIP != 0 {
		s.IP = c.u64("ip")
	}
	if st&SampleTID != 0 {
		s.Pid, s.Tid = c.u32("pid"), c.u32("tid")
	}
	if st&SampleTime != 0 {
		s.Time = c.u64("time")
	}
	if st&SampleAddr != 0 {
		s.Addr = c.u64("addr")
	}
	if st&SampleID != 0 {
		s.ID = c.u64("id")
	}
	m := (*SampleMore)(nil)
	if st&moreBits != 0 {
		m = slot(&d.more, fresh)
	}
	s.More = m
	if st&SampleStreamID != 0 {
		m.StreamID = c.u64("stream id")
	}
	if st&SampleCPU != 0 {
		s.CPU = c.u32("cpu")
		c.u32("cpu reserved")
	}
	if st&SamplePeriod != 0 {
		s.Period = c.u64("period")
	}
	if st&SampleRead != 0 {
		d.sampleRead(&c, s, m, fresh)
	}
	if st&SampleCallchain != 0 {
		n := c.u64("callchain length")
		cc := c.u64s(n, reuse(d.cc, fresh), "callchain")
		if !fresh {
			d.cc = cc
		}
		s.Callchain = orNil(cc)
	}
	if st&SampleRaw != 0 {
		n := c.u32("raw size")
		m.Raw = c.bytes(uint64(n), "raw data")
	}
	if st&SampleBranchStack != 0 {
		d.branchStack(&c, m, fresh)
	}
	if st&SampleRegsUser != 0 {
		s.RegsABI, s.Regs = d.regSet(&c, "user regs abi", "user regs", d.nUser, &d.regs, fresh)
	}
	if st&SampleStackUser != 0 {
		s.Stack, s.StackDynSize = nil, 0
		if n := c.u64("user stack size"); n != 0 {
			s.Stack = c.bytes(n, "user stack")
			s.StackDynSize = c.u64("user stack dyn_size")
			if c.err == nil && s.StackDynSize > n {
				c.err = fmt.Errorf("user stack dyn_size %d exceeds its size %d", s.StackDynSize, n)
			}
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 {
		m.Weight = c.u64("weight")
	}
	if st&SampleDataSrc != 0 {
		m.DataSrc = c.u64("data source")
	}
	if st&SampleTransaction != 0 {
		m.Transaction = c.u64("transaction")
	}
	if st&SampleRegsIntr != 0 {
		m.IntrRegsABI, m.IntrRegs = d.regSet(&c, "intr regs abi", "intr regs", d.nIntr, &d.intr, fresh)
	}
	if st&SamplePhysAddr != 0 {
		m.PhysAddr = c.u64("physical address")
	}
	if st&SampleCgroup != 0 {
		m.Cgroup = c.u64("cgroup")
	}
	if st&SampleDataPageSize != 0 {
		m.DataPageSize = c.u64("data page size")
	}
	if st&SampleCodePageSize != 0 {
		m.CodePageSize = c.u64("code page size")
	}
	if st&SampleAux != 0 {
		n := c.u64("aux size")
		m.Aux = c.bytes(n, "aux data")
	}
	if c.err != nil {
		return nil, c.err
	}
	return s, nil
}

// regSet decodes a sample's register set: its ABI, then n registers where the ABI is not 0 (a
// kernel thread has no user registers), into the decoder's buffer buf unless fresh. abiWhat and
// regsWhat name the two in errors.
func (d *Decoder) regSet(c *fields, abiWhat, regsWhat string, n int, buf *[]uint64, fresh bool) (abi uint64, regs []uint64) {
	abi = c.u64(abiWhat)
	if abi == 0 {
		return 0, nil
	}
	regs = c.u64s(uint64(n), reuse(*buf, fresh), regsWhat)
	if !fresh {
		*buf = regs
	}
	return abi, orNil(regs)
}

// sampleRead decodes a sample's PERF_SAMPLE_READ into m.Read, Count, Siblings and Leader.
func (d *Decoder) sampleRead(c *fields, s *Sample, m *SampleMore, fresh bool) {
	m.Read = d.readValues(c, fresh)
	if d.f.ReadFormat&FormatGroup == 0 {
		s.Count = 0
		if len(m.Read) > 0 {
			s.Count = m.Read[0].Value
		}
		return
	}
	s.Count = valueOf(m.Read, s.ID)
	s.Leader = len(m.Read) > 0 && m.Read[0].ID == s.ID
	sibs := reuse(d.sibs, fresh)
	for _, v := range m.Read {
		sibs = append(sibs, v.Value)
	}
	if !fresh {
		d.sibs = sibs
	}
	s.Siblings = orNil(sibs)
}

// valueOf returns the value of event id in a group read; the leader's (the first) where no event
// has id (a record without PERF_SAMPLE_IDENTIFIER, a read without PERF_FORMAT_ID).
func valueOf(vals []ReadValue, id uint64) uint64 {
	for _, v := range vals {
		if v.ID == id {
			return v.Value
		}
	}
	if len(vals) > 0 {
		return vals[0].Value
	}
	return 0
}

// readValues decodes a struct read_format of the format's read format.
func (d *Decoder) readValues(c *fields, fresh bool) []ReadValue {
	rf := d.f.ReadFormat
	vals := reuse(d.vals, fresh)
	if rf&FormatGroup == 0 {
		v := ReadValue{Value: c.u64("read value")}
		if rf&FormatTotalTimeEnabled != 0 {
			v.TimeEnabled = c.u64("time enabled")
		}
		if rf&FormatTotalTimeRunning != 0 {
			v.TimeRunning = c.u64("time running")
		}
		if rf&FormatID != 0 {
			v.ID = c.u64("read id")
		}
		if rf&FormatLost != 0 {
			v.Lost = c.u64("read lost")
		}
		vals = append(vals, v)
	} else {
		at := c.off
		n := c.u64("group read size")
		var en, run uint64
		if rf&FormatTotalTimeEnabled != 0 {
			en = c.u64("time enabled")
		}
		if rf&FormatTotalTimeRunning != 0 {
			run = c.u64("time running")
		}
		per := uint64(8 * (1 + bits.OnesCount64(rf&(FormatID|FormatLost))))
		if n > c.left()/per {
			if c.err == nil {
				if n <= math.MaxUint64/per {
					c.err = fmt.Errorf("group read of %d events at byte %d needs %d bytes at byte %d of its %d%s", n, at, n*per, c.off, len(c.b), c.tail())
				} else {
					c.err = fmt.Errorf("group read of %d events at byte %d does not fit in the record's %d bytes%s", n, at, len(c.b), c.tail())
				}
			}
			c.end = -1
		} else {
			for range n {
				v := ReadValue{Value: c.u64("group read value"), TimeEnabled: en, TimeRunning: run}
				if rf&FormatID != 0 {
					v.ID = c.u64("group read id")
				}
				if rf&FormatLost != 0 {
					v.Lost = c.u64("group read lost")
				}
				vals = append(vals, v)
			}
		}
	}
	if !fresh {
		d.vals = vals
	}
	return orNil(vals)
}

// branchStack decodes a sample's PERF_SAMPLE_BRANCH_STACK.
func (d *Decoder) branchStack(c *fields, s *SampleMore, fresh bool) {
	n := c.u64("branch count")
	if d.f.BranchSampleType&BranchHWIndex != 0 {
		s.BranchHWIndex = c.u64("branch hw index")
	}
	per := uint64(24)
	if d.f.BranchSampleType&BranchCounters != 0 {
		per += 8
	}
	if n > c.left()/per {
		c.failWords(n, per, "branch stack")
		s.Branches = nil
		return
	}
	br := reuse(d.branches, fresh)
	for range n {
		br = append(br, Branch{From: c.u64("branch from"), To: c.u64("branch to"), Flags: c.u64("branch flags")})
	}
	if d.f.BranchSampleType&BranchCounters != 0 {
		for i := range br {
			br[i].Counters = c.u64("branch counters")
		}
	}
	if !fresh {
		d.branches = br
	}
	s.Branches = orNil(br)
}

// sampleID decodes the sample_id t into its fields (0 for those the format lacks).
func (d *Decoder) sampleID(t []byte) (pid, tid uint32, time, id uint64, cpu uint32) {
	le := binary.LittleEndian
	if d.sidTid >= 0 {
		pid, tid = le.Uint32(t[d.sidTid:]), le.Uint32(t[d.sidTid+4:])
	}
	if d.sidTime >= 0 {
		time = le.Uint64(t[d.sidTime:])
	}
	if d.sidID >= 0 {
		id = le.Uint64(t[d.sidID:])
	}
	if d.sidCPU >= 0 {
		cpu = le.Uint32(t[d.sidCPU:])
	}
	return pid, tid, time, id, cpu
}

// set sets the header of a decoded record.
func (h *Header) set(typ uint32, misc, size uint16) {
	h.Type, h.Misc, h.Size, h.Offset, h.Event = typ, misc, size, 0, 0
}

// decodeOther decodes a record other than a sample: the kernel's end with a sample_id, where the
// format has one. As in decodeSample, the records and the fields reader are set a field at a
// time, each field of a record's type whatever the record holds (a composite value copied in
// stalled on the stores that built it: decoding took twice as long).
func (d *Decoder) decodeOther(rec []byte, typ uint32, misc, size uint16, fresh bool) (Record, error) {
	var c fields
	c.b, c.off, c.end = rec, 8, len(rec)
	var pid, tid, cpu uint32
	var time, id uint64
	if typ < RecordUserTypeStart && d.idSize > 0 {
		if len(rec)-8 < d.idSize {
			return nil, fmt.Errorf("%d bytes after the header, fewer than its %d-byte sample_id", len(rec)-8, d.idSize)
		}
		c.end = len(rec) - d.idSize
		pid, tid, time, id, cpu = d.sampleID(rec[c.end:])
	}
	var out Record
	switch typ {
	case RecordMmap, RecordMmap2:
		m := slot(&d.mmap, fresh)
		m.set(typ, misc, size)
		m.Time, m.ID, m.CPU = time, id, cpu
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Addr, m.Len, m.Pgoff = c.u64("addr"), c.u64("len"), c.u64("pgoff")
		m.Maj, m.Min, m.Ino, m.InoGen, m.Prot, m.Flags, m.BuildID = 0, 0, 0, 0, 0, 0, nil
		if typ == RecordMmap2 {
			if misc&MiscMmapBuildID != 0 {
				if b := c.bytes(24, "build id"); b != nil { // u8 size, 3 reserved, 20 bytes
					m.BuildID = b[4 : 4+min(int(b[0]), 20)]
				}
			} else {
				m.Maj, m.Min = c.u32("major"), c.u32("minor")
				m.Ino, m.InoGen = c.u64("inode"), c.u64("inode generation")
			}
			m.Prot, m.Flags = c.u32("prot"), c.u32("flags")
		}
		m.Filename = c.cstring("filename")
		m.Executable = misc&MiscMmapData == 0 && (typ == RecordMmap || m.Prot&protExec != 0)
		out = m
	case RecordComm:
		m := slot(&d.comm, fresh)
		m.set(typ, misc, size)
		m.Exec, m.Time, m.ID, m.CPU = misc&MiscCommExec != 0, time, id, cpu
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Comm = c.cstring("comm")
		out = m
	case RecordFork:
		m := slot(&d.fork, fresh)
		m.set(typ, misc, size)
		m.Pid, m.Ppid, m.Tid, m.Ptid = c.u32("pid"), c.u32("ppid"), c.u32("tid"), c.u32("ptid")
		m.Time, m.SampleIDTime, m.ID, m.CPU = c.u64("time"), time, id, cpu
		out = m
	case RecordExit:
		m := slot(&d.exit, fresh)
		m.set(typ, misc, size)
		m.Pid, m.Ppid, m.Tid, m.Ptid = c.u32("pid"), c.u32("ppid"), c.u32("tid"), c.u32("ptid")
		m.Time, m.SampleIDTime, m.ID, m.CPU = c.u64("time"), time, id, cpu
		out = m
	case RecordRead:
		m := slot(&d.read, fresh)
		m.set(typ, misc, size)
		m.Time, m.ID, m.CPU = time, id, cpu
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Values = d.readValues(&c, fresh)
		m.Value = 0
		if d.f.ReadFormat&FormatGroup != 0 {
			m.Value = valueOf(m.Values, id)
		} else if len(m.Values) > 0 {
			m.Value = m.Values[0].Value
		}
		out = m
	case RecordLost:
		m := slot(&d.lost, fresh)
		m.set(typ, misc, size)
		m.Pid, m.Tid, m.Time, m.CPU = pid, tid, time, cpu
		m.ID, m.Lost = c.u64("id"), c.u64("lost")
		out = m
	case RecordLostSamples:
		m := slot(&d.lostS, fresh)
		m.set(typ, misc, size)
		m.Pid, m.Tid, m.Time, m.ID, m.CPU = pid, tid, time, id, cpu
		m.Lost = c.u64("lost")
		out = m
	case RecordThrottle, RecordUnthrottle:
		m := slot(&d.thr, fresh)
		m.set(typ, misc, size)
		m.Unthrottle, m.SampleIDTime, m.Pid, m.Tid, m.CPU = typ == RecordUnthrottle, time, pid, tid, cpu
		m.Time, m.ID, m.StreamID = c.u64("time"), c.u64("id"), c.u64("stream id")
		out = m
	case RecordSwitch, RecordSwitchCPUWide:
		m := slot(&d.sw, fresh)
		m.set(typ, misc, size)
		m.Pid, m.Tid, m.CPU, m.Time, m.ID = pid, tid, cpu, time, id
		m.Out, m.Preempt = misc&MiscSwitchOut != 0, misc&MiscSwitchOutPreempt != 0
		m.NextPrevPid, m.NextPrevTid = 0, 0
		if typ == RecordSwitchCPUWide {
			m.NextPrevPid, m.NextPrevTid = c.u32("next/prev pid"), c.u32("next/prev tid")
		}
		out = m
	default:
		m := slot(&d.unknown, fresh)
		m.set(typ, misc, size)
		m.Data = rec[8:c.end:c.end]
		m.Pid, m.Tid, m.Time, m.ID, m.CPU = pid, tid, time, id, cpu
		out = m
	}
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}

// protExec is PROT_EXEC in an MMAP2's prot.
const protExec = 0x4
