package debuginfo

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"er/internal/varfield"
)

// An extract is the part of an Info that answers its queries (Line, Frames, Function, Rows) for a
// set of address ranges, with the list Files gives and, optionally, the Variables: what er's
// compact archives keep of a load object's debug information (docs/experiment-format.md, "Compact
// archives"). Inside the ranges the Info that FromExtract makes answers as the Info extracted
// from did; outside them it answers as the original or not at all (no line, no function), never
// otherwise.

// extractMagic starts an encoded extract; its last byte is the version.
const extractMagic = "ERDI\x01"

// Extract encodes the part of in that covers the address ranges keep ([lo, hi) each, in any order,
// overlapping or not), with files as what Files answers (the caller may have it cached; nil: in's
// own list) and, with vars, the variables.
func (in *Info) Extract(keep [][2]uint64, files []string, vars bool) ([]byte, error) {
	var vs []Variable
	if vars {
		var err error
		if vs, err = in.Variables(); err != nil {
			return nil, err
		}
	}
	if files == nil {
		files = in.Files()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.listUnits()
	rs := MergeRanges(keep)
	x := extractWriter{in: in, ids: map[uint32]uint64{0: 0}, names: []string{""}, spans: map[*unit][][2]uint64{}}
	for _, s := range in.spans {
		x.spans[s.u] = append(x.spans[s.u], [2]uint64{s.lo, s.hi})
	}
	var units []*unit
	for _, u := range in.units {
		if slices.ContainsFunc(x.spans[u], func(s [2]uint64) bool { return meetsAny(rs, s[0], s[1]) }) {
			units = append(units, u)
		}
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(units)))
	for _, u := range units {
		body = x.unit(body, u, rs)
	}
	// The file table comes first: the units' ids refer to it.
	b := append([]byte(extractMagic), binary.AppendUvarint(nil, uint64(len(files)))...)
	for _, f := range files {
		b = varfield.AppendStr(b, f)
	}
	b = append(b, x.fileTable()...)
	b = append(b, body...)
	return appendVariables(b, vs, vars), nil
}

// MergeRanges sorts the address ranges rs ([lo, hi) each) and merges those that overlap or touch;
// empty ones go.
func MergeRanges(rs [][2]uint64) [][2]uint64 {
	out := make([][2]uint64, 0, len(rs))
	for _, r := range rs {
		if r[0] < r[1] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b [2]uint64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	n := 0
	for _, r := range out {
		if n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

// meetsAny reports whether [lo, hi) meets one of the sorted, disjoint ranges rs.
func meetsAny(rs [][2]uint64, lo, hi uint64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i][1] > lo })
	return i < len(rs) && rs[i][0] < hi
}

// extractWriter encodes the units of an extract, renumbering the files they name.
type extractWriter struct {
	in    *Info
	ids   map[uint32]uint64 // Info file id -> extract file id
	names []string          // extract file id -> name
	spans map[*unit][][2]uint64
}

func (x *extractWriter) file(id uint32) uint64 {
	if v, ok := x.ids[id]; ok {
		return v
	}
	v := uint64(len(x.names))
	x.ids[id] = v
	x.names = append(x.names, x.in.files[id])
	return v
}

func (x *extractWriter) fileTable() []byte {
	b := binary.AppendUvarint(nil, uint64(len(x.names)-1))
	for _, n := range x.names[1:] {
		b = varfield.AppendStr(b, n)
	}
	return b
}

// unit appends the part of u that covers rs: all its spans (unitsAt and unitsIn find it where
// they did), the rows that cover rs with the row after each run (where the last one ends; marked
// an end row, so that it covers nothing more), the segments that meet rs, and their nodes with the
// nodes that enclose them.
func (x *extractWriter) unit(b []byte, u *unit, rs [][2]uint64) []byte {
	in := x.in
	spans := x.spans[u]
	b = binary.AppendUvarint(b, uint64(len(spans)))
	for _, s := range spans {
		b = binary.AppendUvarint(b, s[0])
		b = binary.AppendUvarint(b, s[1]-s[0])
	}
	ix := in.index(u)

	// Rows: runs [i0, i1] of indexes, i1 the first row at or past the range's end.
	var runs [][2]int
	for _, r := range rs {
		if len(ix.rows) == 0 {
			break
		}
		i0 := max(sort.Search(len(ix.rows), func(i int) bool { return ix.rows[i].addr > r[0] })-1, 0)
		i1 := min(sort.Search(len(ix.rows), func(i int) bool { return ix.rows[i].addr >= r[1] }), len(ix.rows)-1)
		if n := len(runs); n > 0 && i0 <= runs[n-1][1] {
			runs[n-1][1] = max(runs[n-1][1], i1)
			continue
		}
		runs = append(runs, [2]int{i0, i1})
	}
	var rows []row
	for k, run := range runs {
		for i := run[0]; i <= run[1]; i++ {
			r := ix.rows[i]
			if i == run[1] && (k+1 == len(runs) || runs[k+1][0] > i) {
				r.flags |= rowEnd // the end of what is kept
			}
			rows = append(rows, r)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(rows)))
	var last uint64
	for _, r := range rows {
		b = binary.AppendUvarint(b, r.addr-last)
		last = r.addr
		b = binary.AppendUvarint(b, x.file(r.file))
		b = binary.AppendVarint(b, int64(r.line))
		b = append(b, r.flags)
	}

	// Segments, and the nodes they name with their parents, renumbered in their order.
	var segs []seg
	keepNode := map[int32]bool{}
	for _, s := range ix.segs {
		if meetsAny(rs, s.lo, s.hi) {
			segs = append(segs, s)
			for n := s.node; n >= 0 && !keepNode[n]; n = ix.nodes[n].parent {
				keepNode[n] = true
			}
		}
	}
	renum := map[int32]int64{-1: -1}
	var nodes []int32
	for i := range ix.nodes {
		if keepNode[int32(i)] {
			renum[int32(i)] = int64(len(nodes))
			nodes = append(nodes, int32(i))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(nodes)))
	for _, i := range nodes {
		nd := &ix.nodes[i]
		b = varfield.AppendStr(b, nd.name)
		b = binary.AppendUvarint(b, nd.entry)
		b = binary.AppendVarint(b, renum[nd.parent])
		b = binary.AppendUvarint(b, x.file(nd.callFile))
		b = binary.AppendVarint(b, int64(nd.callLine))
		b = binary.AppendUvarint(b, x.file(nd.declFile))
		b = binary.AppendVarint(b, int64(nd.declLine))
		b = binary.AppendUvarint(b, uint64(len(nd.ranges)))
		for _, r := range nd.ranges {
			b = binary.AppendUvarint(b, r[0])
			b = binary.AppendUvarint(b, r[1]-r[0])
		}
	}
	b = binary.AppendUvarint(b, uint64(len(segs)))
	last = 0
	for _, s := range segs {
		b = binary.AppendUvarint(b, s.lo-last)
		b = binary.AppendUvarint(b, s.hi-s.lo)
		b = binary.AppendUvarint(b, uint64(renum[s.node]))
		last = s.hi
	}
	return b
}

// appendVariables appends the variables (with vars) and their types, each type once.
func appendVariables(b []byte, vs []Variable, vars bool) []byte {
	if !vars {
		return append(b, 0)
	}
	b = append(b, 1)
	ids := map[*DataType]uint64{}
	var types []*DataType
	var visit func(t *DataType)
	visit = func(t *DataType) {
		if t == nil {
			return
		}
		if _, ok := ids[t]; ok {
			return
		}
		ids[t] = uint64(len(types))
		types = append(types, t)
		for _, m := range t.Members {
			visit(m.Type)
		}
		visit(t.Elem)
	}
	for _, v := range vs {
		visit(v.Type)
	}
	ref := func(t *DataType) uint64 {
		if t == nil {
			return 0
		}
		return ids[t] + 1
	}
	b = binary.AppendUvarint(b, uint64(len(types)))
	for _, t := range types {
		b = varfield.AppendStr(b, t.Name)
		b = binary.AppendUvarint(b, t.Size)
		b = binary.AppendUvarint(b, ref(t.Elem))
		b = binary.AppendUvarint(b, uint64(len(t.Members)))
		for _, m := range t.Members {
			b = varfield.AppendStr(b, m.Name)
			b = binary.AppendUvarint(b, m.Offset)
			b = binary.AppendUvarint(b, ref(m.Type))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = varfield.AppendStr(b, v.Name)
		b = binary.AppendUvarint(b, v.Addr)
		b = binary.AppendUvarint(b, v.Size)
		b = binary.AppendUvarint(b, ref(v.Type))
	}
	return b
}

// MaxExtractSize is the largest extract FromExtract decodes.
const MaxExtractSize = 1 << 30

// FromExtract decodes an extract (Extract) of the debug information of the load object at path into
// an Info that answers from it. An extract that is not one, or is damaged, is an error that says at
// which byte.
func FromExtract(path string, b []byte) (*Info, error) {
	if len(b) > MaxExtractSize {
		return nil, fmt.Errorf("debuginfo: extract of %s: %d bytes, more than an extract holds (%d)", path, len(b), MaxExtractSize)
	}
	n := len(extractMagic)
	if len(b) < n || string(b[:n-1]) != extractMagic[:n-1] {
		return nil, fmt.Errorf("debuginfo: extract of %s: not an extract of debug information (it starts with % x)", path, b[:min(len(b), n)])
	}
	if b[n-1] != extractMagic[n-1] {
		return nil, fmt.Errorf("debuginfo: extract of %s: version %d, this er reads version %d", path, b[n-1], extractMagic[n-1])
	}
	d := &varfield.Reader{B: b, Pos: n}
	in := &Info{Path: path, HasDWARF: true, Source: path, Via: "compact", Note: "debug information extracted into " + path,
		listed: true, fileIDs: map[string]uint32{"": 0}, files: []string{""}}
	in.fixedFiles = []string{}
	for range d.Count(1) {
		in.fixedFiles = append(in.fixedFiles, d.Str())
	}
	for range d.Count(1) {
		in.files = append(in.files, d.Str())
	}
	x := extractReader{d, len(in.files)}
	for range d.Count(4) {
		u := &unit{idx: &cuIndex{}}
		in.units = append(in.units, u)
		for range d.Count(2) {
			lo := d.Uvarint()
			hi := lo + d.Uvarint()
			if hi <= lo {
				d.Fail("empty or wrapping unit range at %#x", lo)
			}
			in.spans = append(in.spans, unitSpan{lo, hi, u})
		}
		var last uint64
		for range d.Count(4) {
			last += d.Uvarint()
			u.idx.rows = append(u.idx.rows, row{addr: last, file: x.file(), line: x.line(), flags: d.Byte()})
		}
		nnodes := d.Count(8)
		for i := range nnodes {
			n := node{name: d.Str(), entry: d.Uvarint()}
			p := d.Varint()
			if p < -1 || p >= int64(i) {
				d.Fail("node %d has parent %d: a parent comes before its children", i, p)
			}
			n.parent = int32(p)
			n.callFile, n.callLine, n.declFile, n.declLine = x.file(), x.line(), x.file(), x.line()
			for range d.Count(2) {
				lo := d.Uvarint()
				n.ranges = append(n.ranges, [2]uint64{lo, lo + d.Uvarint()})
			}
			u.idx.nodes = append(u.idx.nodes, n)
		}
		last = 0
		for range d.Count(3) {
			lo := last + d.Uvarint()
			hi := lo + d.Uvarint()
			nd := d.Uvarint()
			if hi <= lo || nd >= uint64(nnodes) {
				d.Fail("segment [%#x, %#x) of node %d (of %d)", lo, hi, nd, nnodes)
			}
			u.idx.segs = append(u.idx.segs, seg{lo, hi, int32(nd)})
			last = hi
		}
	}
	switch d.Byte() {
	case 0:
	case 1:
		in.vars = x.variables()
	default:
		d.Fail("a variables flag other than 0 or 1")
	}
	d.End()
	if d.Err != nil {
		return nil, fmt.Errorf("debuginfo: extract of %s: %w", path, d.Err)
	}
	in.indexSpans()
	return in, nil
}

// extractReader decodes the parts of an extract that refer to its tables.
type extractReader struct {
	d      *varfield.Reader
	nfiles int
}

func (x extractReader) file() uint32 {
	v := x.d.Uvarint()
	if v >= uint64(x.nfiles) {
		x.d.Fail("file %d of a table of %d", v, x.nfiles)
		return 0
	}
	return uint32(v)
}

func (x extractReader) line() int32 {
	v := x.d.Varint()
	if v < -1<<31 || v >= 1<<31 {
		x.d.Fail("line %d out of range", v)
		return 0
	}
	return int32(v)
}

func (x extractReader) variables() []Variable {
	d := x.d
	types := make([]*DataType, d.Count(4))
	for i := range types {
		types[i] = &DataType{}
	}
	ref := func() *DataType {
		v := d.Uvarint()
		if v > uint64(len(types)) {
			d.Fail("type %d of %d", v, len(types))
			return nil
		}
		if v == 0 {
			return nil
		}
		return types[v-1]
	}
	for _, t := range types {
		t.Name, t.Size, t.Elem = d.Str(), d.Uvarint(), ref()
		for range d.Count(3) {
			t.Members = append(t.Members, Member{Name: d.Str(), Offset: d.Uvarint(), Type: ref()})
		}
	}
	vs := []Variable{}
	for range d.Count(4) {
		vs = append(vs, Variable{Name: d.Str(), Addr: d.Uvarint(), Size: d.Uvarint(), Type: ref()})
	}
	return vs
}
