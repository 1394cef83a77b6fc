package perfdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// Record types: the kernel's (PERF_RECORD_*) and those perf adds to its files.
const (
	RecordMmap          uint32 = 1
	RecordLost          uint32 = 2
	RecordComm          uint32 = 3
	RecordExit          uint32 = 4
	RecordThrottle      uint32 = 5
	RecordUnthrottle    uint32 = 6
	RecordFork          uint32 = 7
	RecordRead          uint32 = 8
	RecordSample        uint32 = 9
	RecordMmap2         uint32 = 10
	RecordAux           uint32 = 11
	RecordItraceStart   uint32 = 12
	RecordLostSamples   uint32 = 13
	RecordSwitch        uint32 = 14
	RecordSwitchCPUWide uint32 = 15
	RecordNamespaces    uint32 = 16
	RecordKsymbol       uint32 = 17
	RecordBPFEvent      uint32 = 18
	RecordCgroup        uint32 = 19
	RecordTextPoke      uint32 = 20
	RecordAuxOutputHWID uint32 = 21
	recordKernelMax     uint32 = 64 // the kernel's types are below; perf's own from here

	RecordHeaderAttr        uint32 = 64
	RecordHeaderEventType   uint32 = 65
	RecordHeaderTracingData uint32 = 66
	RecordHeaderBuildID     uint32 = 67
	RecordFinishedRound     uint32 = 68
	RecordIDIndex           uint32 = 69
	RecordAuxtraceInfo      uint32 = 70
	RecordAuxtrace          uint32 = 71
	RecordAuxtraceError     uint32 = 72
	RecordThreadMap         uint32 = 73
	RecordCPUMap            uint32 = 74
	RecordStatConfig        uint32 = 75
	RecordStat              uint32 = 76
	RecordStatRound         uint32 = 77
	RecordEventUpdate       uint32 = 78
	RecordTimeConv          uint32 = 79
	RecordHeaderFeature     uint32 = 80
	RecordCompressed        uint32 = 81
	RecordFinishedInit      uint32 = 82
	RecordCompressed2       uint32 = 83
)

// The cpumode bits of a record's misc field, and other misc bits.
const (
	cpumodeMask        = 7
	cpumodeKernel      = 1
	CPUModeUser        = 2
	CPUModeKernel      = 1
	CPUModeHypervisor  = 3
	CPUModeGuestKernel = 4
	CPUModeGuestUser   = 5
	miscMmapData       = 1 << 13 // an MMAP of data, not code
	miscCommExec       = 1 << 13 // a COMM at exec
	miscMmapBuildID    = 1 << 14 // an MMAP2 that carries a build id in place of the device and inode
	miscSwitchOut      = 1 << 13
)

// Header is what every record has: its type, misc bits and size, where it is in the file, and the
// fields of its sample_id (for a sample, of the sample itself).
type Header struct {
	Type   uint32
	Misc   uint16
	Size   uint16
	Offset int64 // in the file
	Attr   *Attr // the event that wrote it, where known
	Pid    uint32
	Tid    uint32
	Time   uint64 // 0 where the record has none
	ID     uint64
	CPU    uint32
}

// Head returns the record's header.
func (h *Header) Head() *Header { return h }

// CPUMode is the misc field's cpumode: CPUModeUser, CPUModeKernel, ...
func (h *Header) CPUMode() uint16 { return h.Misc & cpumodeMask }

// Record is one record of the data section: *Sample, *Mmap, *Comm, *Fork, *Exit, *Lost,
// *LostSamples, *Throttle, *Read, *Switch, *HeaderAttr, *HeaderBuildID, *FinishedRound, *IDIndex,
// *ThreadMap, *Feature, or *Unknown for the others.
type Record interface {
	Head() *Header
}

// Sample is a PERF_RECORD_SAMPLE, with the fields its event's sample type has.
type Sample struct {
	Header
	IP, Addr, StreamID, Period uint64
	Read                       []ReadValue // PERF_SAMPLE_READ: one value, or a group's
	Callchain                  []uint64    // raw, leaf first, with the PERF_CONTEXT_* markers
	Raw                        []byte
	Branches                   []Branch
	BranchHWIndex              uint64
	UserRegsABI                uint64   // 0: no user registers (a kernel thread)
	UserRegs                   []uint64 // in the order of the attr's SampleRegsUser bits
	UserStack                  []byte   // the copy of the user stack from SP up, UserStackDynSize bytes of it filled
	UserStackDynSize           uint64
	Weight                     uint64
	DataSrc                    uint64
	Transaction                uint64
	IntrRegsABI                uint64
	IntrRegs                   []uint64
	PhysAddr                   uint64
	Cgroup                     uint64
	DataPageSize, CodePageSize uint64
	Aux                        []byte
}

// ReadValue is one counter's value in a READ record or a sample's PERF_SAMPLE_READ.
type ReadValue struct {
	Value, ID, Lost          uint64
	TimeEnabled, TimeRunning uint64
}

// Branch is one entry of a sample's branch stack.
type Branch struct {
	From, To, Flags, Counters uint64
}

// Mmap is a PERF_RECORD_MMAP or PERF_RECORD_MMAP2: a mapping made by a process (Pid 0xffffffff, -1: the
// kernel's). In this and the other task records, the header's Pid and Tid are the record's own.
type Mmap struct {
	Header
	Mmap2            bool
	Addr, Len, Pgoff uint64
	Maj, Min         uint32
	Ino, InoGen      uint64
	BuildID          []byte // MMAP2 with the build id flag
	Prot, Flags      uint32
	Filename         string
}

// Executable reports whether the mapping is code (not a data mapping of mmap_data).
func (m *Mmap) Executable() bool {
	if m.Misc&miscMmapData != 0 {
		return false
	}
	return !m.Mmap2 || m.Prot&0x4 != 0 // PROT_EXEC
}

// Comm is a PERF_RECORD_COMM: a thread's name changed, or (Exec) the process called exec.
type Comm struct {
	Header
	Comm string
	Exec bool
}

// Fork is a PERF_RECORD_FORK: thread Tid of process Pid was created by Ptid of Ppid, at Time (its
// sample_id's, else its own).
type Fork struct {
	Header
	Ppid, Ptid uint32
}

// Exit is a PERF_RECORD_EXIT: thread Tid of process Pid exited at Time.
type Exit struct {
	Header
	Ppid, Ptid uint32
}

// Lost is a PERF_RECORD_LOST: the ring buffer was full and Lost records were dropped.
type Lost struct {
	Header
	LostID, Lost uint64
}

// LostSamples is a PERF_RECORD_LOST_SAMPLES: samples the kernel could not take.
type LostSamples struct {
	Header
	Lost uint64
}

// Throttle is a PERF_RECORD_THROTTLE or UNTHROTTLE.
type Throttle struct {
	Header
	Unthrottle bool
}

// Read is a PERF_RECORD_READ: the counts of a thread's events at its exit (inherit_stat).
type Read struct {
	Header
	Values []ReadValue
}

// Switch is a PERF_RECORD_SWITCH or SWITCH_CPU_WIDE.
type Switch struct {
	Header
	Out                      bool
	NextPrevPid, NextPrevTid uint32
}

// HeaderAttr is a PERF_RECORD_HEADER_ATTR (pipe mode): an event and its ids, added to File.Attrs.
type HeaderAttr struct {
	Header
	Attr *Attr
}

// HeaderBuildID is a PERF_RECORD_HEADER_BUILD_ID (pipe mode), added to File.BuildIDs.
type HeaderBuildID struct {
	Header
	BuildID BuildID
}

// FinishedRound is a PERF_RECORD_FINISHED_ROUND: every record before it is older than every
// record after the next one (see Ordered).
type FinishedRound struct{ Header }

// IDIndex is a PERF_RECORD_ID_INDEX: which event, CPU and thread each id is.
type IDIndex struct {
	Header
	Entries []IDEntry
}

// IDEntry is one id of an IDIndex.
type IDEntry struct{ ID, Idx, CPU, Tid uint64 }

// ThreadMap is a PERF_RECORD_THREAD_MAP: the threads perf record opened its events on.
type ThreadMap struct {
	Header
	Threads []ThreadEntry
}

// ThreadEntry is one thread of a ThreadMap.
type ThreadEntry struct {
	Pid  uint64
	Comm string
}

// Feature is a PERF_RECORD_HEADER_FEATURE (pipe mode): a feature section, decoded into the File.
type Feature struct {
	Header
	FeatureID uint64
}

// Unknown is a record this package does not decode (ksymbol, namespaces, cgroup, auxtrace, ...).
type Unknown struct {
	Header
	Data []byte // after the 8-byte header
}

// Reader reads the records of a data section in file order; the records that COMPRESSED records
// hold (perf record -z) come in their place, decompressed (see zstream), not the COMPRESSED
// records themselves. Each record it returns is its own: the reader does not reuse it.
type Reader struct {
	f   *File
	r   *bufio.Reader
	off int64
	err error
	z   *zstream // the decompressed data of COMPRESSED records, from the first one on
	n   int64    // records returned
	cut *Cut
}

// File returns the file the reader reads.
func (rd *Reader) File() *File { return rd.f }

// Offset returns the offset in the file of the record after those read.
func (rd *Reader) Offset() int64 { return rd.off }

// Cut is where a stream in pipe mode ends inside a record: perf record (or what carried its
// output) was stopped while writing it. The records before it are read; io.EOF comes in its place.
type Cut struct {
	Offset     int64  // where the record cut short begins in the stream
	Type       uint32 // its type; 0 where its header is cut
	Have, Size int64  // the bytes of it the stream holds, and its size (0 where its header is cut)
	// Pending is the bytes of the data decompressed from the COMPRESSED records that were left
	// unread, the start of a record whose end the cut lost, at byte PendingAt of that data.
	Pending, PendingAt int64
	Records            int64 // the records read
}

// String says what was cut, for a warning.
func (c *Cut) String() string {
	var lost []string
	if c.Have > 0 {
		what := fmt.Sprintf("a record of type %s, %d of its %d bytes", RecordName(c.Type), c.Have, c.Size)
		if c.Size == 0 {
			what = fmt.Sprintf("a record's header, %d of its 8 bytes", c.Have)
		}
		lost = append(lost, fmt.Sprintf("%s, at offset %#x", what, c.Offset))
	}
	if c.Pending > 0 {
		lost = append(lost, fmt.Sprintf("the first %d bytes of a record, at byte %d of the data decompressed from the COMPRESSED records", c.Pending, c.PendingAt))
	}
	recs := "records before it are"
	if c.Records == 1 {
		recs = "record before it is"
	}
	return fmt.Sprintf("the stream ends inside a record (perf record was stopped while writing it): the %d %s read; cut short and not read: %s",
		c.Records, recs, strings.Join(lost, "; and "))
}

// Cut returns where a stream in pipe mode ended inside a record, once Next has returned io.EOF;
// nil where it ended after one.
func (rd *Reader) Cut() *Cut {
	if rd.cut != nil {
		rd.cut.Records = rd.n
	}
	return rd.cut
}

// cutShort notes that a stream in pipe mode ends inside a record, at off.
func (rd *Reader) cutShort(off int64, typ uint32, have, size int64) {
	if rd.cut == nil {
		rd.cut = &Cut{Offset: off, Type: typ, Have: have, Size: size}
	}
}

// maxRecord is the largest record: the size field has 16 bits.
const maxRecord = 1 << 16

// Next returns the next record, or io.EOF after the last (see Cut for a stream that ends inside one).
func (rd *Reader) Next() (Record, error) {
	if rd.err != nil {
		return nil, rd.err
	}
	rec, err := rd.next()
	if err != nil {
		rd.err = err
		return nil, err
	}
	rd.n++
	return rec, nil
}

func (rd *Reader) next() (Record, error) {
	for {
		if rd.z != nil {
			rec, err := rd.z.next()
			if rec != nil || err != nil {
				return rec, err
			}
		}
		h, buf, err := rd.readRaw()
		if err == io.EOF && rd.z != nil {
			return nil, rd.z.atEnd()
		}
		if err != nil {
			return nil, err
		}
		if h.Type == RecordCompressed || h.Type == RecordCompressed2 {
			if err := rd.feed(h, buf); err != nil {
				return nil, err
			}
			continue
		}
		rec, err := rd.f.decode(h, buf[8:])
		if err != nil {
			return nil, rd.f.errorf(h.Offset, "%s record of %d bytes: %v", RecordName(h.Type), h.Size, err)
		}
		if skip := trailing(h.Type, buf); skip > 0 {
			if m, err := rd.r.Discard(int(min(skip, 1<<62))); uint64(m) != skip {
				if (err == nil || errors.Is(err, io.EOF)) && rd.f.Pipe {
					rd.cutShort(h.Offset, h.Type, int64(h.Size)+int64(m), int64(h.Size)+int64(min(skip, 1<<62)))
					return nil, io.EOF
				}
				if err == nil || errors.Is(err, io.EOF) {
					return nil, rd.f.errorf(h.Offset, "%s record: its %d bytes of data run past the end", RecordName(h.Type), skip)
				}
				return nil, fmt.Errorf("%s: offset %#x: %w", rd.f.Name, rd.off, err)
			}
			rd.off += int64(skip)
		}
		return rec, nil
	}
}

// readRaw reads the next record of the data section, its header and its bytes (the header's
// included), or io.EOF at the end; in pipe mode, io.EOF too where the stream ends inside a record
// (see Cut).
func (rd *Reader) readRaw() (Header, []byte, error) {
	f := rd.f
	var hb [8]byte
	n, err := io.ReadFull(rd.r, hb[:])
	if err == io.EOF || rd.cut != nil {
		return Header{}, nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF && f.Pipe {
		rd.cutShort(rd.off, 0, int64(n), 0)
		return Header{}, nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		return Header{}, nil, f.errorf(rd.off, "the data ends in a record header (%d of 8 bytes): the file was cut short", n)
	}
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: offset %#x: %w", f.Name, rd.off, err)
	}
	h := parseHeader(hb[:], rd.off)
	if h.Size < 8 {
		return Header{}, nil, f.errorf(rd.off, "record of type %d says it has %d bytes, fewer than its 8-byte header", h.Type, h.Size)
	}
	buf := make([]byte, h.Size)
	copy(buf, hb[:])
	if n, err := io.ReadFull(rd.r, buf[8:]); err != nil {
		if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && f.Pipe {
			rd.cutShort(rd.off, h.Type, int64(8+n), int64(h.Size))
			return Header{}, nil, io.EOF
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, nil, f.errorf(rd.off, "the data ends inside a record of type %d (%d of %d bytes): the file was cut short", h.Type, 8+n, h.Size)
		}
		return Header{}, nil, fmt.Errorf("%s: offset %#x: %w", f.Name, rd.off, err)
	}
	rd.off += int64(h.Size)
	return h, buf, nil
}

// parseHeader decodes a perf_event_header at offset off.
func parseHeader(b []byte, off int64) Header {
	le := binary.LittleEndian
	return Header{Type: le.Uint32(b), Misc: le.Uint16(b[4:]), Size: le.Uint16(b[6:]), Offset: off}
}

// trailing returns how many bytes of data follow a record outside its size: those of AUXTRACE and
// HEADER_TRACING_DATA records (whose decoding checked the size field is there).
func trailing(typ uint32, buf []byte) uint64 {
	switch typ {
	case RecordAuxtrace:
		return binary.LittleEndian.Uint64(buf[8:])
	case RecordHeaderTracingData:
		return (uint64(binary.LittleEndian.Uint32(buf[8:])) + 7) &^ 7
	}
	return 0
}

// RecordName names a record type in messages: MMAP, SAMPLE, ..., type-N for one without a name here.
func RecordName(t uint32) string {
	names := map[uint32]string{RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
		RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK", RecordRead: "READ",
		RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordLostSamples: "LOST_SAMPLES", RecordSwitch: "SWITCH",
		RecordSwitchCPUWide: "SWITCH_CPU_WIDE", RecordHeaderAttr: "HEADER_ATTR", RecordHeaderBuildID: "HEADER_BUILD_ID",
		RecordFinishedRound: "FINISHED_ROUND", RecordIDIndex: "ID_INDEX", RecordThreadMap: "THREAD_MAP",
		RecordHeaderFeature: "HEADER_FEATURE", RecordAuxtrace: "AUXTRACE", RecordHeaderTracingData: "HEADER_TRACING_DATA",
		RecordCompressed: "COMPRESSED", RecordCompressed2: "COMPRESSED"}
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("type-%d", t)
}

// fields reads little-endian fields of a record body, failing once on a short read.
type fields struct {
	b   []byte
	off int
	err error
}

func (c *fields) need(n uint64, what string) bool {
	if c.err != nil {
		return false
	}
	if n > uint64(len(c.b)-c.off) {
		c.err = fmt.Errorf("%s needs %d bytes at byte %d of its %d", what, n, c.off+8, len(c.b)+8)
		return false
	}
	return true
}

func (c *fields) u64(what string) uint64 {
	if !c.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *fields) u32(what string) uint32 {
	if !c.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

func (c *fields) bytes(n uint64, what string) []byte {
	if !c.need(n, what) {
		return nil
	}
	v := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return v
}

func (c *fields) u64s(n uint64, what string) []uint64 {
	if n > uint64(len(c.b)-c.off)/8 {
		c.need(n*8, what) // the error
		if c.err == nil {
			c.err = fmt.Errorf("%s of %d words does not fit", what, n)
		}
		return nil
	}
	raw := c.bytes(n*8, what)
	if raw == nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return out
}

func (c *fields) rest() []byte { return c.b[c.off:] }

// attrOf returns the event of a record whose id word is id.
func (f *File) attrOf(id uint64, haveID bool) (*Attr, error) {
	if len(f.Attrs) == 0 {
		return nil, errors.New("no event attributes precede it")
	}
	if len(f.Attrs) == 1 || !haveID {
		return f.Attrs[0], nil
	}
	if a, ok := f.ids[id]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("event id %d is not among the ids of the file's %d events", id, len(f.Attrs))
}

// decode decodes a record's body (after its 8-byte header).
func (f *File) decode(h Header, body []byte) (Record, error) {
	switch {
	case h.Type == RecordSample:
		return f.decodeSample(h, body)
	case h.Type < recordKernelMax:
		return f.decodeKernel(h, body)
	}
	return f.decodeUser(h, body)
}

// decodeSample decodes a sample by its event's sample type.
func (f *File) decodeSample(h Header, body []byte) (Record, error) {
	if len(f.Attrs) == 0 {
		return nil, errors.New("no event attributes precede it")
	}
	var id uint64
	pos := f.Attrs[0].idPos()
	if pos >= 0 && 8*pos+8 <= len(body) {
		id = binary.LittleEndian.Uint64(body[8*pos:])
	}
	a, err := f.attrOf(id, pos >= 0 && 8*pos+8 <= len(body))
	if err != nil {
		return nil, err
	}
	s := &Sample{Header: h}
	s.Attr = a
	st := a.SampleType
	c := &fields{b: body}
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
	if st&SampleStreamID != 0 {
		s.StreamID = c.u64("stream id")
	}
	if st&SampleCPU != 0 {
		s.CPU = c.u32("cpu")
		c.u32("cpu reserved")
	}
	s.Period = a.SamplePeriod
	if a.Freq() {
		s.Period = 0
	}
	if st&SamplePeriod != 0 {
		s.Period = c.u64("period")
	}
	if st&SampleRead != 0 {
		s.Read = readValues(c, a.ReadFormat)
	}
	if st&SampleCallchain != 0 {
		n := c.u64("callchain length")
		s.Callchain = c.u64s(n, "callchain")
	}
	if st&SampleRaw != 0 {
		n := c.u32("raw size")
		s.Raw = c.bytes(uint64(n), "raw data")
	}
	if st&SampleBranchStack != 0 {
		n := c.u64("branch count")
		if a.BranchSampleType&branchHWIndex != 0 {
			s.BranchHWIndex = c.u64("branch hw index")
		}
		w := uint64(3)
		if n > uint64(len(c.rest()))/(8*w) {
			c.need(n*8*w, "branch stack")
		} else {
			for i := uint64(0); i < n; i++ {
				s.Branches = append(s.Branches, Branch{From: c.u64("branch from"), To: c.u64("branch to"), Flags: c.u64("branch flags")})
			}
			if a.BranchSampleType&branchCounters != 0 {
				for i := range s.Branches {
					s.Branches[i].Counters = c.u64("branch counters")
				}
			}
		}
	}
	if st&SampleRegsUser != 0 {
		s.UserRegsABI = c.u64("user regs abi")
		if s.UserRegsABI != 0 {
			s.UserRegs = c.u64s(uint64(bits.OnesCount64(a.SampleRegsUser)), "user regs")
		}
	}
	if st&SampleStackUser != 0 {
		n := c.u64("user stack size")
		if n != 0 {
			s.UserStack = c.bytes(n, "user stack")
			s.UserStackDynSize = c.u64("user stack dyn_size")
			if c.err == nil && s.UserStackDynSize > n {
				c.err = fmt.Errorf("user stack dyn_size %d exceeds its size %d", s.UserStackDynSize, n)
			}
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 {
		s.Weight = c.u64("weight")
	}
	if st&SampleDataSrc != 0 {
		s.DataSrc = c.u64("data source")
	}
	if st&SampleTransaction != 0 {
		s.Transaction = c.u64("transaction")
	}
	if st&SampleRegsIntr != 0 {
		s.IntrRegsABI = c.u64("intr regs abi")
		if s.IntrRegsABI != 0 {
			s.IntrRegs = c.u64s(uint64(bits.OnesCount64(a.SampleRegsIntr)), "intr regs")
		}
	}
	if st&SamplePhysAddr != 0 {
		s.PhysAddr = c.u64("physical address")
	}
	if st&SampleCgroup != 0 {
		s.Cgroup = c.u64("cgroup")
	}
	if st&SampleDataPageSize != 0 {
		s.DataPageSize = c.u64("data page size")
	}
	if st&SampleCodePageSize != 0 {
		s.CodePageSize = c.u64("code page size")
	}
	if st&SampleAux != 0 {
		n := c.u64("aux size")
		s.Aux = c.bytes(n, "aux data")
	}
	if c.err != nil {
		return nil, c.err
	}
	return s, nil
}

// readValues decodes a struct read_format.
func readValues(c *fields, rf uint64) []ReadValue {
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
		return []ReadValue{v}
	}
	n := c.u64("group size")
	var en, run uint64
	if rf&FormatTotalTimeEnabled != 0 {
		en = c.u64("time enabled")
	}
	if rf&FormatTotalTimeRunning != 0 {
		run = c.u64("time running")
	}
	per := uint64(1 + bits.OnesCount64(rf&(FormatID|FormatLost)))
	if n > uint64(len(c.rest()))/(8*per) {
		c.need(n*8*per, "read group")
		return nil
	}
	out := make([]ReadValue, n)
	for i := range out {
		out[i] = ReadValue{Value: c.u64("read value"), TimeEnabled: en, TimeRunning: run}
		if rf&FormatID != 0 {
			out[i].ID = c.u64("read id")
		}
		if rf&FormatLost != 0 {
			out[i].Lost = c.u64("read lost")
		}
	}
	return out
}

// sampleID decodes a non-sample record's sample_id trailer into h, and returns the body without it.
func (f *File) sampleID(h *Header, body []byte) ([]byte, error) {
	if len(f.Attrs) == 0 {
		return body, nil // perf's synthesized records before any attribute (pipe mode) have none
	}
	a := f.Attrs[0]
	if !a.SampleIDAll() {
		h.Attr = a
		return body, nil
	}
	size := a.sampleIDSize()
	if len(body) < size {
		return nil, fmt.Errorf("%d bytes after the header, fewer than its %d-byte sample_id", len(body), size)
	}
	if pos := a.isPos(); pos > 0 && len(f.Attrs) > 1 {
		id := binary.LittleEndian.Uint64(body[len(body)-8*pos:])
		if other, ok := f.ids[id]; ok && other.sampleIDSize() == size {
			a = other
		}
	}
	h.Attr = a
	c := &fields{b: body[len(body)-size:]}
	st := a.SampleType
	if st&SampleTID != 0 {
		h.Pid, h.Tid = c.u32("pid"), c.u32("tid")
	}
	if st&SampleTime != 0 {
		h.Time = c.u64("time")
	}
	if st&SampleID != 0 {
		h.ID = c.u64("id")
	}
	if st&SampleStreamID != 0 {
		c.u64("stream id")
	}
	if st&SampleCPU != 0 {
		h.CPU = c.u32("cpu")
		c.u32("cpu reserved")
	}
	if st&SampleIdentifier != 0 {
		h.ID = c.u64("identifier")
	}
	return body[:len(body)-size], c.err
}

// decodeKernel decodes the records the kernel writes, other than samples.
func (f *File) decodeKernel(h Header, body []byte) (Record, error) {
	body, err := f.sampleID(&h, body)
	if err != nil {
		return nil, err
	}
	c := &fields{b: body}
	var rec Record
	switch h.Type {
	case RecordMmap, RecordMmap2:
		m := &Mmap{Header: h, Mmap2: h.Type == RecordMmap2}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Addr, m.Len, m.Pgoff = c.u64("addr"), c.u64("len"), c.u64("pgoff")
		if m.Mmap2 {
			if h.Misc&miscMmapBuildID != 0 {
				if id := c.bytes(24, "build id"); id != nil {
					m.BuildID = append([]byte(nil), id[4:4+min(int(id[0]), 20)]...)
				}
			} else {
				m.Maj, m.Min = c.u32("major"), c.u32("minor")
				m.Ino, m.InoGen = c.u64("inode"), c.u64("inode generation")
			}
			m.Prot, m.Flags = c.u32("prot"), c.u32("flags")
		}
		if c.err == nil {
			m.Filename = cstring(c.rest())
		}
		rec = m
	case RecordComm:
		m := &Comm{Header: h, Exec: h.Misc&miscCommExec != 0}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		if c.err == nil {
			m.Comm = cstring(c.rest())
		}
		rec = m
	case RecordFork, RecordExit:
		var ppid, ptid uint32
		h.Pid, ppid, h.Tid, ptid = c.u32("pid"), c.u32("ppid"), c.u32("tid"), c.u32("ptid")
		if own := c.u64("time"); h.Time == 0 { // the sample_id's time, as perf orders by, where there is one
			h.Time = own
		}
		if h.Type == RecordFork {
			rec = &Fork{Header: h, Ppid: ppid, Ptid: ptid}
		} else {
			rec = &Exit{Header: h, Ppid: ppid, Ptid: ptid}
		}
	case RecordLost:
		rec = &Lost{Header: h, LostID: c.u64("id"), Lost: c.u64("lost")}
	case RecordLostSamples:
		rec = &LostSamples{Header: h, Lost: c.u64("lost")}
	case RecordThrottle, RecordUnthrottle:
		t := &Throttle{Header: h, Unthrottle: h.Type == RecordUnthrottle}
		if tm := c.u64("time"); t.Time == 0 {
			t.Time = tm
		}
		rec = t
	case RecordRead:
		r := &Read{Header: h}
		r.Pid, r.Tid = c.u32("pid"), c.u32("tid")
		if h.Attr != nil {
			r.Values = readValues(c, h.Attr.ReadFormat)
		}
		rec = r
	case RecordSwitch, RecordSwitchCPUWide:
		s := &Switch{Header: h, Out: h.Misc&miscSwitchOut != 0}
		if h.Type == RecordSwitchCPUWide {
			s.NextPrevPid, s.NextPrevTid = c.u32("next/prev pid"), c.u32("next/prev tid")
		}
		rec = s
	default:
		rec = &Unknown{Header: h, Data: body}
	}
	if c.err != nil {
		return nil, c.err
	}
	return rec, nil
}

// decodeUser decodes the records perf adds.
func (f *File) decodeUser(h Header, body []byte) (Record, error) {
	c := &fields{b: body}
	switch h.Type {
	case RecordHeaderAttr:
		if len(body) < attrV0Size {
			return nil, fmt.Errorf("an attribute needs at least %d bytes, it has %d", attrV0Size, len(body))
		}
		size := int(binary.LittleEndian.Uint32(body[4:]))
		if size == 0 {
			size = attrV0Size
		}
		if size > len(body) || size%8 != 0 {
			return nil, fmt.Errorf("its attribute says it has %d bytes, of the %d after the header", size, len(body))
		}
		a, err := parseAttr(body[:size])
		if err != nil {
			return nil, err
		}
		c.off = size
		a.IDs = c.u64s(uint64(len(body)-size)/8, "ids")
		a.Name = a.defaultName()
		f.addAttr(a)
		return &HeaderAttr{Header: h, Attr: a}, nil
	case RecordHeaderBuildID:
		if len(body)+8 < buildIDSize {
			return nil, fmt.Errorf("a build id entry needs %d bytes", buildIDSize)
		}
		e := make([]byte, 8+len(body))
		copy(e[8:], body)
		b := decodeBuildID(e, h.Misc)
		f.addBuildID(b)
		return &HeaderBuildID{Header: h, BuildID: b}, nil
	case RecordFinishedRound:
		return &FinishedRound{Header: h}, nil
	case RecordIDIndex:
		n := c.u64("entry count")
		if n > uint64(len(body))/32 {
			return nil, fmt.Errorf("%d entries of 32 bytes do not fit in %d bytes", n, len(body))
		}
		x := &IDIndex{Header: h}
		for i := uint64(0); i < n; i++ {
			e := IDEntry{ID: c.u64("id"), Idx: c.u64("index"), CPU: c.u64("cpu"), Tid: c.u64("tid")}
			x.Entries = append(x.Entries, e)
			if e.Idx < uint64(len(f.Attrs)) {
				if _, ok := f.ids[e.ID]; !ok {
					f.ids[e.ID] = f.Attrs[e.Idx]
				}
			}
		}
		return x, c.err
	case RecordThreadMap:
		n := c.u64("thread count")
		if n > uint64(len(body))/24 {
			return nil, fmt.Errorf("%d threads of 24 bytes do not fit in %d bytes", n, len(body))
		}
		t := &ThreadMap{Header: h}
		for i := uint64(0); i < n; i++ {
			pid := c.u64("pid")
			t.Threads = append(t.Threads, ThreadEntry{Pid: pid, Comm: cstring(c.bytes(16, "comm"))})
		}
		return t, c.err
	case RecordHeaderFeature:
		id := c.u64("feature id")
		if c.err != nil {
			return nil, c.err
		}
		if id < featBits {
			f.Features[id] = true
			if f.wanted(int(id)) {
				if err := f.parseFeature(int(id), c.rest()); err != nil { // EVENT_DESC names its events, default names for ""
					return nil, fmt.Errorf("feature %s: %v", featureName(int(id)), err)
				}
			}
		}
		return &Feature{Header: h, FeatureID: id}, nil
	case RecordAuxtrace:
		if c.u64("size"); c.err != nil {
			return nil, c.err
		}
	case RecordHeaderTracingData:
		if c.u32("size"); c.err != nil {
			return nil, c.err
		}
	}
	return &Unknown{Header: h, Data: body}, nil
}
