package debuginfo

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zlib"
)

// dwarfSection returns the DWARF section named .debug_<name> or
// .zdebug_<name>, or nil. A NOBITS section (stripped) does not count.
func dwarfSection(ef *elf.File, name string) *elf.Section {
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_NOBITS {
			continue
		}
		if s.Name == ".debug_"+name || s.Name == ".zdebug_"+name {
			return s
		}
	}
	return nil
}

// hasDWARF reports whether ef carries a non-empty .debug_info.
func hasDWARF(ef *elf.File) bool {
	s := dwarfSection(ef, "info")
	return s != nil && s.Size > 0
}

// load reads the DWARF sections of ef, the ELF file in r (decompressing them, each on a goroutine
// of its own), and prepares the dwarf.Data; name is the file, for errors.
func (in *Info) load(name string, ef *elf.File, r io.ReaderAt) (err error) {
	names := []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}
	data := make([][]byte, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		s := dwarfSection(ef, n)
		if s == nil {
			continue
		}
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("malformed: %v", p)
				}
			}()
			data[i], errs[i] = sectionData(ef, s, r)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("debuginfo: %s: reading section %s: %w", name, s.Name, errs[i])
			}
		})
	}
	wg.Wait()
	secs := make(map[string][]byte)
	for i, n := range names {
		if errs[i] != nil {
			return errs[i]
		}
		if data[i] != nil {
			secs[n] = data[i]
		}
	}
	return in.setData(name, secs)
}

// maxSection is the largest decompressed section sectionData makes (the header says the size).
const maxSection = 1 << 30

// sectionData is s.Data(): the bytes of section s of ef, the ELF file in r, decompressed. A section
// compressed with zlib (SHF_COMPRESSED, gcc -gz, Debian's debug packages) is inflated by
// klauspost/compress, some 15% faster than the standard library's inflater, which decompressed
// libc6-dbg's 10 MB of DWARF in 85 ms; the other forms are debug/elf's.
func sectionData(ef *elf.File, s *elf.Section, r io.ReaderAt) ([]byte, error) {
	if s.Flags&elf.SHF_COMPRESSED == 0 || ef.Class != elf.ELFCLASS64 || s.FileSize < 24 || s.FileSize > maxSection {
		return s.Data()
	}
	raw := make([]byte, s.FileSize)
	if _, err := r.ReadAt(raw, int64(s.Offset)); err != nil {
		return nil, err
	}
	// Elf64_Chdr: ch_type, ch_reserved, ch_size, ch_addralign.
	if elf.CompressionType(ef.ByteOrder.Uint32(raw)) != elf.COMPRESS_ZLIB {
		return s.Data()
	}
	size := ef.ByteOrder.Uint64(raw[8:])
	if size > maxSection {
		return nil, fmt.Errorf("its header says %d bytes decompressed, more than %d", size, maxSection)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[24:]))
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	return out, nil
}

// setData builds the dwarf.Data from section contents keyed by the name
// after ".debug_".
func (in *Info) setData(name string, secs map[string][]byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("debuginfo: %s: malformed DWARF: %v", name, p)
		}
	}()
	d, err := dwarf.New(secs["abbrev"], nil, nil, secs["info"], secs["line"], nil, secs["ranges"], secs["str"])
	if err != nil {
		return fmt.Errorf("debuginfo: %s: %w", name, err)
	}
	for _, n := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b, ok := secs[n]; ok {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return fmt.Errorf("debuginfo: %s: section .debug_%s: %w", name, n, err)
			}
		}
	}
	in.d, in.info, in.line, in.HasDWARF = d, secs["info"], secs["line"], true
	return nil
}

// A unit is one compilation unit of .debug_info.
type unit struct {
	start, end dwarf.Offset // the unit, header included
	die        dwarf.Offset // its first DIE
	version    int
	entry      *dwarf.Entry
	name       string // primary source file
	compDir    string
	idx        *cuIndex // nil until indexed
}

// unitSpan is an address range of a unit.
type unitSpan struct {
	lo, hi uint64
	u      *unit
}

// unitHeader is what the header of a unit at some offset says.
type unitHeader struct {
	end, die dwarf.Offset
	version  int
	code     bool // a compile, partial or skeleton unit (not a type unit)
}

// DWARF 5 unit types.
const (
	utCompile      = 1
	utType         = 2
	utPartial      = 3
	utSkeleton     = 4
	utSplitCompile = 5
	utSplitType    = 6
)

// parseUnitHeader reads the header of the unit at off in .debug_info.
func parseUnitHeader(info []byte, off int) (unitHeader, error) {
	bad := func(what string) (unitHeader, error) {
		return unitHeader{}, fmt.Errorf(".debug_info offset %#x: %s", off, what)
	}
	le := binary.LittleEndian
	if len(info)-off < 4 {
		return bad("truncated unit length")
	}
	length := uint64(le.Uint32(info[off:]))
	p, offSize := off+4, 4
	if length == 0xffffffff {
		if len(info)-off < 12 {
			return bad("truncated 64-bit unit length")
		}
		length, p, offSize = le.Uint64(info[off+4:]), off+12, 8
	} else if length >= 0xfffffff0 {
		return bad(fmt.Sprintf("reserved unit length %#x", length))
	}
	if length > uint64(len(info)-p) {
		return bad(fmt.Sprintf("unit length %#x runs past the section end (%#x)", length, len(info)))
	}
	end := p + int(length)
	if end-p < 2 {
		return bad("truncated unit header")
	}
	h := unitHeader{end: dwarf.Offset(end), version: int(le.Uint16(info[p:])), code: true}
	p += 2
	switch {
	case h.version >= 2 && h.version <= 4:
		p += offSize + 1
	case h.version == 5:
		if end-p < 2 {
			return bad("truncated unit header")
		}
		ut := info[p]
		p += 2 + offSize
		switch ut {
		case utCompile, utPartial:
		case utSkeleton, utSplitCompile:
			p += 8
		case utType, utSplitType:
			p += 8 + offSize
			h.code = false
		default:
			return bad(fmt.Sprintf("unknown unit type %#x", ut))
		}
	default:
		return bad(fmt.Sprintf("unsupported DWARF version %d", h.version))
	}
	if p > end {
		return bad("truncated unit header")
	}
	h.die = dwarf.Offset(p)
	return h, nil
}

// listUnits reads the unit headers and the compile-unit DIEs once, and
// builds the table of unit address ranges. The caller holds in.mu.
func (in *Info) listUnits() {
	if in.listed || in.d == nil {
		return
	}
	in.listed = true
	defer func() {
		if p := recover(); p != nil {
			in.noteErr(fmt.Errorf("debuginfo: %s: malformed DWARF: %v", in.Source, p))
		}
	}()
	in.fileIDs = map[string]uint32{"": 0}
	in.files = []string{""}
	in.origins = make(map[dwarf.Offset]origin)
	in.qual = make(map[dwarf.Offset]string)
	r := in.d.Reader()
	for off := 0; off < len(in.info); {
		h, err := parseUnitHeader(in.info, off)
		if err != nil {
			in.noteErr(fmt.Errorf("debuginfo: %s: %w", in.Source, err))
			break
		}
		start := off
		off = int(h.end)
		if !h.code || h.die >= h.end {
			continue
		}
		r.Seek(h.die)
		e, err := r.Next()
		if err != nil || e == nil {
			in.noteErr(fmt.Errorf("debuginfo: %s: unit at .debug_info offset %#x: %v", in.Source, start, err))
			continue
		}
		if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit && e.Tag != dwarf.TagSkeletonUnit {
			continue
		}
		u := &unit{start: dwarf.Offset(start), end: h.end, die: h.die, version: h.version, entry: e}
		u.compDir, _ = e.Val(dwarf.AttrCompDir).(string)
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			u.name = in.absPath(u, n)
		}
		in.units = append(in.units, u)
		ranges, err := in.d.Ranges(e)
		if err != nil {
			in.noteErr(fmt.Errorf("debuginfo: %s: unit at .debug_info offset %#x: ranges: %v", in.Source, start, err))
		}
		if len(ranges) == 0 {
			// No ranges in the DIE: take them from the line table.
			ranges = in.index(u).seqRanges()
		}
		for _, rg := range ranges {
			if rg[0] < rg[1] && in.isCode(rg[0]) {
				in.spans = append(in.spans, unitSpan{rg[0], rg[1], u})
			}
		}
	}
	in.indexSpans()
}

// indexSpans sorts the units' address ranges and notes the highest end up to each.
func (in *Info) indexSpans() {
	sort.SliceStable(in.spans, func(i, j int) bool { return in.spans[i].lo < in.spans[j].lo })
	in.maxHi = make([]uint64, len(in.spans))
	var m uint64
	for i, s := range in.spans {
		m = max(m, s.hi)
		in.maxHi[i] = m
	}
}

// isCode reports whether addr lies in an executable section of the load
// object (always true when its sections are unknown). Code discarded at
// link time keeps address 0 or a tombstone in DWARF, and is dropped here.
func (in *Info) isCode(addr uint64) bool {
	if len(in.execRanges) == 0 {
		return addr != 0 && addr < ^uint64(0)-1
	}
	for _, r := range in.execRanges {
		if r[0] <= addr && addr < r[1] {
			return true
		}
	}
	return false
}

// unitsAt returns the units whose ranges contain pc, latest start first.
// The caller holds in.mu.
func (in *Info) unitsAt(pc uint64) []*unit {
	in.listUnits()
	i := sort.Search(len(in.spans), func(i int) bool { return in.spans[i].lo > pc }) - 1
	var us []*unit
	for ; i >= 0 && in.maxHi[i] > pc; i-- {
		if s := in.spans[i]; s.hi > pc && !containsUnit(us, s.u) {
			us = append(us, s.u)
		}
	}
	return us
}

// unitsIn returns the units whose ranges meet [lo,hi). The caller holds in.mu.
func (in *Info) unitsIn(lo, hi uint64) []*unit {
	in.listUnits()
	i := sort.Search(len(in.spans), func(i int) bool { return in.spans[i].lo >= hi }) - 1
	var us []*unit
	for ; i >= 0 && in.maxHi[i] > lo; i-- {
		if s := in.spans[i]; s.hi > lo && !containsUnit(us, s.u) {
			us = append(us, s.u)
		}
	}
	return us
}

func containsUnit(us []*unit, u *unit) bool {
	for _, v := range us {
		if v == u {
			return true
		}
	}
	return false
}

// absPath makes a file name of unit u absolute with its DW_AT_comp_dir,
// and cleans it.
func (in *Info) absPath(u *unit, name string) string {
	if name == "" {
		return ""
	}
	if !path.IsAbs(name) && u.compDir != "" && !strings.HasPrefix(name, "<") {
		name = path.Join(u.compDir, name)
	}
	return path.Clean(name)
}

// fileID interns a file name. The caller holds in.mu.
func (in *Info) fileID(name string) uint32 {
	if id, ok := in.fileIDs[name]; ok {
		return id
	}
	id := uint32(len(in.files))
	in.files = append(in.files, name)
	in.fileIDs[name] = id
	return id
}
