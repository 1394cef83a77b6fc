package experiment

import (
	"encoding/binary"
	"er/internal/events"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"syscall"
)

// Framing of the binary files (docs/experiment-format.md describes it byte by byte).
const (
	fileMagic       = "ERDATA\x00\x01"
	blockMagic      = "ERBK"
	fileHeaderSize  = 24
	blockHeaderSize = 24
	blockTarget     = 64 << 10 // a block is written once its payload reaches this size
	formatMajor     = 1
	formatMinor     = 2
)

// Record layouts.
const (
	clockRecordSize   = 40 // time, period, pid, tid, cpu, stack, mode, 7 reserved bytes
	hwcRecordSize     = 48 // time, value, addr, pid, tid, cpu, stack, counter, mode, 6 reserved bytes
	overviewFixedSize = 78 // everything up to and including the label length
	maxStackFrames    = 1 << 20
	maxLabelLen       = 1<<16 - 1
)

// Ranges of record fields that er print sums (docs/experiment-format.md, "Ranges").
const (
	maxPeriodNS   = 60_000_000_000 // a clock sample stands for at most 60 s of CPU time
	maxCounterVal = 1 << 62        // overview times, counts and sizes
)

// maxPayload is the largest block payload that a writer of this format writes for records of
// kind k, recSize bytes each (0: variable): a block is written when its payload reaches
// blockTarget, so it holds less than that and one record more. A larger payload is damage, found
// before anything is allocated for it.
func maxPayload(k recordKind, recSize uint32) int64 {
	switch k {
	case kindClock, kindHWC, kindTable:
		r := int64(max(recSize, 1))
		return (blockTarget + r - 1) / r * r
	case kindStacks:
		return blockTarget - 1 + 4 + 8*maxStackFrames
	case kindOverview:
		return blockTarget - 1 + overviewFixedSize + maxLabelLen
	case kindArchive:
		// The object record is the largest: its three strings and segments.
		return archiveObjectFixed + 3*(4+maxArchiveString) + archiveSegmentSize*maxArchiveSegments
	}
	return blockTarget
}

// recordKind is stored in a binary file's header and says what its records are.
type recordKind uint32

// Record kinds.
const (
	kindClock    recordKind = 1
	kindStacks   recordKind = 2
	kindOverview recordKind = 3
	kindArchive  recordKind = 4
	kindHWC      recordKind = 5
	kindTable    recordKind = 6 // an event table's rows: their layout is its schema's (events.Schema.Offsets)
)

func (k recordKind) String() string {
	switch k {
	case kindClock:
		return "clock"
	case kindStacks:
		return "stacks"
	case kindOverview:
		return "overview"
	case kindArchive:
		return "archive"
	case kindHWC:
		return "hwc"
	case kindTable:
		return "table"
	}
	return "kind " + strconv.Itoa(int(k))
}

// recordSize is the size of one record of kind k in this version, 0 for variable-size records.
func (k recordKind) recordSize() uint32 {
	switch k {
	case kindClock:
		return clockRecordSize
	case kindHWC:
		return hwcRecordSize
	}
	return 0
}

var (
	le         = binary.LittleEndian
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendFileHeader appends the 24-byte header of a binary file holding records of kind k.
func appendFileHeader(b []byte, k recordKind) []byte { return appendFileHeaderOf(b, k, k.recordSize()) }

// appendFileHeaderOf appends the header of a file of records of kind k, recSize bytes each.
func appendFileHeaderOf(b []byte, k recordKind, recSize uint32) []byte {
	start := len(b)
	b = append(b, fileMagic...)
	b = le.AppendUint16(b, formatMajor)
	b = le.AppendUint16(b, formatMinor)
	b = le.AppendUint32(b, uint32(k))
	b = le.AppendUint32(b, recSize)
	return le.AppendUint32(b, checksum(b[start:]))
}

// sealBlock fills in the block header in b[:blockHeaderSize] for the count
// records in the payload b[blockHeaderSize:].
func sealBlock(b []byte, count uint32) {
	copy(b[0:4], blockMagic)
	le.PutUint32(b[4:], count)
	le.PutUint32(b[8:], uint32(len(b)-blockHeaderSize))
	le.PutUint32(b[12:], 0)
	le.PutUint32(b[16:], checksum(b[blockHeaderSize:]))
	le.PutUint32(b[20:], checksum(b[:20]))
}

// Hints for the user, by kind of damage.
const (
	hintNotData   = "the file is not an er data file: it was overwritten or the directory is not an experiment; record the experiment again"
	hintVersion   = "the experiment was written by another version of er; read it with that version"
	hintTruncated = "the file was cut short before any data was written; delete it or record the experiment again"
)

// hintBlock tells how to keep the intact data before a damaged block.
func hintBlock(file string, off int64) string {
	return fmt.Sprintf("the blocks before offset %d are intact: keep them with `truncate -s %d %s`, or record the experiment again", off, off, file)
}

// blockReader walks the blocks of one binary file.
type blockReader struct {
	name    string // file name for messages
	r       io.ReaderAt
	size    int64 // bytes in the file when it was opened; later bytes are not read
	off     int64 // offset of the next block
	kind    recordKind
	recSize uint32 // record size from the file header, 0 for variable-size records
	max     int64  // the largest payload a block of the file may have
	strict  bool   // an incomplete last block is an error, not a warning
	hdr     [blockHeaderSize]byte
	buf     []byte
	warning string // set when an incomplete last block was skipped
}

// newBlockReader checks the file header of a file of size bytes holding records of kind k.
func newBlockReader(name string, r io.ReaderAt, size int64, k recordKind, strict bool) (*blockReader, error) {
	return newBlockReaderOf(name, r, size, k, k.recordSize(), strict)
}

// newBlockReaderOf is newBlockReader for records of at least want bytes (0: variable-size).
func newBlockReaderOf(name string, r io.ReaderAt, size int64, k recordKind, want uint32, strict bool) (*blockReader, error) {
	br := &blockReader{name: name, r: r, size: size, strict: strict}
	if size == 0 && !strict {
		br.warning = name + ": empty file (no header); no records"
		return br, nil
	}
	if size < fileHeaderSize {
		return nil, formatErrorf(name, 0, hintTruncated, "file header truncated (%d of %d bytes)", size, fileHeaderSize)
	}
	var h [fileHeaderSize]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if string(h[:8]) != fileMagic {
		return nil, formatErrorf(name, 0, hintNotData, "bad magic %q, want %q", h[:8], fileMagic)
	}
	if got, want := le.Uint32(h[20:]), checksum(h[:20]); got != want {
		return nil, formatErrorf(name, 0, hintNotData, "file header checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	if major, minor := le.Uint16(h[8:]), le.Uint16(h[10:]); major != formatMajor {
		return nil, formatErrorf(name, 8, hintVersion, "format version %d.%d; this reader reads %d.x", major, minor, formatMajor)
	}
	if got := recordKind(le.Uint32(h[12:])); got != k {
		return nil, formatErrorf(name, 12, hintNotData, "holds %s records, want %s records", got, k)
	}
	br.recSize = le.Uint32(h[16:])
	// A later minor version may append fields to fixed-size records, never shrink them.
	if (want == 0) != (br.recSize == 0) || br.recSize < want {
		return nil, formatErrorf(name, 16, hintNotData, "record size %d, want %d", br.recSize, want)
	}
	br.off = fileHeaderSize
	br.kind = k
	br.max = maxPayload(k, br.recSize)
	return br, nil
}

// next returns the next block: its offset, record count and payload (valid
// until the next call). ok is false after the last complete block.
func (br *blockReader) next() (off int64, count uint32, payload []byte, ok bool, err error) {
	off = br.off
	rem := br.size - off
	if rem <= 0 {
		return off, 0, nil, false, nil
	}
	h := br.hdr[:]
	if rem < blockHeaderSize {
		h = h[:rem]
	}
	if _, err := br.r.ReadAt(h, off); err != nil {
		return off, 0, nil, false, fmt.Errorf("%s: %w", br.name, err)
	}
	if n := min(len(h), len(blockMagic)); string(h[:n]) != blockMagic[:n] {
		return off, 0, nil, false, formatErrorf(br.name, off, hintBlock(br.name, off), "bad block magic %q, want %q", h[:n], blockMagic[:n])
	}
	if rem < blockHeaderSize {
		return off, 0, nil, false, br.incomplete(off, rem, "at least "+strconv.Itoa(blockHeaderSize))
	}
	if got, want := le.Uint32(h[20:]), checksum(h[:20]); got != want {
		return off, 0, nil, false, formatErrorf(br.name, off, hintBlock(br.name, off), "block header checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	count = le.Uint32(h[4:])
	plen := int64(le.Uint32(h[8:]))
	if plen > br.max {
		return off, 0, nil, false, formatErrorf(br.name, off, hintBlock(br.name, off), "block payload of %d bytes: a block of %s records holds at most %d bytes", plen, br.kind, br.max)
	}
	if total := blockHeaderSize + plen; total > rem {
		return off, 0, nil, false, br.incomplete(off, rem, strconv.FormatInt(total, 10))
	}
	if br.recSize != 0 && uint64(count)*uint64(br.recSize) != uint64(plen) {
		return off, 0, nil, false, formatErrorf(br.name, off, hintBlock(br.name, off), "block of %d records of %d bytes has a %d-byte payload", count, br.recSize, plen)
	}
	if int64(cap(br.buf)) < plen {
		br.buf = make([]byte, plen)
	}
	payload = br.buf[:plen]
	if _, err := br.r.ReadAt(payload, off+blockHeaderSize); err != nil {
		return off, 0, nil, false, fmt.Errorf("%s: %w", br.name, err)
	}
	if got, want := le.Uint32(h[16:]), checksum(payload); got != want {
		return off, 0, nil, false, formatErrorf(br.name, off, hintBlock(br.name, off), "block payload checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	br.off += blockHeaderSize + plen
	return off, count, payload, true, nil
}

// incomplete handles a last block of which only have bytes (of want) are in the file.
func (br *blockReader) incomplete(off, have int64, want string) error {
	br.off = br.size
	if br.strict {
		return formatErrorf(br.name, off, "the file was cut short; delete it or record the experiment again",
			"last block is incomplete (%d of %s bytes)", have, want)
	}
	br.warning = fmt.Sprintf("%s: last block at offset %d is incomplete (%d of %s bytes); ignored", br.name, off, have, want)
	return nil
}

// appendClock appends the record of s.
func appendClock(b []byte, s ClockSample) []byte {
	b = le.AppendUint64(b, uint64(s.Time))
	b = le.AppendUint64(b, uint64(s.Period))
	b = le.AppendUint32(b, s.Pid)
	b = le.AppendUint32(b, s.Tid)
	b = le.AppendUint32(b, s.CPU)
	b = le.AppendUint32(b, s.Stack)
	return append(b, byte(s.Mode), 0, 0, 0, 0, 0, 0, 0)
}

// decodeClock decodes one clock record.
func decodeClock(p []byte) ClockSample {
	_ = p[clockRecordSize-1]
	return ClockSample{
		Time:   int64(le.Uint64(p[0:])),
		Period: int64(le.Uint64(p[8:])),
		Pid:    le.Uint32(p[16:]),
		Tid:    le.Uint32(p[20:]),
		CPU:    le.Uint32(p[24:]),
		Stack:  le.Uint32(p[28:]),
		Mode:   Mode(p[32]),
	}
}

// appendHWC appends the record of s.
func appendHWC(b []byte, s CounterSample) []byte {
	b = le.AppendUint64(b, uint64(s.Time))
	b = le.AppendUint64(b, uint64(s.Value))
	b = le.AppendUint64(b, s.Addr)
	b = le.AppendUint32(b, s.Pid)
	b = le.AppendUint32(b, s.Tid)
	b = le.AppendUint32(b, s.CPU)
	b = le.AppendUint32(b, s.Stack)
	return append(b, s.Counter, byte(s.Mode), 0, 0, 0, 0, 0, 0)
}

// decodeHWC decodes one counter record.
func decodeHWC(p []byte) CounterSample {
	_ = p[hwcRecordSize-1]
	return CounterSample{
		Time:    int64(le.Uint64(p[0:])),
		Value:   int64(le.Uint64(p[8:])),
		Addr:    le.Uint64(p[16:]),
		Pid:     le.Uint32(p[24:]),
		Tid:     le.Uint32(p[28:]),
		CPU:     le.Uint32(p[32:]),
		Stack:   le.Uint32(p[36:]),
		Counter: p[40],
		Mode:    Mode(p[41]),
	}
}

// readHWC reads a profile.hwc file of size bytes, whose samples are of ncounters counters and
// nstacks stacks, into a table of CounterSchema (in file order).
func readHWC(name string, r io.ReaderAt, size int64, ncounters, nstacks int) (t *events.Table, warning string, err error) {
	br, err := newBlockReader(name, r, size, kindHWC, false)
	if err != nil {
		return nil, "", err
	}
	t = events.New(CounterSchema)
	if data := dataBytes(r, size); br.recSize > 0 && data > fileHeaderSize {
		t.Grow(int((data - fileHeaderSize) / int64(br.recSize)))
	}
	err = br.records(func(rec []byte, off, at int64) error {
		s := decodeHWC(rec)
		n := t.Len()
		switch {
		case int(s.Counter) >= ncounters:
			return formatErrorf(name, at, hintBlock(name, off), "sample %d is of counter %d; log.xml lists %d counters",
				n+1, s.Counter, ncounters)
		case s.Value < 0 || s.Value > maxCounterVal:
			return formatErrorf(name, at, hintBlock(name, off), "sample %d stands for %d events: 0 to %d", n+1, s.Value, int64(maxCounterVal))
		case int64(s.Stack) >= int64(nstacks):
			return formatErrorf(name, at, hintBlock(name, off), "sample %d has stack id %d, but the stacks file has only %d stacks",
				n+1, s.Stack, nstacks)
		}
		addCounter(t, &s)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return t, br.warning, nil
}

// records calls fn with each fixed-size record of the file in order, with the offset of its block
// and its own, until fn returns an error.
func (br *blockReader) records(fn func(rec []byte, blockOff, at int64) error) error {
	for {
		off, count, p, ok, err := br.next()
		if err != nil || !ok {
			return err
		}
		for i := range int(count) {
			if err := fn(p[i*int(br.recSize):], off, off+blockHeaderSize+int64(i)*int64(br.recSize)); err != nil {
				return err
			}
		}
	}
}

// clockBlock says where a block of clock records lies, to give offsets in errors.
type clockBlock struct {
	off   int64 // offset of the block header
	first int   // index of its first record in the samples
}

// dataBytes returns the bytes of data that the file r of size bytes holds: for a file, at most the
// space the file system gave it, so that a sparse file (a size without data) does not make the
// reader allocate for its size.
func dataBytes(r io.ReaderAt, size int64) int64 {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks >= 0 {
				return min(size, st.Blocks*512)
			}
		}
	}
	return size
}

// readClock reads a profile.clock (or profile.offcpu) file of size bytes into t, a clock table.
func readClock(name string, r io.ReaderAt, size int64, t *events.Table) (blocks []clockBlock, recSize uint32, warning string, err error) {
	br, err := newBlockReader(name, r, size, kindClock, false)
	if err != nil {
		return nil, 0, "", err
	}
	if data := dataBytes(r, size); br.recSize > 0 && data > fileHeaderSize {
		t.Grow(int((data - fileHeaderSize) / int64(br.recSize)))
	}
	first := t.Len()
	for {
		off, count, p, ok, err := br.next()
		if err != nil {
			return nil, 0, "", err
		}
		if !ok {
			break
		}
		blocks = append(blocks, clockBlock{off: off, first: t.Len() - first})
		for i := range int(count) {
			s := decodeClock(p[i*int(br.recSize):])
			if s.Period < 0 || s.Period > maxPeriodNS {
				at := off + blockHeaderSize + int64(i)*int64(br.recSize)
				return nil, 0, "", formatErrorf(name, at, hintBlock(name, off), "sample %d has a period of %d ns: a clock sample stands for 0 to %d ns",
					t.Len()-first+1, s.Period, int64(maxPeriodNS))
			}
			addClock(t, &s)
		}
	}
	return blocks, br.recSize, br.warning, nil
}

// checkStackIDs returns an error for the first sample of t from row first on (the samples of one
// file, read in blocks) whose stack is not among the nstacks stacks.
func checkStackIDs(name string, t *events.Table, first int, blocks []clockBlock, recSize uint32, nstacks int) error {
	for i := first; i < t.Len(); i++ {
		st := t.Stack[i]
		if int64(st) < int64(nstacks) {
			continue
		}
		n := i - first
		b := len(blocks) - 1
		for blocks[b].first > n {
			b--
		}
		off := blocks[b].off + blockHeaderSize + int64(n-blocks[b].first)*int64(recSize)
		return formatErrorf(name, off, "the stacks file is damaged or missing; record the experiment again",
			"sample %d refers to stack %d, but the stack table has only stacks 0 to %d", n, st, nstacks-1)
	}
	return nil
}

// appendStack appends the record of a stack.
func appendStack(b []byte, s Stack) []byte {
	b = le.AppendUint32(b, uint32(len(s)))
	for _, pc := range s {
		b = le.AppendUint64(b, pc)
	}
	return b
}

// readStacks reads a stacks file of size bytes. The result starts with the empty stack 0.
func readStacks(name string, r io.ReaderAt, size int64) (stacks []Stack, warning string, err error) {
	br, err := newBlockReader(name, r, size, kindStacks, false)
	if err != nil {
		return nil, "", err
	}
	stacks = []Stack{nil}
	for {
		off, count, p, ok, err := br.next()
		if err != nil {
			return nil, "", err
		}
		if !ok {
			break
		}
		// At most this many frames fit in the block: one backing array for all its stacks.
		frames := make([]uint64, 0, len(p)/8)
		pos := 0
		bad := func(format string, args ...any) error {
			at := off + blockHeaderSize + int64(pos)
			return formatErrorf(name, at, hintBlock(name, off), "stack record: "+format, args...)
		}
		for range count {
			if len(p)-pos < 4 {
				return nil, "", bad("%d bytes left in the block, need 4 for the frame count", len(p)-pos)
			}
			n := uint64(le.Uint32(p[pos:]))
			if n > uint64(len(p)-pos-4)/8 {
				return nil, "", bad("%d frames do not fit in the %d bytes left in the block", n, len(p)-pos-4)
			}
			pos += 4
			start := len(frames)
			for range n {
				frames = append(frames, le.Uint64(p[pos:]))
				pos += 8
			}
			stacks = append(stacks, Stack(frames[start:len(frames):len(frames)]))
		}
		if pos != len(p) {
			return nil, "", bad("%d bytes after the block's %d records", len(p)-pos, count)
		}
	}
	return stacks, br.warning, nil
}

// appendOverview appends the record of o; its label must be at most maxLabelLen bytes.
func appendOverview(b []byte, o OverviewSample) []byte {
	b = le.AppendUint64(b, uint64(o.Time))
	b = le.AppendUint32(b, o.Pid)
	b = le.AppendUint32(b, o.Sample)
	for _, v := range [...]int64{o.UserNS, o.SystemNS, o.MinFlt, o.MajFlt, o.VolCtxSw, o.InvolCtxSw, o.RSSBytes} {
		b = le.AppendUint64(b, uint64(v))
	}
	b = le.AppendUint32(b, uint32(o.NumThreads))
	b = le.AppendUint16(b, uint16(len(o.Label)))
	return append(b, o.Label...)
}

// readOverview reads an overview file of size bytes.
func readOverview(name string, r io.ReaderAt, size int64) (samples []OverviewSample, warning string, err error) {
	br, err := newBlockReader(name, r, size, kindOverview, false)
	if err != nil {
		return nil, "", err
	}
	for {
		off, count, p, ok, err := br.next()
		if err != nil {
			return nil, "", err
		}
		if !ok {
			break
		}
		pos := 0
		for range count {
			if len(p)-pos < overviewFixedSize {
				at := off + blockHeaderSize + int64(pos)
				return nil, "", formatErrorf(name, at, hintBlock(name, off), "overview record: %d bytes left in the block, need %d", len(p)-pos, overviewFixedSize)
			}
			q := p[pos:]
			n := int(le.Uint16(q[76:]))
			if len(q)-overviewFixedSize < n {
				at := off + blockHeaderSize + int64(pos)
				return nil, "", formatErrorf(name, at, hintBlock(name, off), "overview record: a %d-byte label does not fit in the %d bytes left in the block", n, len(q)-overviewFixedSize)
			}
			for i, f := range [...]string{"userNS", "systemNS", "minflt", "majflt", "volCtxSw", "involCtxSw", "rssBytes"} {
				if v := int64(le.Uint64(q[16+8*i:])); v < 0 || v > maxCounterVal {
					at := off + blockHeaderSize + int64(pos)
					return nil, "", formatErrorf(name, at, hintBlock(name, off), "overview record %d: %s %d: want 0 to %d", len(samples)+1, f, v, int64(maxCounterVal))
				}
			}
			if v := int32(le.Uint32(q[72:])); v < 0 {
				at := off + blockHeaderSize + int64(pos)
				return nil, "", formatErrorf(name, at, hintBlock(name, off), "overview record %d: numThreads %d: want 0 or more", len(samples)+1, v)
			}
			samples = append(samples, OverviewSample{
				Time:       int64(le.Uint64(q[0:])),
				Pid:        le.Uint32(q[8:]),
				Sample:     le.Uint32(q[12:]),
				UserNS:     int64(le.Uint64(q[16:])),
				SystemNS:   int64(le.Uint64(q[24:])),
				MinFlt:     int64(le.Uint64(q[32:])),
				MajFlt:     int64(le.Uint64(q[40:])),
				VolCtxSw:   int64(le.Uint64(q[48:])),
				InvolCtxSw: int64(le.Uint64(q[56:])),
				RSSBytes:   int64(le.Uint64(q[64:])),
				NumThreads: int32(le.Uint32(q[72:])),
				Label:      string(q[overviewFixedSize : overviewFixedSize+n]),
			})
			pos += overviewFixedSize + n
		}
		if pos != len(p) {
			at := off + blockHeaderSize + int64(pos)
			return nil, "", formatErrorf(name, at, hintBlock(name, off), "%d bytes after the block's %d overview records", len(p)-pos, count)
		}
	}
	return samples, br.warning, nil
}
