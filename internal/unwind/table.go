package unwind

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"er/internal/coldread"
)

// Table is the call frame information of one load object: its .eh_frame, searched through
// .eh_frame_hdr's binary-search table when there is one (else through an index built here),
// and its .debug_frame, used for addresses .eh_frame does not cover (Go binaries have only a
// .debug_frame). A Table is immutable once made and safe for concurrent use.
type Table struct {
	name     string
	eh       section
	debug    section
	hdr      []byte // .eh_frame_hdr's table: count entries of 8 bytes (datarel sdata4 pairs)
	hdrAdr   uint64 // the address entries are relative to
	ehIdx    []span // .eh_frame's FDEs by address, when there is no usable hdr table
	dbgIdx   []span // .debug_frame's FDEs by address
	loads    []load // PT_LOAD segments, to compute a mapping's bias
	roots    []span // code that starts a stack (Go's runtime.goexit and runtime.mstart, an entry stub without CFI); off unused
	switches []span // functions that call on another stack (Go's runtime.systemstack); off unused
}

// span is an address range [lo, hi) and the offset of the FDE describing it.
type span struct {
	lo, hi uint64
	off    uint64
}

// load is a PT_LOAD segment.
type load struct {
	vaddr, off, filesz uint64
}

// Name returns the name the table was made from (a path, or an image's name).
func (t *Table) Name() string { return t.name }

// Load reads the call frame information of the ELF file at path, past the page cache (coldread):
// the reads leave the cache as they found it.
func Load(path string) (*Table, error) {
	fh, err := coldread.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	defer fh.Close()
	f, err := elf.NewFile(fh)
	if err != nil {
		return nil, fmt.Errorf("unwind: %s: %w", path, err)
	}
	t, err := parseELF(path, f)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// TableFromImage reads the call frame information of an ELF image held in memory (the vdso).
func TableFromImage(name string, img []byte) (*Table, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("unwind: %s: %w", name, err)
	}
	return parseELF(name, f)
}

// ParseELF reads the call frame information of an open ELF file. Errors name the file by the
// name of its first section reader when known; prefer Load, which names it by path.
func ParseELF(f *elf.File) (*Table, error) {
	return parseELF("ELF file", f)
}

func parseELF(name string, f *elf.File) (*Table, error) {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("unwind: %s: %v %v is not x86-64: only x86-64 is supported", name, f.Class, f.Machine)
	}
	var eh, hdr, dbg []byte
	var ehAddr, hdrAddr uint64
	read := func(s *elf.Section) ([]byte, error) {
		if s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("unwind: %s: reading section %s: %w", name, s.Name, err)
		}
		return b, nil
	}
	var err error
	if s := f.Section(".eh_frame"); s != nil {
		if eh, err = read(s); err != nil {
			return nil, err
		}
		ehAddr = s.Addr
	}
	if s := f.Section(".eh_frame_hdr"); s != nil {
		if hdr, err = read(s); err != nil {
			return nil, err
		}
		hdrAddr = s.Addr
	}
	if s := f.Section(".debug_frame"); s != nil {
		if dbg, err = read(s); err != nil {
			return nil, err
		}
	}
	t, err := newTable(name, eh, ehAddr, hdr, hdrAddr, dbg)
	if err != nil {
		return nil, err
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, load{vaddr: p.Vaddr, off: p.Off, filesz: p.Filesz})
		}
	}
	if f.Section(".gopclntab") != nil || f.Section(".go.buildinfo") != nil {
		t.roots = goFuncs(f, goRootNames)
		t.switches = goFuncs(f, goSwitchNames)
	}
	if sp, ok := t.entryStub(f.Entry); ok {
		t.roots = append(t.roots, sp)
	}
	return t, nil
}

// maxEntryStub bounds the entry stub without CFI that entryStub accepts.
const maxEntryStub = 256

// entryStub returns the code at the ELF entry point when no FDE covers it: the hand-written
// stub at which the kernel starts a process, which calls into the rest with no frame above
// it. The dynamic loader's _start (call _dl_start, then _dl_start_user calling _dl_init) is
// such a stub: a sample taken while ld.so relocates the program unwinds to a return address
// in it, where neither CFI nor a frame pointer (rbp is 0 there, as the ABI says it is at
// process entry) goes further. An entry point that has CFI says so in its CFI instead (glibc's
// _start marks its return address undefined). The stub runs up to the next FDE, at most
// maxEntryStub bytes.
func (t *Table) entryStub(entry uint64) (span, bool) {
	if entry == 0 {
		return span{}, false
	}
	if _, _, err := t.find(entry); !errors.Is(err, ErrNoCFI) {
		return span{}, false
	}
	end := entry + 1
	for ; end < entry+maxEntryStub; end++ {
		if _, _, err := t.find(end); !errors.Is(err, ErrNoCFI) {
			break
		}
	}
	return span{lo: entry, hi: end}, true
}

// goRootNames are the functions at which Go stacks start: runtime.goexit (the return address
// planted at the top of every goroutine's stack), runtime.mstart (the first function on each
// thread's system stack) and runtime.rt0_go (the main thread's, before mstart). Their CFI does
// not say so. Assembly functions carry the .abi0 suffix in the symbol table.
var goRootNames = map[string]bool{
	"runtime.goexit": true, "runtime.goexit.abi0": true,
	"runtime.mstart": true, "runtime.mstart.abi0": true,
	"runtime.rt0_go": true, "runtime.rt0_go.abi0": true,
	// mcall and morestack switch to g0 and call a function there (schedule, park_m; newstack),
	// clearing the frame pointer: the top of the g0 stack. The goroutine they left is in its g's
	// saved state, which er does not read.
	"runtime.mcall": true, "runtime.mcall.abi0": true,
	"runtime.morestack": true, "runtime.morestack.abi0": true,
}

// goSwitchNames are the functions that switch a goroutine to its thread's g0 stack and call a
// function there, whose return address on g0 leads nowhere, keeping the goroutine's frame pointer
// in rbp: runtime.systemstack.
var goSwitchNames = map[string]bool{"runtime.systemstack": true, "runtime.systemstack.abi0": true}

// goFuncs finds the address ranges of the functions named in names.
func goFuncs(f *elf.File, names map[string]bool) []span {
	syms, err := f.Symbols()
	if err != nil {
		return nil
	}
	var out []span
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && names[s.Name] && s.Size > 0 {
			out = append(out, span{lo: s.Value, hi: s.Value + s.Size})
		}
	}
	return out
}

// newTable makes a table from raw section contents; any may be empty. It validates the
// .eh_frame_hdr table and indexes the sections it cannot search directly.
func newTable(name string, eh []byte, ehAddr uint64, hdr []byte, hdrAddr uint64, dbg []byte) (*Table, error) {
	t := &Table{
		name:  name,
		eh:    section{name: name + ": .eh_frame", data: eh, addr: ehAddr, eh: true},
		debug: section{name: name + ": .debug_frame", data: dbg},
	}
	if len(eh) > 0 && !t.useHdr(hdr, hdrAddr) {
		idx, err := index(&t.eh)
		if err != nil {
			return nil, fmt.Errorf("unwind: %w", err)
		}
		t.ehIdx = idx
	}
	if len(dbg) > 0 {
		idx, err := index(&t.debug)
		if err != nil {
			return nil, fmt.Errorf("unwind: %w", err)
		}
		t.dbgIdx = idx
	}
	return t, nil
}

// useHdr adopts .eh_frame_hdr's search table when it is in the usual form (version 1, entries
// of datarel sdata4 pairs) and describes this .eh_frame; otherwise the caller indexes .eh_frame.
func (t *Table) useHdr(hdr []byte, hdrAddr uint64) bool {
	if len(hdr) < 4 || hdr[0] != 1 {
		return false
	}
	c := &cursor{b: hdr, off: 4}
	ehPtr, msg := c.pointer(hdr[1], 8, hdrAddr, hdrAddr)
	if msg != "" || ehPtr != t.eh.addr {
		return false
	}
	count, msg := c.pointer(hdr[2], 8, hdrAddr, hdrAddr)
	if msg != "" || hdr[2] == peOmit || hdr[3] != peDataRel|peSdata4 {
		return false
	}
	if count > uint64(len(hdr)-c.off)/8 {
		return false
	}
	t.hdr = hdr[c.off : c.off+int(count)*8]
	t.hdrAdr = hdrAddr
	return true
}

// index walks a section and returns its FDEs sorted by start address.
func index(s *section) ([]span, error) {
	var out []span
	cies := map[uint64]cie{}
	for off := uint64(0); off < uint64(len(s.data)); {
		body, _, next, id, is64, err := s.entry(off)
		if err != nil {
			return nil, err
		}
		if body == nil { // terminator
			if s.eh {
				break
			}
			return nil, s.errorf(off, "zero-length entry")
		}
		if !s.isCIE(id, is64) {
			f, err := s.fdeAt(off, cies)
			if err != nil {
				return nil, err
			}
			// Discarded functions keep FDEs at address 0 in .debug_frame; empty ranges are padding.
			if f.hi > f.lo && (f.lo != 0 || s.eh) {
				out = append(out, span{lo: f.lo, hi: f.hi, off: off})
			}
		}
		off = next
	}
	slices.SortStableFunc(out, func(a, b span) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	return out, nil
}

// search returns the span of idx containing pc.
func search(idx []span, pc uint64) (span, bool) {
	lo, hi := 0, len(idx)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if idx[m].lo <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 || pc >= idx[lo-1].hi {
		return span{}, false
	}
	return idx[lo-1], true
}

// hdrSearch finds the .eh_frame offset of the FDE whose start is the greatest at or below pc,
// in the .eh_frame_hdr table.
func (t *Table) hdrSearch(pc uint64) (uint64, bool) {
	n := len(t.hdr) / 8
	entry := func(i int) (start, fde uint64) {
		e := t.hdr[i*8:]
		return t.hdrAdr + uint64(int64(int32(binary.LittleEndian.Uint32(e)))),
			t.hdrAdr + uint64(int64(int32(binary.LittleEndian.Uint32(e[4:]))))
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s, _ := entry(m); s <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, false
	}
	_, addr := entry(lo - 1)
	if addr < t.eh.addr || addr-t.eh.addr >= uint64(len(t.eh.data)) {
		return 0, false
	}
	return addr - t.eh.addr, true
}

// find returns the FDE covering pc and its section, or ErrNoCFI.
func (t *Table) find(pc uint64) (*section, fde, error) {
	if t.hdr != nil {
		if off, ok := t.hdrSearch(pc); ok {
			f, err := t.eh.fdeAt(off, nil)
			if err != nil {
				return nil, fde{}, err
			}
			if pc >= f.lo && pc < f.hi {
				return &t.eh, f, nil
			}
		}
	} else if sp, ok := search(t.ehIdx, pc); ok {
		f, err := t.eh.fdeAt(sp.off, nil)
		return &t.eh, f, err
	}
	if sp, ok := search(t.dbgIdx, pc); ok {
		f, err := t.debug.fdeAt(sp.off, nil)
		return &t.debug, f, err
	}
	return nil, fde{}, ErrNoCFI
}

// Row evaluates the call frame information at link-time address pc: the rules in effect
// after the instructions for addresses up to pc have run. It returns an error wrapping
// ErrNoCFI when no FDE covers pc.
func (t *Table) Row(pc uint64) (Row, error) {
	var in interp
	var r Row
	err := t.row(&in, pc, &r)
	return r, err
}

// row is Row with a reusable interpreter and result.
func (t *Table) row(in *interp, pc uint64, out *Row) error {
	s, f, err := t.find(pc)
	if err != nil {
		if errors.Is(err, ErrNoCFI) {
			return fmt.Errorf("unwind: %s: %#x: %w", t.name, pc, err)
		}
		return fmt.Errorf("unwind: %w", err)
	}
	if err := in.run(s, &f, pc, out); err != nil {
		return fmt.Errorf("unwind: %w", err)
	}
	return nil
}

// isSwitch reports whether link-time address pc is in a function that calls on another stack.
func (t *Table) isSwitch(pc uint64) bool {
	for _, r := range t.switches {
		if pc >= r.lo && pc < r.hi {
			return true
		}
	}
	return false
}

// FunctionRanges returns the link-time address ranges [lo, hi) of the FDEs of .eh_frame and
// .debug_frame, sorted by start, one per start (the longest): each is one function, or one part of
// a function split into hot and cold parts. They bound the functions of an object whose symbols
// were stripped. Empty FDEs are left out.
func (t *Table) FunctionRanges() ([][2]uint64, error) {
	var out [][2]uint64
	for _, sp := range t.ehIdx {
		out = append(out, [2]uint64{sp.lo, sp.hi})
	}
	if t.hdr != nil {
		cies := map[uint64]cie{}
		for i := 0; i+8 <= len(t.hdr); i += 8 {
			addr := t.hdrAdr + uint64(int64(int32(binary.LittleEndian.Uint32(t.hdr[i+4:]))))
			if addr < t.eh.addr || addr-t.eh.addr >= uint64(len(t.eh.data)) {
				return nil, fmt.Errorf("unwind: %s: .eh_frame_hdr entry %d points at %#x, outside .eh_frame", t.name, i/8, addr)
			}
			f, err := t.eh.fdeAt(addr-t.eh.addr, cies)
			if err != nil {
				return nil, fmt.Errorf("unwind: %w", err)
			}
			out = append(out, [2]uint64{f.lo, f.hi})
		}
	}
	for _, sp := range t.dbgIdx {
		out = append(out, [2]uint64{sp.lo, sp.hi})
	}
	slices.SortFunc(out, func(a, b [2]uint64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(b[1], a[1])
	})
	j := 0
	for _, r := range out {
		if r[1] <= r[0] || (j > 0 && out[j-1][0] == r[0]) {
			continue
		}
		out[j] = r
		j++
	}
	return out[:j], nil
}

// isRoot reports whether link-time address pc is in a function that starts a stack.
func (t *Table) isRoot(pc uint64) bool {
	for _, r := range t.roots {
		if pc >= r.lo && pc < r.hi {
			return true
		}
	}
	return false
}

// Bias returns runtime address minus link-time address for a mapping of this load object at
// start with file offset offset, from its PT_LOAD segments. ok is false when no segment holds
// that offset.
func (t *Table) Bias(start, offset uint64) (bias uint64, ok bool) {
	for _, l := range t.loads {
		if offset >= l.off && offset-l.off < max(l.filesz, 1) {
			return start - (l.vaddr + (offset - l.off)), true
		}
	}
	return 0, false
}
