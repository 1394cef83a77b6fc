package perfdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"er/internal/perfabi"
)

// The record types perf adds to its files (perf's tools/lib/perf/include/perf/event.h), from
// perfabi.RecordUserTypeStart on; the kernel's are perfabi's.
const (
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

// The records of a data section are perfabi.Records: the kernel's types (*perfabi.Sample,
// *perfabi.Mmap, ...), decoded by their event's perfabi.Decoder, and those perf adds, below
// (*HeaderAttr, *HeaderBuildID, *FinishedRound, *IDIndex, *ThreadMap, *Feature), or
// *perfabi.Unknown for the others. Each has its offset in the file, and the index of its event in
// File.Attrs (see File.AttrOf), in its perfabi.Header.

// HeaderAttr is a PERF_RECORD_HEADER_ATTR (pipe mode): an event and its ids, added to File.Attrs.
type HeaderAttr struct {
	perfabi.Header
	Attr *Attr
}

// HeaderBuildID is a PERF_RECORD_HEADER_BUILD_ID (pipe mode), added to File.BuildIDs.
type HeaderBuildID struct {
	perfabi.Header
	BuildID BuildID
}

// FinishedRound is a PERF_RECORD_FINISHED_ROUND: every record before it is older than every
// record after the next one (see Ordered).
type FinishedRound struct{ perfabi.Header }

// IDIndex is a PERF_RECORD_ID_INDEX: which event, CPU and thread each id is.
type IDIndex struct {
	perfabi.Header
	Entries []IDEntry
}

// IDEntry is one id of an IDIndex.
type IDEntry struct{ ID, Idx, CPU, Tid uint64 }

// ThreadMap is a PERF_RECORD_THREAD_MAP: the threads perf record opened its events on.
type ThreadMap struct {
	perfabi.Header
	Threads []ThreadEntry
}

// ThreadEntry is one thread of a ThreadMap.
type ThreadEntry struct {
	Pid  uint64
	Comm string
}

// Feature is a PERF_RECORD_HEADER_FEATURE (pipe mode): a feature section, decoded into the File.
type Feature struct {
	perfabi.Header
	FeatureID uint64
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
func (rd *Reader) Next() (perfabi.Record, error) {
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

func (rd *Reader) next() (perfabi.Record, error) {
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
		rec, err := rd.f.decode(h, buf)
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
func (rd *Reader) readRaw() (perfabi.Header, []byte, error) {
	f := rd.f
	var hb [8]byte
	n, err := io.ReadFull(rd.r, hb[:])
	if err == io.EOF || rd.cut != nil {
		return perfabi.Header{}, nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF && f.Pipe {
		rd.cutShort(rd.off, 0, int64(n), 0)
		return perfabi.Header{}, nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		return perfabi.Header{}, nil, f.errorf(rd.off, "the data ends in a record header (%d of 8 bytes): the file was cut short", n)
	}
	if err != nil {
		return perfabi.Header{}, nil, fmt.Errorf("%s: offset %#x: %w", f.Name, rd.off, err)
	}
	h := parseHeader(hb[:], rd.off)
	if h.Size < 8 {
		return perfabi.Header{}, nil, f.errorf(rd.off, "record of type %d says it has %d bytes, fewer than its 8-byte header", h.Type, h.Size)
	}
	buf := make([]byte, h.Size)
	copy(buf, hb[:])
	if n, err := io.ReadFull(rd.r, buf[8:]); err != nil {
		if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && f.Pipe {
			rd.cutShort(rd.off, h.Type, int64(8+n), int64(h.Size))
			return perfabi.Header{}, nil, io.EOF
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return perfabi.Header{}, nil, f.errorf(rd.off, "the data ends inside a record of type %d (%d of %d bytes): the file was cut short", h.Type, 8+n, h.Size)
		}
		return perfabi.Header{}, nil, fmt.Errorf("%s: offset %#x: %w", f.Name, rd.off, err)
	}
	rd.off += int64(h.Size)
	return h, buf, nil
}

// parseHeader decodes a perf_event_header at offset off.
func parseHeader(b []byte, off int64) perfabi.Header {
	le := binary.LittleEndian
	return perfabi.Header{Type: le.Uint32(b), Misc: le.Uint16(b[4:]), Size: le.Uint16(b[6:]), Offset: off}
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

// RecordName names a record type in messages: MMAP, SAMPLE, HEADER_ATTR, ..., type-N for one
// without a name here.
func RecordName(t uint32) string {
	if t < perfabi.RecordUserTypeStart {
		return perfabi.RecordName(t)
	}
	names := map[uint32]string{RecordHeaderAttr: "HEADER_ATTR", RecordHeaderEventType: "HEADER_EVENT_TYPE",
		RecordHeaderTracingData: "HEADER_TRACING_DATA", RecordHeaderBuildID: "HEADER_BUILD_ID", RecordFinishedRound: "FINISHED_ROUND",
		RecordIDIndex: "ID_INDEX", RecordAuxtraceInfo: "AUXTRACE_INFO", RecordAuxtrace: "AUXTRACE", RecordAuxtraceError: "AUXTRACE_ERROR",
		RecordThreadMap: "THREAD_MAP", RecordCPUMap: "CPU_MAP", RecordStatConfig: "STAT_CONFIG", RecordStat: "STAT",
		RecordStatRound: "STAT_ROUND", RecordEventUpdate: "EVENT_UPDATE", RecordTimeConv: "TIME_CONV",
		RecordHeaderFeature: "HEADER_FEATURE", RecordCompressed: "COMPRESSED", RecordFinishedInit: "FINISHED_INIT",
		RecordCompressed2: "COMPRESSED"}
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("type-%d", t)
}

// fields reads little-endian fields of the body of a record perf adds, failing once on a short read.
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

// eventOf returns the event of a kernel record rec (header included), as perf finds it: a sample's
// by the id word at the position the first event's sample type gives; another's by the id in its
// sample_id, where the first event has sample_id_all, else the first event. nil: no event precedes
// a record other than a sample (perf's synthesized records in pipe mode).
func (f *File) eventOf(typ uint32, rec []byte) (*Attr, error) {
	body := rec[8:]
	if typ == perfabi.RecordSample {
		if len(f.Attrs) == 0 {
			return nil, errors.New("no event attributes precede it")
		}
		var id uint64
		pos := f.Attrs[0].Format().IDPos()
		have := pos >= 0 && 8*pos+8 <= len(body)
		if have {
			id = binary.LittleEndian.Uint64(body[8*pos:])
		}
		return f.attrOf(id, have)
	}
	if len(f.Attrs) == 0 {
		return nil, nil
	}
	a := f.Attrs[0]
	if !a.SampleIDAll() || len(f.Attrs) == 1 {
		return a, nil
	}
	size := a.Format().SampleIDSize()
	if pos := a.Format().SampleIDPos(); pos > 0 && len(body) >= size {
		id := binary.LittleEndian.Uint64(body[len(body)-8*pos:])
		if other, ok := f.ids[id]; ok && other.Format().SampleIDSize() == size {
			a = other
		}
	}
	return a, nil
}

// decode decodes a record (rec, its header h included).
func (f *File) decode(h perfabi.Header, rec []byte) (perfabi.Record, error) {
	if h.Type >= perfabi.RecordUserTypeStart {
		return f.decodeUser(h, rec[8:])
	}
	a, err := f.eventOf(h.Type, rec)
	if err != nil {
		return nil, err
	}
	d, event := f.noEvent, -1
	if a == nil && d == nil {
		d, _ = perfabi.NewDecoder(perfabi.Format{}) // records without a sample_id
		f.noEvent = d
	}
	if a != nil {
		if a.dec == nil {
			if a.dec, err = perfabi.NewDecoder(a.Format()); err != nil {
				return nil, fmt.Errorf("its event %q: %v", a.Name, err)
			}
		}
		d, event = a.dec, a.index
	}
	r, err := d.DecodeNew(rec)
	if err != nil {
		return nil, err
	}
	rh := r.Head()
	rh.Offset, rh.Event = h.Offset, event
	if s, ok := r.(*perfabi.Sample); ok && a.SampleType&perfabi.SamplePeriod == 0 && !a.Freq() {
		s.Period = a.SamplePeriod // a fixed period that the samples do not repeat
	}
	return r, nil
}

// decodeUser decodes the records perf adds.
func (f *File) decodeUser(h perfabi.Header, body []byte) (perfabi.Record, error) {
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
	return &perfabi.Unknown{Header: h, Data: body}, nil
}
