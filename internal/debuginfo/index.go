package debuginfo

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"sort"
)

// row is one line-table row; it covers [addr, next row's addr).
type row struct {
	addr  uint64
	file  uint32 // index into Info.files
	line  int32
	flags uint8
}

// Row flags.
const (
	rowStmt = 1 << iota // is_stmt
	rowEnd              // end_sequence: the first address after a sequence
)

// node is a function or an inlined instance.
type node struct {
	name     string
	entry    uint64
	parent   int32       // enclosing node for an inlined instance, -1 for a function
	callFile uint32      // inlined instance: file of the call site
	callLine int32       // inlined instance: line of the call site
	declFile uint32      // function: where it is declared
	declLine int32       // function
	ranges   [][2]uint64 // function: its ranges
}

// seg is an elementary address range and the innermost node covering it.
type seg struct {
	lo, hi uint64
	node   int32
}

// cuIndex is the index of one compilation unit: its line rows sorted by
// address (sequences one after the other, each ended by a rowEnd row), and
// the innermost function or inlined instance of each address range.
type cuIndex struct {
	rows  []row
	segs  []seg
	nodes []node
}

// rowAt finds the row covering pc.
func (ix *cuIndex) rowAt(pc uint64) (row, bool) {
	i := sort.Search(len(ix.rows), func(i int) bool { return ix.rows[i].addr > pc }) - 1
	if i < 0 || ix.rows[i].flags&rowEnd != 0 || i+1 == len(ix.rows) {
		return row{}, false
	}
	return ix.rows[i], true
}

// nodeAt finds the innermost node covering pc, or -1.
func (ix *cuIndex) nodeAt(pc uint64) int32 {
	i := sort.Search(len(ix.segs), func(i int) bool { return ix.segs[i].lo > pc }) - 1
	if i < 0 || pc >= ix.segs[i].hi {
		return -1
	}
	return ix.segs[i].node
}

// seqRanges returns the address ranges of the line sequences.
func (ix *cuIndex) seqRanges() [][2]uint64 {
	var out [][2]uint64
	start := -1
	for i, r := range ix.rows {
		if start < 0 {
			start = i
		}
		if r.flags&rowEnd != 0 {
			out = append(out, [2]uint64{ix.rows[start].addr, r.addr})
			start = -1
		}
	}
	return out
}

// index returns the index of u, building it the first time. A malformed
// unit gives a partial index and records the error. The caller holds in.mu.
func (in *Info) index(u *unit) *cuIndex {
	if u.idx != nil {
		return u.idx
	}
	u.idx = &cuIndex{}
	defer func() {
		if p := recover(); p != nil {
			in.noteErr(fmt.Errorf("debuginfo: %s: unit at .debug_info offset %#x: malformed DWARF: %v", in.Source, u.start, p))
		}
	}()
	files, err := in.readLines(u)
	if err != nil {
		in.noteErr(fmt.Errorf("debuginfo: %s: line table of unit at .debug_info offset %#x: %w", in.Source, u.start, err))
	}
	if err := in.readTree(u, files); err != nil {
		in.noteErr(fmt.Errorf("debuginfo: %s: unit at .debug_info offset %#x: %w", in.Source, u.start, err))
	}
	return u.idx
}

// readLines reads the line table of u into u.idx.rows and returns the
// unit's file table mapped to file ids (indexed by DWARF file number).
func (in *Info) readLines(u *unit) ([]uint32, error) {
	if off, ok := u.entry.Val(dwarf.AttrStmtList).(int64); ok {
		if err := checkLineHeader(in.line, off); err != nil {
			return nil, err
		}
	}
	lr, err := in.d.LineReader(u.entry)
	if err != nil || lr == nil {
		return nil, err
	}
	ids := make(map[*dwarf.LineFile]uint32)
	id := func(f *dwarf.LineFile) uint32 {
		if f == nil {
			return 0
		}
		if v, ok := ids[f]; ok {
			return v
		}
		v := in.fileID(in.absPath(u, f.Name))
		ids[f] = v
		return v
	}
	var seqs [][]row
	var seq []row
	var e dwarf.LineEntry
	for {
		if err = lr.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			break
		}
		r := row{addr: e.Address, file: id(e.File), line: int32(min(max(e.Line, 0), 1<<31-1))}
		if e.IsStmt {
			r.flags |= rowStmt
		}
		if e.EndSequence {
			r.flags |= rowEnd
		}
		switch n := len(seq); {
		case n > 0 && seq[n-1].addr == r.addr:
			seq[n-1] = r // the earlier row covers no byte
		case n > 0 && seq[n-1].addr > r.addr:
			// Addresses going backwards: malformed; keep what came before.
		default:
			seq = append(seq, r)
		}
		if e.EndSequence {
			if len(seq) >= 2 && in.isCode(seq[0].addr) {
				seqs = append(seqs, seq)
			}
			seq = nil
		}
	}
	sort.SliceStable(seqs, func(i, j int) bool { return seqs[i][0].addr < seqs[j][0].addr })
	n := 0
	for _, s := range seqs {
		n += len(s)
	}
	rows := make([]row, 0, n)
	for _, s := range seqs {
		rows = append(rows, s...)
	}
	if !sort.SliceIsSorted(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr }) {
		// Overlapping sequences: keep the rows in address order, end rows first.
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].addr != rows[j].addr {
				return rows[i].addr < rows[j].addr
			}
			return rows[i].flags&rowEnd > rows[j].flags&rowEnd
		})
	}
	u.idx.rows = rows
	var files []uint32
	for _, f := range lr.Files() {
		files = append(files, id(f))
	}
	return files, err
}

// span is an address range of a node, with the node's nesting depth.
type span struct {
	lo, hi uint64
	node   int32
	depth  int32
}

// readTree walks the DIEs of u, collecting functions and inlined instances
// with code, and builds u.idx.segs. files maps the unit's DWARF file
// numbers to file ids.
func (in *Info) readTree(u *unit, files []uint32) error {
	ix := u.idx
	file := func(v any) uint32 {
		if i, ok := v.(int64); ok && i >= 0 && i < int64(len(files)) {
			return files[i]
		}
		return 0
	}
	var spans []span
	var depths []int32
	var dies []*dwarf.Entry // the DIE of each node, named after the walk
	defer func() {
		// Names last, so that C++ scopes seen anywhere in the unit qualify them.
		for i, e := range dies {
			o := in.originOf(e)
			n := &ix.nodes[i]
			n.name = o.name
			if n.parent < 0 && o.declLine > 0 && o.declAt >= u.start && o.declAt < u.end {
				n.declFile, n.declLine = file(o.declFile), o.declLine
			}
		}
		ix.segs = segments(spans)
	}()
	r := in.d.Reader()
	r.Seek(u.die)
	cu, err := r.Next()
	if err != nil || cu == nil || !cu.Children {
		return err
	}
	cpp := isCPlusPlus(cu)
	// The innermost node enclosing the children being read, and (C++) the
	// qualifying prefix of their names.
	type level struct {
		node   int32
		prefix string
		inFunc bool
	}
	stack := []level{{node: -1}}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		if e.Offset >= u.end {
			return fmt.Errorf("DIE at %#x: past the end of the unit (missing null entry)", e.Offset)
		}
		cur := stack[len(stack)-1]
		in.noteScope(e, cur.prefix, cpp)
		child := cur
		if cpp {
			child.prefix, child.inFunc = cur.prefix+in.scopeName(e, cur.inFunc), cur.inFunc || e.Tag == dwarf.TagSubprogram
			if child.prefix != cur.prefix {
				child.prefix += "::"
			}
		}
		if e.Tag != dwarf.TagSubprogram && e.Tag != dwarf.TagInlinedSubroutine {
			if e.Children && mayHoldCode(e.Tag, cpp) {
				stack = append(stack, child)
			} else if e.Children {
				r.SkipChildren()
			}
			continue
		}
		ranges, err := in.d.Ranges(e)
		if err != nil {
			return fmt.Errorf("DIE at %#x: ranges: %w", e.Offset, err)
		}
		ranges = validRanges(ranges)
		if len(ranges) == 0 {
			if e.Children && cpp {
				// An abstract instance may hold local classes (lambdas).
				child.node = -1
				stack = append(stack, child)
			} else if e.Children {
				r.SkipChildren()
			}
			continue
		}
		n := node{entry: entryPC(e, ranges), parent: -1}
		depth := int32(0)
		if e.Tag == dwarf.TagInlinedSubroutine && cur.node >= 0 {
			n.parent = cur.node
			n.callFile = file(e.Val(dwarf.AttrCallFile))
			if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok && l > 0 && l < 1<<31 {
				n.callLine = int32(l)
			}
			depth = depths[cur.node] + 1
		} else {
			n.ranges = ranges
		}
		idx := int32(len(ix.nodes))
		ix.nodes = append(ix.nodes, n)
		depths = append(depths, depth)
		dies = append(dies, e)
		for _, rg := range ranges {
			spans = append(spans, span{rg[0], rg[1], idx, depth})
		}
		if e.Children {
			child.node = idx
			stack = append(stack, child)
		}
	}
	return nil
}

// mayHoldCode reports whether a DIE with this tag may have functions with
// code (or, in C++, local classes naming them) among its descendants.
func mayHoldCode(tag dwarf.Tag, cpp bool) bool {
	switch tag {
	case dwarf.TagLexDwarfBlock, dwarf.TagNamespace, dwarf.TagModule, dwarf.TagTryDwarfBlock, dwarf.TagCatchDwarfBlock,
		dwarf.TagCommonDwarfBlock, dwarf.TagWithStmt:
		return true
	case dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType:
		return cpp
	}
	return false
}

// DW_LANG values of C++.
var cplusplus = map[int64]bool{0x04: true, 0x19: true, 0x1a: true, 0x21: true, 0x2a: true, 0x2b: true}

// isCPlusPlus reports whether the unit's language is C++.
func isCPlusPlus(cu *dwarf.Entry) bool {
	l, _ := cu.Val(dwarf.AttrLanguage).(int64)
	return cplusplus[l]
}

// scopeName is how a DIE that may hold named things qualifies their names
// (C++): a namespace, class, structure, union or function gives its name;
// other DIEs give "".
func (in *Info) scopeName(e *dwarf.Entry, inFunc bool) string {
	name, _ := e.Val(dwarf.AttrName).(string)
	switch e.Tag {
	case dwarf.TagNamespace:
		if name == "" {
			return "(anonymous namespace)"
		}
	case dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType:
		if name == "" && inFunc {
			return "{lambda}" // the closure type of a lambda has no name
		}
		if name == "" {
			return "{unnamed}"
		}
	case dwarf.TagSubprogram:
		if name == "" {
			if ref, ok := reference(e); ok {
				name = in.resolve(ref, 1).plain
			}
		}
	default:
		return ""
	}
	return name
}

// noteScope records the qualified name of a C++ function DIE that has no
// linkage name (the operator() of a lambda, a member of a local class).
func (in *Info) noteScope(e *dwarf.Entry, prefix string, cpp bool) {
	if !cpp || prefix == "" || e.Tag != dwarf.TagSubprogram {
		return
	}
	if o := ownOrigin(e); !o.linkage && o.name != "" {
		in.qual[e.Offset] = prefix + o.name
	}
}

// validRanges drops empty ranges and those of code discarded at link time
// (starting at 0).
func validRanges(rs [][2]uint64) [][2]uint64 {
	out := rs[:0]
	for _, r := range rs {
		if r[0] < r[1] && r[0] != 0 {
			out = append(out, r)
		}
	}
	return out
}

// entryPC is the entry address of a DIE with the given ranges:
// DW_AT_entry_pc, else DW_AT_low_pc, else the start of its first range.
func entryPC(e *dwarf.Entry, ranges [][2]uint64) uint64 {
	low, hasLow := e.Val(dwarf.AttrLowpc).(uint64)
	if f := e.AttrField(dwarf.AttrEntrypc); f != nil {
		switch v := f.Val.(type) {
		case uint64:
			return v
		case int64: // DWARF 5: an offset from the base address
			if hasLow {
				return low + uint64(v)
			}
			return ranges[0][0] + uint64(v)
		}
	}
	if hasLow {
		return low
	}
	return ranges[0][0]
}

// segments cuts the address space covered by spans into elementary ranges,
// each with its innermost (deepest) node, merging neighbours with the same
// node. Among equally deep overlapping spans the one starting last wins.
func segments(spans []span) []seg {
	if len(spans) == 0 {
		return nil
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	points := make([]uint64, 0, 2*len(spans))
	for _, s := range spans {
		points = append(points, s.lo, s.hi)
	}
	sort.Slice(points, func(i, j int) bool { return points[i] < points[j] })
	var out []seg
	var active []span
	next := 0
	for k := 0; k+1 < len(points); k++ {
		p, q := points[k], points[k+1]
		if p == q {
			continue
		}
		keep := active[:0]
		for _, s := range active {
			if s.hi > p {
				keep = append(keep, s)
			}
		}
		active = keep
		for next < len(spans) && spans[next].lo <= p {
			if spans[next].hi > p {
				active = append(active, spans[next])
			}
			next++
		}
		if len(active) == 0 {
			continue
		}
		best := active[0]
		for _, s := range active[1:] {
			if s.depth > best.depth || s.depth == best.depth && s.lo >= best.lo {
				best = s
			}
		}
		if n := len(out); n > 0 && out[n-1].hi == p && out[n-1].node == best.node {
			out[n-1].hi = q
		} else {
			out = append(out, seg{p, q, best.node})
		}
	}
	return out
}

// origin is what a function DIE inherits through DW_AT_abstract_origin and
// DW_AT_specification.
type origin struct {
	name     string
	plain    string       // DW_AT_name
	linkage  bool         // name is a linkage name
	declFile any          // DW_AT_decl_file as read
	declLine int32        // DW_AT_decl_line
	declAt   dwarf.Offset // the DIE carrying them (its unit's file table applies)
}

// complete reports whether nothing more is to be learnt from origins.
func (o *origin) complete() bool { return o.linkage && o.declLine != 0 }

// merge fills what o lacks from p.
func (o *origin) merge(p origin) {
	if !o.linkage && p.linkage || o.name == "" {
		o.name, o.linkage = p.name, p.linkage
	}
	if o.plain == "" {
		o.plain = p.plain
	}
	if o.declLine == 0 {
		o.declFile, o.declLine, o.declAt = p.declFile, p.declLine, p.declAt
	}
}

// maxOriginDepth bounds the chain of abstract origins and specifications.
const maxOriginDepth = 8

// ownOrigin reads the name and declaration attributes of e itself.
func ownOrigin(e *dwarf.Entry) origin {
	var o origin
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		o.name, o.linkage = s, true
	} else if s, ok := e.Val(attrMIPSLinkageName).(string); ok && s != "" {
		o.name, o.linkage = s, true
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok {
		o.plain = s
		if !o.linkage {
			o.name = s
		}
	}
	if l, ok := e.Val(dwarf.AttrDeclLine).(int64); ok && l > 0 && l < 1<<31 {
		o.declFile, o.declLine, o.declAt = e.Val(dwarf.AttrDeclFile), int32(l), e.Offset
	}
	return o
}

// ownQualified is ownOrigin with a plain name replaced by its qualified
// name when the unit's walk recorded one.
func (in *Info) ownQualified(e *dwarf.Entry) origin {
	o := ownOrigin(e)
	if q, ok := in.qual[e.Offset]; ok && !o.linkage {
		o.name = q
	}
	return o
}

// reference returns the DIE that e is an instance or definition of.
func reference(e *dwarf.Entry) (dwarf.Offset, bool) {
	if ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		return ref, true
	}
	ref, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	return ref, ok
}

// originOf resolves the name and declaration of e. The caller holds in.mu.
func (in *Info) originOf(e *dwarf.Entry) origin {
	o := in.ownQualified(e)
	if ref, ok := reference(e); ok && !o.complete() {
		o.merge(in.resolve(ref, 1))
	}
	return o
}

// resolve is originOf for the DIE at off, cached. The caller holds in.mu.
func (in *Info) resolve(off dwarf.Offset, depth int) origin {
	if o, ok := in.origins[off]; ok {
		return o
	}
	var o origin
	if e := in.entryAt(off); e != nil {
		o = in.ownQualified(e)
		if ref, ok := reference(e); ok && !o.complete() && depth < maxOriginDepth {
			o.merge(in.resolve(ref, depth+1))
		}
	}
	in.origins[off] = o
	return o
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, used by old compilers.
const attrMIPSLinkageName = dwarf.Attr(0x2007)

// entryAt reads the DIE at off, or returns nil. The caller holds in.mu.
func (in *Info) entryAt(off dwarf.Offset) *dwarf.Entry {
	if in.aux == nil {
		in.aux = in.d.Reader()
	}
	in.aux.Seek(off)
	e, err := in.aux.Next()
	if err != nil || e == nil || e.Offset != off {
		return nil
	}
	return e
}

// checkLineHeader guards debug/dwarf, which allocates the directory and
// file tables of a DWARF 5 line-table header at whatever size the header
// claims: a count larger than the bytes left in the table is an error. Other
// defects are left for debug/dwarf to report.
func checkLineHeader(sec []byte, off int64) error {
	if off < 0 || off >= int64(len(sec)) {
		return nil
	}
	b := &reader{data: sec, p: int(off)}
	length, offSize := b.fixed(4), 4
	if length == 0xffffffff {
		length, offSize = b.fixed(8), 8
	}
	end := b.p + int(min(length, uint64(len(sec))))
	if b.bad || end > len(sec) || b.fixed(2) != 5 {
		return nil
	}
	b.p += 2 + offSize + 5 // address and selector sizes, header length, five one-byte fields
	b.p += int(b.fixed(1)) - 1
	for _, what := range []string{"directories", "files"} {
		forms := make([]uint64, b.fixed(1))
		for i := range forms {
			b.uleb() // content type
			forms[i] = b.uleb()
		}
		count := b.uleb()
		if b.bad {
			return nil
		}
		if count > uint64(end-b.p) {
			return fmt.Errorf(".debug_line offset %#x: header claims %d %s in %d bytes", off, count, what, end-b.p)
		}
		for range count {
			for _, f := range forms {
				b.skipForm(f, offSize)
			}
			if b.bad {
				return nil
			}
		}
	}
	return nil
}

// reader reads little-endian DWARF data; reading past the end sets bad.
type reader struct {
	data []byte
	p    int
	bad  bool
}

func (b *reader) fixed(n int) uint64 {
	if b.p < 0 || n > len(b.data)-b.p {
		b.bad = true
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b.data[b.p+i])
	}
	b.p += n
	return v
}

func (b *reader) uleb() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := b.fixed(1)
		if b.bad {
			return 0
		}
		if shift < 64 {
			v |= (c & 0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

// skipForm skips a value of the given form, as debug/dwarf reads the
// entries of a DWARF 5 line-table header (unknown forms take no bytes).
func (b *reader) skipForm(form uint64, offSize int) {
	switch form {
	case 0x08: // string
		for b.fixed(1) != 0 && !b.bad {
		}
	case 0x0e, 0x1f, 0x1d, 0x17: // strp, line_strp, strp_sup, sec_offset
		b.p += offSize
	case 0x1a, 0x0f: // strx, udata
		b.uleb()
	case 0x25, 0x0b: // strx1, data1
		b.p++
	case 0x26, 0x05: // strx2, data2
		b.p += 2
	case 0x27: // strx3
		b.p += 3
	case 0x28, 0x06: // strx4, data4
		b.p += 4
	case 0x07: // data8
		b.p += 8
	case 0x1e: // data16
		b.p += 16
	case 0x09: // block
		n := b.uleb()
		if n > uint64(len(b.data)) {
			b.bad = true
			return
		}
		b.p += int(n)
	}
	if b.p > len(b.data) {
		b.bad = true
	}
}
