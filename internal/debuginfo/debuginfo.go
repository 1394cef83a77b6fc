// Package debuginfo reads the DWARF line tables and inlined-function trees of one ELF load object, from the object or from its separate debug file.
package debuginfo

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"er/internal/objfile"
	"er/internal/regfile"
)

// DefaultDebugDirs are the global debug directories searched by Open for
// separate debug files (by build id, and by .gnu_debuglink): $ER_DEBUG_DIR, else /usr/lib/debug
// (objfile.DebugDirs).
var DefaultDebugDirs = objfile.DebugDirs()

// Frame is one source frame at an address: a function, or a function
// inlined into another.
type Frame struct {
	Func    string // DW_AT_linkage_name if any (mangled as in the object), else DW_AT_name; "" when DWARF has lines but no function here
	File    string // source file, cleaned, absolute where DW_AT_comp_dir makes it so
	Line    int    // source line; 0 means the compiler gave no line (instructions without line numbers)
	Inlined bool   // this frame is an inlined call (its caller is the next frame)
	Entry   uint64 // link-time entry of the function, or of this inlined instance
}

// LineRow is one row of the line table: the address range [Lo,Hi) comes
// from File:Line.
type LineRow struct {
	Lo, Hi uint64
	File   string
	Line   int
	IsStmt bool // a recommended breakpoint location (the start of a statement)
}

// Function is a function (DW_TAG_subprogram with code) as DWARF describes it.
type Function struct {
	Name     string      // linkage name if any, else plain name
	Lo, Hi   uint64      // the contiguous range of the function containing the queried address
	Ranges   [][2]uint64 // all its [lo,hi) ranges (hot/cold parts give several)
	Entry    uint64      // link-time entry address
	DeclFile string      // where it is declared, when DWARF says
	DeclLine int
}

// Info is the debug information of one load object. Its queries take
// link-time addresses (as in the object's symbol table) and are safe for
// concurrent use. Line tables and function trees are indexed per
// compilation unit, the first time an address in that unit is asked for.
type Info struct {
	Path     string // the load object, as given to Open
	BuildID  string // its GNU build id in hex, "" if none: compare with the archived one before trusting the lines
	HasDWARF bool   // DWARF was found and its sections could be read
	Source   string // the file the DWARF was read from: Path itself or a separate debug file; "" without DWARF
	Via      string // how Source was found: "embedded", "build-id" or "debuglink"; "" without DWARF
	Note     string // one line for people: where the DWARF came from, or where it was looked for

	execRanges [][2]uint64 // executable sections of the load object, to drop line sequences of discarded code

	mu      sync.Mutex
	d       *dwarf.Data
	info    []byte // raw .debug_info, for the unit headers
	line    []byte // raw .debug_line, to check line-table headers
	units   []*unit
	spans   []unitSpan // unit address ranges, sorted by lo
	maxHi   []uint64   // maxHi[i] = max(spans[0..i].hi)
	listed  bool       // listUnits has run
	files   []string
	fileIDs map[string]uint32
	origins map[dwarf.Offset]origin
	qual    map[dwarf.Offset]string // C++ functions without linkage names, qualified by their scopes
	aux     *dwarf.Reader
	err     error
	vars    []Variable // Variables, once read
	varsErr error

	fixedFiles []string // what Files answers, for an Info made from an extract (FromExtract); nil: computed
}

// Open finds and reads the debug information of the ELF file at path: its
// own DWARF, else a separate debug file found by build id
// (DIR/.build-id/xx/yyyy.debug) or by .gnu_debuglink (next to the file, in
// its .debug/ subdirectory, or DIR/<the file's directory>/), whose CRC must
// match, for DIR in DefaultDebugDirs. Compressed sections (SHF_COMPRESSED
// with zlib or zstd, and .zdebug_*) and DWARF 2 to 5 are read. A file
// without DWARF gives an Info with HasDWARF false and no lines, not an
// error; an error means path is not a readable ELF file.
func Open(path string) (*Info, error) { return OpenWith(path, DefaultDebugDirs) }

// OpenWith is Open with the global debug directories given.
func OpenWith(path string, debugDirs []string) (*Info, error) {
	f, _, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("debuginfo: %w", err)
	}
	defer f.Close()
	return openReader(path, f, debugDirs)
}

// openReader is OpenWith for the ELF image r of the file at path.
func openReader(path string, r io.ReaderAt, debugDirs []string) (*Info, error) {
	var magic [4]byte
	n, err := r.ReadAt(magic[:], 0)
	if n < 4 && err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("debuginfo: %s: %w", path, err)
	}
	if n < 4 || string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("debuginfo: %s: not an ELF file (starts with % x)", path, magic[:n])
	}
	ef, err := newELF(path, r)
	if err != nil {
		return nil, err
	}
	in := &Info{Path: path, BuildID: buildID(ef), execRanges: execRanges(ef)}
	if hasDWARF(ef) {
		in.Via, in.Source = "embedded", path
		in.Note = "DWARF embedded in " + path
		if err := in.load(path, ef, r); err != nil {
			in.fail(err)
		}
		return in, nil
	}
	in.findSeparate(ef, debugDirs)
	return in, nil
}

// newELF parses the ELF headers of r, turning a panic of debug/elf on
// malformed input into an error.
func newELF(name string, r io.ReaderAt) (ef *elf.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			ef, err = nil, fmt.Errorf("debuginfo: %s: malformed ELF: %v", name, p)
		}
	}()
	ef, err = elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("debuginfo: %s: %w", name, err)
	}
	return ef, nil
}

// execRanges lists the [lo,hi) of the SHF_ALLOC|SHF_EXECINSTR sections.
func execRanges(ef *elf.File) [][2]uint64 {
	var r [][2]uint64
	for _, s := range ef.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Flags&elf.SHF_ALLOC != 0 && s.Size > 0 {
			r = append(r, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	return r
}

// fail records err as the reason the DWARF cannot be used.
func (in *Info) fail(err error) {
	in.HasDWARF, in.Source, in.Via = false, "", ""
	in.d = nil
	in.err = err
	in.Note += " (unusable: " + err.Error() + ")"
}

// Err reports the first problem met while reading the debug information (a
// malformed section or unit, a debug file whose CRC does not match), or nil.
// Queries keep answering from what could be read.
func (in *Info) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// noteErr keeps the first error. The caller holds in.mu.
func (in *Info) noteErr(err error) {
	if in.err == nil && err != nil {
		in.err = err
	}
}

// Line returns the file and line of pc, the innermost source position.
// ok is false when no line-table row covers pc.
func (in *Info) Line(pc uint64) (file string, line int, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	_, r, ok := in.rowAt(pc)
	if !ok {
		return "", 0, false
	}
	return in.files[r.file], int(r.line), true
}

// Frames returns the source frames at pc, innermost first: for code inlined
// into f, the inlined function(s) with the file:line inside them, then f
// with the line of the inlined call (DW_AT_call_file, DW_AT_call_line). For
// code that is not inlined, one frame. ok is false when pc has no line
// information.
func (in *Info) Frames(pc uint64) ([]Frame, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	u, r, ok := in.rowAt(pc)
	if !ok {
		return nil, false
	}
	file, line := in.files[r.file], int(r.line)
	ix := u.idx
	n := ix.nodeAt(pc)
	if n < 0 {
		return []Frame{{File: file, Line: line}}, true
	}
	var frames []Frame
	for {
		nd := &ix.nodes[n]
		frames = append(frames, Frame{Func: nd.name, File: file, Line: line, Inlined: nd.parent >= 0, Entry: nd.entry})
		if nd.parent < 0 {
			return frames, true
		}
		file, line = in.files[nd.callFile], int(nd.callLine)
		n = nd.parent
	}
}

// FuncRange gives the name and [lo,hi) of the outermost function containing
// pc, from DW_TAG_subprogram: useful for static functions missing from the
// symbol table. For a function in several parts (hot and cold), [lo,hi) is
// the part containing pc.
func (in *Info) FuncRange(pc uint64) (name string, lo, hi uint64, ok bool) {
	f, ok := in.Function(pc)
	return f.Name, f.Lo, f.Hi, ok
}

// Function describes the outermost function containing pc.
func (in *Info) Function(pc uint64) (Function, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, u := range in.unitsAt(pc) {
		ix := in.index(u)
		n := ix.nodeAt(pc)
		if n < 0 {
			continue
		}
		for ix.nodes[n].parent >= 0 {
			n = ix.nodes[n].parent
		}
		nd := &ix.nodes[n]
		f := Function{Name: nd.name, Ranges: slices.Clone(nd.ranges), Entry: nd.entry, DeclFile: in.files[nd.declFile], DeclLine: int(nd.declLine)}
		for _, r := range nd.ranges {
			if r[0] <= pc && pc < r[1] {
				f.Lo, f.Hi = r[0], r[1]
			}
		}
		return f, true
	}
	return Function{}, false
}

// Rows lists the line-table rows that cover addresses in [lo,hi), sorted by
// address and clipped to [lo,hi). Of several rows at one address only the
// last counts (the others cover no byte), as in Line.
func (in *Info) Rows(lo, hi uint64) []LineRow {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []LineRow
	for _, u := range in.unitsIn(lo, hi) {
		ix := in.index(u)
		rows := ix.rows
		k := sort.Search(len(rows), func(i int) bool { return rows[i].addr > lo }) - 1
		k = max(k, 0)
		for ; k+1 < len(rows) && rows[k].addr < hi; k++ {
			r := rows[k]
			if r.flags&rowEnd != 0 {
				continue
			}
			rlo, rhi := max(r.addr, lo), min(rows[k+1].addr, hi)
			if rlo < rhi {
				out = append(out, LineRow{Lo: rlo, Hi: rhi, File: in.files[r.file], Line: int(r.line), IsStmt: r.flags&rowStmt != 0})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Lo < out[j].Lo })
	return out
}

// Files lists the source files that have code in the line tables and the
// primary files of the compile units, sorted. It indexes every unit.
func (in *Info) Files() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.fixedFiles != nil {
		return slices.Clone(in.fixedFiles)
	}
	in.listUnits()
	seen := make(map[uint32]bool)
	for _, u := range in.units {
		ix := in.index(u)
		for _, r := range ix.rows {
			seen[r.file] = true
		}
		if u.name != "" {
			seen[in.fileID(u.name)] = true
		}
	}
	var out []string
	for id := range seen {
		if f := in.files[id]; f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// rowAt finds the line row covering pc and the unit holding it. The caller
// holds in.mu.
func (in *Info) rowAt(pc uint64) (*unit, row, bool) {
	for _, u := range in.unitsAt(pc) {
		if r, ok := in.index(u).rowAt(pc); ok {
			return u, r, true
		}
	}
	return nil, row{}, false
}
