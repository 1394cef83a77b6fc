// Package perfdata reads the perf.data files that perf record writes: the header, the events' attributes, the
// feature sections and the records of the data section, in file or pipe mode.
//
// The format is the kernel's tools/perf/Documentation/perf.data-file-format.txt; the records are
// those of include/uapi/linux/perf_event.h, decoded by package perfabi (a decoder per event), and
// perf's own (tools/lib/perf/include/perf/event.h), decoded here. Only little-endian files (x86-64,
// arm64, ...) are read.
package perfdata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"er/internal/perfabi"
	"er/internal/regfile"
)

// magic is "PERFILE2" read as a little-endian word.
const magic = 0x32454c4946524550

// magicSwapped is magic as a big-endian machine's file holds it.
const magicSwapped = 0x50455246494c4532

const (
	fileHeaderSize = 104 // struct perf_file_header
	pipeHeaderSize = 16  // struct perf_pipe_file_header
)

// Feature ids: the bits of the header's adds_features, and the sections that follow the data.
const (
	FeatTracingData = 1
	FeatBuildID     = 2
	FeatHostname    = 3
	FeatOSRelease   = 4
	FeatVersion     = 5
	FeatArch        = 6
	FeatNrCPUs      = 7
	FeatCPUDesc     = 8
	FeatCPUID       = 9
	FeatTotalMem    = 10
	FeatCmdline     = 11
	FeatEventDesc   = 12
	FeatSampleTime  = 21
	FeatCompressed  = 27
	FeatClockData   = 29
	featBits        = 256
)

// BuildID is one entry of the BUILD_ID feature (or a HEADER_BUILD_ID record): the build id of a load
// object that the recorded samples hit.
type BuildID struct {
	Pid      int32  // -1 for the kernel and its modules
	Kernel   bool   // of the kernel or a module (cpumode kernel)
	ID       []byte // the GNU build id
	Filename string
}

// ClockData is the CLOCK_DATA feature: the wall-clock time at one reading of the sampling clock.
type ClockData struct {
	ClockID  uint32
	WallNS   uint64 // Unix ns
	ClockNS  uint64 // the sampling clock then
	Recorded bool
}

// File is an open perf.data file: its header, attributes and features; Records reads its data.
type File struct {
	Name string // the file's name, for messages
	Pipe bool   // pipe mode: the attributes and features come as records in the data

	Attrs []*Attr

	Hostname, OSRelease, PerfVersion, Arch, CPUDesc, CPUID string
	NrCPUsOnline, NrCPUsAvail                              uint32
	TotalMemKB                                             uint64
	Cmdline                                                []string // perf's own command line
	BuildIDs                                               []BuildID
	FirstSample, LastSample                                uint64 // SAMPLE_TIME: the times of the first and last samples
	Clock                                                  ClockData
	Compression                                            Compression // the COMPRESSED feature (perf record -z)
	Features                                               []bool      // which features the file has, by id

	src      io.ReaderAt
	closer   io.Closer
	dataOff  int64
	dataSize int64 // -1: to the end (pipe mode)
	ids      map[uint64]*Attr
	buildIDs map[string][]byte // the first build id of each file name, for BuildIDOf
	noEvent  *perfabi.Decoder  // of the kernel's records before any event (pipe mode): without a sample_id
}

// Open opens the perf.data file at path, in file or pipe mode ("perf record -o - > file"). It must be
// a regular file: a FIFO or a device is refused without being opened (or, swapped in meanwhile, read).
func Open(path string) (*File, error) {
	fh, st, err := regfile.Open(path)
	if nr := (*regfile.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, fmt.Errorf("%s: not a regular file but %s; perf record -o - | er import - reads a pipe", path, regfile.Kind(nr.Mode))
	}
	if err != nil {
		return nil, err
	}
	f, err := NewFile(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// Close closes the file Open opened.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// FormatError is a perf.data file that is damaged or not one: which file, at which offset, what is wrong.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: offset %#x: %s", e.File, e.Offset, e.Msg)
}

func (f *File) errorf(off int64, format string, args ...any) error {
	return &FormatError{File: f.Name, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// NewFile reads the header, attributes and features of a perf.data file of size bytes from r.
func NewFile(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{Name: name, src: r, ids: map[uint64]*Attr{}, Features: make([]bool, featBits)}
	var h [fileHeaderSize]byte
	n, err := r.ReadAt(h[:], 0)
	if n < pipeHeaderSize {
		if err == nil || err == io.EOF {
			return nil, f.errorf(0, "%d bytes: too short for a perf.data header", n)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := f.checkMagic(h[:8]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	hsize := le.Uint64(h[8:])
	if hsize == pipeHeaderSize {
		f.Pipe, f.dataOff, f.dataSize = true, pipeHeaderSize, size-pipeHeaderSize
		return f, nil
	}
	if hsize != fileHeaderSize {
		return nil, f.errorf(8, "header size %d: a perf.data header is %d bytes (or %d in pipe mode)", hsize, fileHeaderSize, pipeHeaderSize)
	}
	if n < fileHeaderSize {
		return nil, f.errorf(0, "%d bytes: too short for the %d-byte perf.data header", n, fileHeaderSize)
	}
	attrSize := le.Uint64(h[16:])
	attrs := section(h[24:])
	data := section(h[40:])
	for i := 0; i < featBits; i++ {
		f.Features[i] = h[72+i/8]>>(i%8)&1 == 1
	}
	if err := f.checkSection(attrs, size, 24, "attribute"); err != nil {
		return nil, err
	}
	if err := f.checkSection(data, size, 40, "data"); err != nil {
		return nil, err
	}
	f.dataOff, f.dataSize = int64(data.off), int64(data.size)
	if err := f.readAttrs(attrs, attrSize, size); err != nil {
		return nil, err
	}
	if err := f.readFeatures(data.off+data.size, size); err != nil {
		return nil, err
	}
	f.nameAttrs()
	return f, nil
}

func (f *File) checkMagic(b []byte) error {
	switch m := binary.LittleEndian.Uint64(b); m {
	case magic:
		return nil
	case magicSwapped:
		return f.errorf(0, "a big-endian perf.data file; only little-endian ones are read")
	default:
		if bytes.HasPrefix(b, []byte("PERFFILE")) {
			return f.errorf(0, "a perf.data file of the first format (PERFFILE), which perf stopped writing in 2012")
		}
		return f.errorf(0, "magic %q: not a perf.data file (they start with PERFILE2)", b)
	}
}

// fileSection is a struct perf_file_section: where a part of the file is.
type fileSection struct{ off, size uint64 }

func section(b []byte) fileSection {
	return fileSection{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])}
}

func (f *File) checkSection(s fileSection, size int64, at int64, what string) error {
	if s.off > uint64(size) || s.size > uint64(size)-s.off {
		return f.errorf(at, "the %s section [%#x, +%#x) lies outside the file's %d bytes (a perf record that did not finish, or a truncated copy)", what, s.off, s.size, size)
	}
	return nil
}

// readAt reads a section that checkSection accepted.
func (f *File) readAt(s fileSection) ([]byte, error) {
	b := make([]byte, s.size)
	n, err := f.src.ReadAt(b, int64(s.off))
	switch {
	case n == len(b):
		return b, nil
	case err == io.EOF:
		return nil, f.errorf(int64(s.off), "the file ends after %d of the section's %d bytes", n, len(b))
	}
	return nil, fmt.Errorf("%s: offset %#x: %w", f.Name, s.off, err)
}

// readAttrs reads the attribute section: attrSize bytes per event, its attr then its ids' section.
func (f *File) readAttrs(s fileSection, attrSize uint64, size int64) error {
	if s.size == 0 {
		return nil
	}
	if attrSize < attrV0Size+16 || attrSize > 1<<16 {
		return f.errorf(16, "attribute entries of %d bytes: not a perf.data file's", attrSize)
	}
	if s.size%attrSize != 0 {
		return f.errorf(24, "the attribute section's %d bytes are not a whole number of %d-byte entries", s.size, attrSize)
	}
	b, err := f.readAt(s)
	if err != nil {
		return err
	}
	var idBytes uint64 // of all events: each its own section, so they add up to at most the file
	for off := uint64(0); off < s.size; off += attrSize {
		e := b[off : off+attrSize]
		a, err := parseAttr(e[:attrSize-16])
		if err != nil {
			return f.errorf(int64(s.off+off), "%v", err)
		}
		ids := section(e[attrSize-16:])
		if err := f.checkSection(ids, size, int64(s.off+off+attrSize-16), "event id"); err != nil {
			return err
		}
		if idBytes += ids.size; idBytes > uint64(size) {
			return f.errorf(int64(s.off+off+attrSize-16), "the events' id sections add up to %d bytes, more than the file's %d", idBytes, size)
		}
		if ids.size%8 != 0 {
			return f.errorf(int64(s.off+off+attrSize-16), "event id section of %d bytes is not a whole number of ids", ids.size)
		}
		raw, err := f.readAt(ids)
		if err != nil {
			return err
		}
		for i := 0; i < len(raw); i += 8 {
			a.IDs = append(a.IDs, binary.LittleEndian.Uint64(raw[i:]))
		}
		f.addAttr(a)
	}
	return nil
}

// addAttr adds an event and its ids.
func (f *File) addAttr(a *Attr) {
	a.index = len(f.Attrs)
	f.Attrs = append(f.Attrs, a)
	for _, id := range a.IDs {
		if _, ok := f.ids[id]; !ok {
			f.ids[id] = a
		}
	}
}

// nameAttrs names the events the EVENT_DESC feature did not name.
func (f *File) nameAttrs() {
	for _, a := range f.Attrs {
		if a.Name == "" {
			a.Name = a.defaultName()
		}
	}
}

// readFeatures reads the feature sections whose table starts at off.
func (f *File) readFeatures(off uint64, size int64) error {
	var n uint64
	for _, has := range f.Features {
		if has {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	table := fileSection{off, 16 * n}
	if err := f.checkSection(table, size, int64(off), "feature table"); err != nil {
		return err
	}
	tb, err := f.readAt(table)
	if err != nil {
		return err
	}
	i := 0
	for id, has := range f.Features {
		if !has {
			continue
		}
		s := section(tb[16*i:])
		at := int64(off) + int64(16*i)
		i++
		if !f.wanted(id) {
			continue
		}
		if err := f.checkSection(s, size, at, fmt.Sprintf("feature %d", id)); err != nil {
			return err
		}
		b, err := f.readAt(s)
		if err != nil {
			return err
		}
		if err := f.parseFeature(id, b); err != nil {
			return f.errorf(int64(s.off), "feature %s: %v", featureName(id), err)
		}
	}
	return nil
}

// wanted reports whether the reader decodes feature id.
func (f *File) wanted(id int) bool {
	switch id {
	case FeatBuildID, FeatHostname, FeatOSRelease, FeatVersion, FeatArch, FeatNrCPUs, FeatCPUDesc, FeatCPUID,
		FeatTotalMem, FeatCmdline, FeatEventDesc, FeatSampleTime, FeatCompressed, FeatClockData:
		return true
	}
	return false
}

func featureName(id int) string {
	names := map[int]string{FeatBuildID: "BUILD_ID", FeatHostname: "HOSTNAME", FeatOSRelease: "OSRELEASE",
		FeatVersion: "VERSION", FeatArch: "ARCH", FeatNrCPUs: "NRCPUS", FeatCPUDesc: "CPUDESC", FeatCPUID: "CPUID",
		FeatTotalMem: "TOTAL_MEM", FeatCmdline: "CMDLINE", FeatEventDesc: "EVENT_DESC", FeatSampleTime: "SAMPLE_TIME",
		FeatCompressed: "COMPRESSED", FeatClockData: "CLOCK_DATA"}
	if s, ok := names[id]; ok {
		return s
	}
	return fmt.Sprintf("%d", id)
}

// cursor reads little-endian fields of a feature, failing once on a short read.
type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) take(n uint64, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(len(c.b)-c.off) {
		c.err = fmt.Errorf("%s of %d bytes at byte %d runs past the end (%d bytes)", what, n, c.off, len(c.b))
		return nil
	}
	v := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return v
}

func (c *cursor) u32(what string) uint32 {
	if v := c.take(4, what); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (c *cursor) u64(what string) uint64 {
	if v := c.take(8, what); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// str reads a perf_header_string: a u32 length, then that many bytes, the string NUL-padded.
func (c *cursor) str(what string) string {
	n := c.u32(what + " length")
	return cstring(c.take(uint64(n), what))
}

// cstring returns b up to its first NUL.
func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// parseFeature decodes the section of feature id.
func (f *File) parseFeature(id int, b []byte) error {
	c := &cursor{b: b}
	switch id {
	case FeatHostname:
		f.Hostname = c.str("host name")
	case FeatOSRelease:
		f.OSRelease = c.str("OS release")
	case FeatVersion:
		f.PerfVersion = c.str("perf version")
	case FeatArch:
		f.Arch = c.str("architecture")
	case FeatCPUDesc:
		f.CPUDesc = c.str("CPU description")
	case FeatCPUID:
		f.CPUID = c.str("CPU id")
	case FeatNrCPUs:
		f.NrCPUsAvail, f.NrCPUsOnline = c.u32("available CPUs"), c.u32("online CPUs")
	case FeatTotalMem:
		f.TotalMemKB = c.u64("total memory")
	case FeatCmdline:
		n := c.u32("argument count")
		if uint64(n)*4 > uint64(len(b)) {
			return fmt.Errorf("%d arguments in %d bytes", n, len(b))
		}
		f.Cmdline = f.Cmdline[:0]
		for i := uint32(0); i < n && c.err == nil; i++ {
			f.Cmdline = append(f.Cmdline, c.str("argument"))
		}
	case FeatEventDesc:
		return f.parseEventDesc(c)
	case FeatBuildID:
		return f.parseBuildIDs(b)
	case FeatSampleTime:
		f.FirstSample, f.LastSample = c.u64("first sample time"), c.u64("last sample time")
	case FeatClockData:
		c.u32("version")
		f.Clock.ClockID = c.u32("clock id")
		f.Clock.WallNS, f.Clock.ClockNS = c.u64("wall-clock time"), c.u64("clock time")
		f.Clock.Recorded = c.err == nil
	case FeatCompressed:
		f.Compression = Compression{Version: c.u32("version"), Type: c.u32("type"), Level: c.u32("level"),
			Ratio: c.u32("ratio"), MmapLen: c.u32("mmap length")}
	}
	return c.err
}

// parseEventDesc names the events: EVENT_DESC holds, per event, its attr, ids and name.
func (f *File) parseEventDesc(c *cursor) error {
	n, sz := c.u32("event count"), c.u32("attribute size")
	if c.err != nil {
		return c.err
	}
	if sz < attrV0Size || uint64(n)*uint64(sz) > uint64(len(c.b)) {
		return fmt.Errorf("%d event descriptions of %d bytes in %d bytes", n, sz, len(c.b))
	}
	for i := uint32(0); i < n; i++ {
		ab := c.take(uint64(sz), "event attribute")
		nids := c.u32("id count")
		name := c.str("event name")
		ids := c.take(8*uint64(nids), "event ids")
		if c.err != nil {
			return c.err
		}
		// The description names the event of the same ids (in pipe mode, of the same index).
		var match *Attr
		if len(ids) >= 8 {
			match = f.ids[binary.LittleEndian.Uint64(ids)]
		}
		if match == nil && int(i) < len(f.Attrs) {
			match = f.Attrs[i]
		}
		if match == nil && f.Pipe {
			if a, err := parseAttr(ab); err == nil {
				for j := 0; j < len(ids); j += 8 {
					a.IDs = append(a.IDs, binary.LittleEndian.Uint64(ids[j:]))
				}
				match = a
				f.addAttr(a)
			}
		}
		if match != nil {
			if name == "" {
				name = match.defaultName()
			}
			match.Name = name
		}
	}
	return nil
}

// buildIDSize is the bytes of a build_id_event before its file name: header, pid, build id.
const buildIDSize = 8 + 4 + 24

// miscBuildIDSize: the build id's size byte is valid (PERF_RECORD_MISC_BUILD_ID_SIZE).
const miscBuildIDSize = 1 << 15

// parseBuildIDs reads a sequence of build_id_events.
func (f *File) parseBuildIDs(b []byte) error {
	for off := 0; off < len(b); {
		if len(b)-off < 8 {
			return fmt.Errorf("build id entry at byte %d: %d bytes left, fewer than its header", off, len(b)-off)
		}
		misc := binary.LittleEndian.Uint16(b[off+4:])
		size := int(binary.LittleEndian.Uint16(b[off+6:]))
		if size < buildIDSize || size > len(b)-off {
			return fmt.Errorf("build id entry at byte %d says it has %d bytes (at least %d, at most the %d left)", off, size, buildIDSize, len(b)-off)
		}
		f.addBuildID(decodeBuildID(b[off:off+size], misc))
		off += size
	}
	return nil
}

func decodeBuildID(e []byte, misc uint16) BuildID {
	id := e[12:32]
	if misc&miscBuildIDSize != 0 {
		id = e[12 : 12+min(int(e[32]), 20)]
	} else {
		id = bytes.TrimRight(id, "\x00")
	}
	return BuildID{Pid: int32(binary.LittleEndian.Uint32(e[8:])), Kernel: misc&perfabi.CPUModeMask == perfabi.CPUModeKernel,
		ID: append([]byte(nil), id...), Filename: cstring(e[buildIDSize:])}
}

// addBuildID adds a build id entry.
func (f *File) addBuildID(b BuildID) {
	f.BuildIDs = append(f.BuildIDs, b)
	if f.buildIDs == nil {
		f.buildIDs = map[string][]byte{}
	}
	if _, ok := f.buildIDs[b.Filename]; !ok {
		f.buildIDs[b.Filename] = b.ID
	}
}

// BuildIDOf returns the build id (hex) that the file records for a load object (its first entry
// of that name), or "".
func (f *File) BuildIDOf(filename string) string {
	if id, ok := f.buildIDs[filename]; ok {
		return fmt.Sprintf("%x", id)
	}
	return ""
}

// AttrOf returns the event of record r, as the reader found it (see perfabi.Header.Event): nil for
// the records perf adds and those before any event.
func (f *File) AttrOf(r perfabi.Record) *Attr {
	h := r.Head()
	if h.Type >= perfabi.RecordUserTypeStart || h.Event < 0 || h.Event >= len(f.Attrs) {
		return nil
	}
	return f.Attrs[h.Event]
}

// Records returns a reader of the data section's records, in file order.
func (f *File) Records() *Reader {
	var r io.Reader
	if f.dataSize < 0 {
		r = io.NewSectionReader(f.src, f.dataOff, 1<<62)
	} else {
		r = io.NewSectionReader(f.src, f.dataOff, f.dataSize)
	}
	return &Reader{f: f, r: bufio.NewReaderSize(r, 1<<16), off: f.dataOff}
}

// NewPipe reads a perf.data stream in pipe mode (perf record -o -) from r: its header now, its
// attributes and features as Records reads them.
func NewPipe(r io.Reader, name string) (*File, *Reader, error) {
	f := &File{Name: name, Pipe: true, ids: map[uint64]*Attr{}, Features: make([]bool, featBits)}
	br := bufio.NewReaderSize(r, 1<<16)
	var h [pipeHeaderSize]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, f.errorf(0, "too short for a perf.data header")
		}
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := f.checkMagic(h[:8]); err != nil {
		return nil, nil, err
	}
	if hs := binary.LittleEndian.Uint64(h[8:]); hs != pipeHeaderSize {
		return nil, nil, f.errorf(8, "header size %d: a perf.data stream's header is %d bytes", hs, pipeHeaderSize)
	}
	return f, &Reader{f: f, r: br, off: pipeHeaderSize}, nil
}
