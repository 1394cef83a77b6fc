package debuginfo

import (
	"debug/dwarf"
	"slices"
	"strings"
	"testing"
)

func TestSegments(t *testing.T) {
	// f [0x100,0x200) holds g [0x110,0x150) holding h [0x120,0x130), and
	// g again at [0x180,0x190); k [0x300,0x310) is another function.
	spans := []span{
		{0x100, 0x200, 0, 0},
		{0x110, 0x150, 1, 1},
		{0x120, 0x130, 2, 2},
		{0x180, 0x190, 1, 1},
		{0x300, 0x310, 3, 0},
	}
	want := []seg{
		{0x100, 0x110, 0},
		{0x110, 0x120, 1},
		{0x120, 0x130, 2},
		{0x130, 0x150, 1},
		{0x150, 0x180, 0},
		{0x180, 0x190, 1},
		{0x190, 0x200, 0},
		{0x300, 0x310, 3},
	}
	if got := segments(slices.Clone(spans)); !slices.Equal(got, want) {
		t.Errorf("segments = %#x\nwant %#x", got, want)
	}
	// Order of input does not matter.
	rev := slices.Clone(spans)
	slices.Reverse(rev)
	if got := segments(rev); !slices.Equal(got, want) {
		t.Errorf("segments of reversed spans = %#x", got)
	}
	if segments(nil) != nil {
		t.Error("segments(nil) is not nil")
	}
	// Overlapping siblings at one depth: the later start wins.
	got := segments([]span{{0, 0x10, 0, 0}, {0x8, 0x18, 1, 0}})
	if !slices.Equal(got, []seg{{0, 0x8, 0}, {0x8, 0x18, 1}}) {
		t.Errorf("overlapping siblings: %#x", got)
	}
}

func TestCUIndexLookups(t *testing.T) {
	ix := &cuIndex{
		rows: []row{
			{addr: 0x100, file: 1, line: 10, flags: rowStmt},
			{addr: 0x108, file: 1, line: 11},
			{addr: 0x110, flags: rowEnd},
			{addr: 0x110, file: 2, line: 20, flags: rowStmt},
			{addr: 0x120, flags: rowEnd},
			{addr: 0x200, file: 1, line: 30},
			{addr: 0x204, flags: rowEnd},
		},
		segs: []seg{{0x100, 0x110, 0}, {0x110, 0x120, 1}},
	}
	for _, c := range []struct {
		pc   uint64
		line int32
		ok   bool
	}{
		{0xff, 0, false}, {0x100, 10, true}, {0x107, 10, true}, {0x108, 11, true}, {0x10f, 11, true},
		{0x110, 20, true}, {0x11f, 20, true}, {0x120, 0, false}, {0x1ff, 0, false}, {0x203, 30, true}, {0x204, 0, false},
	} {
		r, ok := ix.rowAt(c.pc)
		if ok != c.ok || r.line != c.line {
			t.Errorf("rowAt(%#x) = line %d %v, want %d %v", c.pc, r.line, ok, c.line, c.ok)
		}
	}
	for pc, want := range map[uint64]int32{0xff: -1, 0x100: 0, 0x10f: 0, 0x110: 1, 0x11f: 1, 0x120: -1} {
		if got := ix.nodeAt(pc); got != want {
			t.Errorf("nodeAt(%#x) = %d, want %d", pc, got, want)
		}
	}
	if got := ix.seqRanges(); !slices.Equal(got, [][2]uint64{{0x100, 0x110}, {0x110, 0x120}, {0x200, 0x204}}) {
		t.Errorf("seqRanges = %#x", got)
	}
}

func TestEntryPC(t *testing.T) {
	ranges := [][2]uint64{{0x500, 0x600}, {0x100, 0x180}}
	entry := func(fields ...dwarf.Field) *dwarf.Entry { return &dwarf.Entry{Field: fields} }
	low := dwarf.Field{Attr: dwarf.AttrLowpc, Val: uint64(0x400), Class: dwarf.ClassAddress}
	for _, c := range []struct {
		e    *dwarf.Entry
		want uint64
	}{
		{entry(), 0x500},
		{entry(low), 0x400},
		{entry(low, dwarf.Field{Attr: dwarf.AttrEntrypc, Val: uint64(0x432), Class: dwarf.ClassAddress}), 0x432},
		{entry(low, dwarf.Field{Attr: dwarf.AttrEntrypc, Val: int64(0x10), Class: dwarf.ClassConstant}), 0x410},
		{entry(dwarf.Field{Attr: dwarf.AttrEntrypc, Val: int64(0x10), Class: dwarf.ClassConstant}), 0x510},
	} {
		if got := entryPC(c.e, ranges); got != c.want {
			t.Errorf("entryPC(%v) = %#x, want %#x", c.e.Field, got, c.want)
		}
	}
}

func TestValidRanges(t *testing.T) {
	got := validRanges([][2]uint64{{0, 0x10}, {0x20, 0x20}, {0x30, 0x40}, {0x50, 0x48}})
	if !slices.Equal(got, [][2]uint64{{0x30, 0x40}}) {
		t.Errorf("validRanges = %#x", got)
	}
}

func TestOriginMerge(t *testing.T) {
	o := origin{name: "f", plain: "f"}
	o.merge(origin{name: "_Z1fv", plain: "f", linkage: true, declLine: 3, declAt: 9})
	if o.name != "_Z1fv" || !o.linkage || o.declLine != 3 || o.declAt != 9 || !o.complete() {
		t.Errorf("merge: %+v", o)
	}
	o.merge(origin{name: "_Z1gv", linkage: true, declLine: 7})
	if o.name != "_Z1fv" || o.declLine != 3 {
		t.Errorf("merge overwrote: %+v", o)
	}
}

// lineHeader5 is the start of a DWARF 5 line-table header whose directory
// table has one format (DW_LNCT_path, DW_FORM_string) and count entries,
// followed by pad bytes.
func lineHeader5(count uint64, pad int) []byte {
	body := []byte{5, 0, 8, 0}                 // version, address size, selector size
	body = append(body, 0, 0, 0, 0)            // header_length
	body = append(body, 1, 1, 1, 0xfb, 14, 13) // min_inst, max_ops, default_is_stmt, line_base, line_range, opcode_base
	body = append(body, make([]byte, 12)...)   // standard opcode lengths
	body = append(body, 1, 1, 0x08)            // one format: path, string
	for c := count; ; c >>= 7 {                // count, ULEB128
		if c < 0x80 {
			body = append(body, byte(c))
			break
		}
		body = append(body, byte(c)|0x80)
	}
	body = append(body, make([]byte, pad)...)
	n := len(body)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}, body...)
}

func TestCheckLineHeader(t *testing.T) {
	if err := checkLineHeader(lineHeader5(1<<40, 8), 0); err == nil || !strings.Contains(err.Error(), "claims 1099511627776 directories in 8 bytes") {
		t.Errorf("a header claiming 2^40 directories in 8 bytes: %v", err)
	}
	// Four empty directory names, then an empty file table.
	ok := lineHeader5(4, 0)
	ok = append(ok, 0, 0, 0, 0, 0, 0)
	ok[0] += 6
	if err := checkLineHeader(ok, 0); err != nil {
		t.Errorf("a valid header: %v", err)
	}
	for _, off := range []int64{-1, 1 << 20} {
		if err := checkLineHeader(ok, off); err != nil {
			t.Errorf("offset %d: %v (debug/dwarf reports it)", off, err)
		}
	}
	// Version 4 headers have no counts.
	v4 := lineHeader5(1<<40, 8)
	v4[4] = 4
	if err := checkLineHeader(v4, 0); err != nil {
		t.Errorf("version 4: %v", err)
	}
}
