package unwind

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// ehBuilder assembles an .eh_frame section by hand, at link-time address addr.
type ehBuilder struct {
	addr uint64
	b    []byte
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// eq compares rules by kind, register, offset and expression.
func eq(a, b Rule) bool {
	return a.Kind == b.Kind && a.Reg == b.Reg && a.Offset == b.Offset && string(a.Expr) == string(b.Expr)
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// entry appends an entry with the given body (after the length), padded to 8 bytes with nops.
func (e *ehBuilder) entry(body []byte) int {
	off := len(e.b)
	for (len(body)+4)%8 != 0 {
		body = append(body, cfaNop)
	}
	e.b = append(e.b, u32(uint32(len(body)))...)
	e.b = append(e.b, body...)
	return off
}

// cie appends a CIE with augmentation aug and its data, code alignment 1, data alignment -8,
// return address column 16.
func (e *ehBuilder) cie(aug string, augData []byte, insns ...byte) int {
	body := cat(u32(0), []byte{1}, []byte(aug), []byte{0}, uleb(1), sleb(-8), []byte{16})
	if strings.HasPrefix(aug, "z") {
		body = cat(body, uleb(uint64(len(augData))), augData)
	}
	return e.entry(cat(body, insns))
}

// fde appends an FDE for [lo, lo+n) with pcrel sdata4 addresses (the "zR" 0x1b encoding).
func (e *ehBuilder) fde(cieOff int, lo, n uint64, augData []byte, insns ...byte) int {
	off := len(e.b)
	ptrField := uint64(off + 4)       // the CIE pointer field's offset
	begin := e.addr + uint64(off) + 8 // the address of the pc_begin field
	body := cat(u32(uint32(ptrField-uint64(cieOff))), u32(uint32(lo-begin)), u32(uint32(n)))
	if augData != nil {
		body = cat(body, uleb(uint64(len(augData))), augData)
	} else {
		body = cat(body, uleb(0))
	}
	return e.entry(cat(body, insns))
}

// hdr builds an .eh_frame_hdr at hdrAddr for the FDEs at offsets offs starting at los (sorted).
func (e *ehBuilder) hdr(hdrAddr uint64, los []uint64, offs []int) []byte {
	h := []byte{1, pePCRel | peSdata4, peUdata4, peDataRel | peSdata4}
	h = cat(h, u32(uint32(e.addr-(hdrAddr+4))), u32(uint32(len(los))))
	for i, lo := range los {
		h = cat(h, u32(uint32(lo-hdrAddr)), u32(uint32(e.addr+uint64(offs[i])-hdrAddr)))
	}
	return h
}

// table makes a Table of the built section (terminated), without a header.
func (e *ehBuilder) table(t *testing.T) *Table {
	t.Helper()
	tab, err := newTable("test", append(e.b, 0, 0, 0, 0), e.addr, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// zR is the usual gcc CIE: "zR" with pcrel sdata4 FDE addresses, CFA = rsp+8, RA at CFA-8.
func zR(e *ehBuilder) int {
	return e.cie("zR", []byte{pePCRel | peSdata4}, cfaDefCFA, 7, 8, cfaOffset|16, 1)
}

func TestRowGCCFunction(t *testing.T) {
	// A function that pushes rbp and rbx, with an early-return epilogue between
	// remember_state and restore_state, as gcc -O2 emits.
	e := &ehBuilder{addr: 0x10000}
	c := zR(e)
	e.fde(c, 0x1000, 0x40, nil,
		cfaAdvanceLoc|1, cfaDefCFAOffset, 16, cfaOffset|6, 2, // 0x1001: push rbp
		cfaAdvanceLoc|1, cfaDefCFAOffset, 24, cfaOffset|3, 3, // 0x1002: push rbx
		cfaAdvanceLoc|4, cfaDefCFAOffset, 48, // 0x1006: sub $24,%rsp
		cfaAdvanceLoc|10, cfaRememberState, cfaDefCFAOffset, 24, // 0x1010: add $24,%rsp
		cfaAdvanceLoc|1, cfaDefCFAOffset, 16, cfaRestore|3, // 0x1011: pop rbx
		cfaAdvanceLoc|1, cfaDefCFAOffset, 8, cfaRestore|6, // 0x1012: pop rbp
		cfaAdvanceLoc|1, cfaRestoreState, // 0x1013: ret; the body goes on
	)
	tab := e.table(t)
	tests := []struct {
		pc       uint64
		cfa      int64
		rbp, rbx Rule
	}{
		{0x1000, 8, Rule{}, Rule{}},
		{0x1001, 16, Rule{Kind: RuleOffset, Offset: -16}, Rule{}},
		{0x1005, 24, Rule{Kind: RuleOffset, Offset: -16}, Rule{Kind: RuleOffset, Offset: -24}},
		{0x100f, 48, Rule{Kind: RuleOffset, Offset: -16}, Rule{Kind: RuleOffset, Offset: -24}},
		{0x1010, 24, Rule{Kind: RuleOffset, Offset: -16}, Rule{Kind: RuleOffset, Offset: -24}},
		{0x1011, 16, Rule{Kind: RuleOffset, Offset: -16}, Rule{}},
		{0x1012, 8, Rule{}, Rule{}},
		{0x1013, 48, Rule{Kind: RuleOffset, Offset: -16}, Rule{Kind: RuleOffset, Offset: -24}},
		{0x103f, 48, Rule{Kind: RuleOffset, Offset: -16}, Rule{Kind: RuleOffset, Offset: -24}},
	}
	for _, tt := range tests {
		r, err := tab.Row(tt.pc)
		if err != nil {
			t.Fatalf("Row(%#x): %v", tt.pc, err)
		}
		if r.CFA.Kind != RuleRegister || r.CFA.Reg != RegRSP || r.CFA.Offset != tt.cfa {
			t.Errorf("Row(%#x).CFA = %v, want r7+%d", tt.pc, r.CFA, tt.cfa)
		}
		if r.Regs[RegRBP].Kind != tt.rbp.Kind || r.Regs[RegRBP].Offset != tt.rbp.Offset {
			t.Errorf("Row(%#x) rbp = %v, want %v", tt.pc, r.Regs[RegRBP], tt.rbp)
		}
		if r.Regs[RegRBX].Kind != tt.rbx.Kind || r.Regs[RegRBX].Offset != tt.rbx.Offset {
			t.Errorf("Row(%#x) rbx = %v, want %v", tt.pc, r.Regs[RegRBX], tt.rbx)
		}
		if ra := r.Regs[RegRIP]; ra.Kind != RuleOffset || ra.Offset != -8 || r.RA != RegRIP {
			t.Errorf("Row(%#x) RA = %v in column %d, want offset(-8) in 16", tt.pc, ra, r.RA)
		}
		if r.Lo != 0x1000 || r.Hi != 0x1040 || r.Signal {
			t.Errorf("Row(%#x): range [%#x, %#x) signal %v, want [0x1000, 0x1040) false", tt.pc, r.Lo, r.Hi, r.Signal)
		}
	}
	for _, pc := range []uint64{0xfff, 0x1040, 0} {
		if _, err := tab.Row(pc); err == nil || !strings.Contains(err.Error(), ErrNoCFI.Error()) {
			t.Errorf("Row(%#x) = %v, want ErrNoCFI", pc, err)
		}
	}
}

// rowOf builds a one-FDE table at [0x1000, 0x1100) with the given FDE instructions and
// returns the row at pc.
func rowOf(t *testing.T, pc uint64, insns ...byte) (Row, error) {
	t.Helper()
	e := &ehBuilder{addr: 0x4000}
	e.fde(zR(e), 0x1000, 0x100, nil, insns...)
	return e.table(t).Row(pc)
}

func TestRowInstructions(t *testing.T) {
	plt := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22} // the PLT's CFA expression
	tests := []struct {
		name  string
		pc    uint64
		insns []byte
		check func(r Row) bool
	}{
		{"advance_loc1", 0x1000 + 200, []byte{cfaAdvanceLoc1, 200, cfaDefCFAOffset, 32},
			func(r Row) bool { return r.CFA.Offset == 32 }},
		{"advance_loc1 not reached", 0x1000 + 199, []byte{cfaAdvanceLoc1, 200, cfaDefCFAOffset, 32},
			func(r Row) bool { return r.CFA.Offset == 8 }},
		{"advance_loc2", 0x10ff, []byte{cfaAdvanceLoc2, 0xff, 0, cfaDefCFAOffset, 32},
			func(r Row) bool { return r.CFA.Offset == 32 }},
		{"advance_loc4", 0x10fe, []byte{cfaAdvanceLoc4, 0xff, 0, 0, 0, cfaDefCFAOffset, 32},
			func(r Row) bool { return r.CFA.Offset == 8 }},
		{"def_cfa", 0x1000, []byte{cfaDefCFA, 6, 16},
			func(r Row) bool { return eq(r.CFA, Rule{Kind: RuleRegister, Reg: 6, Offset: 16}) }},
		{"def_cfa_register", 0x1000, []byte{cfaDefCFARegister, 6},
			func(r Row) bool { return r.CFA.Reg == 6 && r.CFA.Offset == 8 }},
		{"def_cfa_sf", 0x1000, cat([]byte{cfaDefCFASF, 7}, sleb(-2)),
			func(r Row) bool { return r.CFA.Reg == 7 && r.CFA.Offset == 16 }},
		{"def_cfa_offset_sf", 0x1000, cat([]byte{cfaDefCFAOffsetSF}, sleb(-3)),
			func(r Row) bool { return r.CFA.Offset == 24 }},
		{"def_cfa_expression", 0x1000, cat([]byte{cfaDefCFAExpression, byte(len(plt))}, plt),
			func(r Row) bool { return r.CFA.Kind == RuleValExpression && string(r.CFA.Expr) == string(plt) }},
		{"offset_extended", 0x1000, []byte{cfaOffsetExtended, 12, 3},
			func(r Row) bool { return eq(r.Regs[12], Rule{Kind: RuleOffset, Offset: -24}) }},
		{"offset_extended_sf", 0x1000, cat([]byte{cfaOffsetExtendedSF, 13}, sleb(2)),
			func(r Row) bool { return eq(r.Regs[13], Rule{Kind: RuleOffset, Offset: -16}) }},
		{"GNU_negative_offset_extended", 0x1000, []byte{cfaGNUNegOffsetExtnd, 14, 2},
			func(r Row) bool { return eq(r.Regs[14], Rule{Kind: RuleOffset, Offset: 16}) }},
		{"val_offset", 0x1000, []byte{cfaValOffset, 3, 2},
			func(r Row) bool { return eq(r.Regs[3], Rule{Kind: RuleValOffset, Offset: -16}) }},
		{"val_offset_sf", 0x1000, cat([]byte{cfaValOffsetSF, 3}, sleb(-1)),
			func(r Row) bool { return eq(r.Regs[3], Rule{Kind: RuleValOffset, Offset: 8}) }},
		{"undefined", 0x1000, []byte{cfaUndefined, 16},
			func(r Row) bool { return r.Regs[16].Kind == RuleUndefined }},
		{"same_value", 0x1000, []byte{cfaOffset | 3, 1, cfaSameValue, 3},
			func(r Row) bool { return r.Regs[3].Kind == RuleSameValue }},
		{"register", 0x1000, []byte{cfaRegister, 6, 3},
			func(r Row) bool { return eq(r.Regs[6], Rule{Kind: RuleRegister, Reg: 3}) }},
		{"restore to the CIE's rule", 0x1000, []byte{cfaOffset | 16, 3, cfaRestore | 16},
			func(r Row) bool { return eq(r.Regs[16], Rule{Kind: RuleOffset, Offset: -8}) }},
		{"restore_extended", 0x1000, []byte{cfaOffset | 3, 2, cfaRestoreExtended, 3},
			func(r Row) bool { return r.Regs[3].Kind == RuleSameValue }},
		{"expression", 0x1000, []byte{cfaExpression, 3, 2, 0x70 + 7, 8},
			func(r Row) bool { return r.Regs[3].Kind == RuleExpression && len(r.Regs[3].Expr) == 2 }},
		{"val_expression", 0x1000, []byte{cfaValExpression, 3, 1, 0x31},
			func(r Row) bool { return r.Regs[3].Kind == RuleValExpression && r.Regs[3].Expr[0] == 0x31 }},
		{"GNU_args_size and nop", 0x1000, []byte{cfaGNUArgsSize, 0x90, 1, cfaNop, cfaDefCFAOffset, 40},
			func(r Row) bool { return r.CFA.Offset == 40 }},
		{"register above 16 is ignored", 0x1000, []byte{cfaOffsetExtended, 17, 4, cfaUndefined, 40},
			func(r Row) bool { return r.Regs[16].Kind == RuleOffset && r.Regs[15].Kind == RuleSameValue }},
		{"nested remember_state", 0x1003, []byte{
			cfaDefCFAOffset, 16, cfaRememberState, cfaAdvanceLoc | 1, cfaDefCFAOffset, 24, cfaRememberState,
			cfaAdvanceLoc | 1, cfaDefCFAOffset, 32, cfaAdvanceLoc | 1, cfaRestoreState, cfaRestoreState},
			func(r Row) bool { return r.CFA.Offset == 16 }},
	}
	for _, tt := range tests {
		r, err := rowOf(t, tt.pc, tt.insns...)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !tt.check(r) {
			t.Errorf("%s: row at %#x is CFA %v, regs %v", tt.name, tt.pc, r.CFA, r.Regs)
		}
	}
}

func TestEHFrameHdr(t *testing.T) {
	e := &ehBuilder{addr: 0x10000}
	c := zR(e)
	f1 := e.fde(c, 0x1000, 0x10, nil, cfaDefCFAOffset, 16)
	f2 := e.fde(c, 0x1020, 0x10, nil, cfaDefCFAOffset, 24)
	f3 := e.fde(c, 0x3000, 0x10, nil, cfaDefCFAOffset, 32)
	data := append(e.b, 0, 0, 0, 0)
	hdr := e.hdr(0x20000, []uint64{0x1000, 0x1020, 0x3000}, []int{f1, f2, f3})
	tab, err := newTable("hdr", data, e.addr, hdr, 0x20000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.hdr == nil || tab.ehIdx != nil {
		t.Fatal("the header's table was not used")
	}
	for pc, want := range map[uint64]int64{0x1000: 16, 0x100f: 16, 0x1020: 24, 0x102f: 24, 0x3000: 32, 0x300f: 32} {
		if r, err := tab.Row(pc); err != nil || r.CFA.Offset != want {
			t.Errorf("Row(%#x) = %v, %v; want CFA offset %d", pc, r.CFA, err, want)
		}
	}
	for _, pc := range []uint64{0xfff, 0x1010, 0x101f, 0x1030, 0x3010} {
		if _, err := tab.Row(pc); err == nil {
			t.Errorf("Row(%#x) found an FDE between the functions", pc)
		}
	}
	// A header that describes another .eh_frame, or has an odd table encoding, is not used.
	bad := slices.Clone(hdr)
	bad[3] = peDataRel | peUdata8
	for _, h := range [][]byte{bad, hdr[:10], {2, 0, 0, 0}} {
		tab, err := newTable("hdr", data, e.addr, h, 0x20000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tab.hdr != nil || len(tab.ehIdx) != 3 {
			t.Errorf("header % x: hdr used %v, %d indexed FDEs", h[:4], tab.hdr != nil, len(tab.ehIdx))
		}
	}
	if tab, _ := newTable("hdr", data, e.addr+8, hdr, 0x20000, nil); tab == nil || tab.hdr != nil {
		t.Error("a header pointing elsewhere than .eh_frame was used")
	}
}

func TestRowSetLoc(t *testing.T) {
	// DW_CFA_set_loc in .debug_frame takes an absolute address.
	body := cat(u32(0xffffffff), []byte{4}, []byte{0}, []byte{8, 0}, uleb(1), sleb(-8), uleb(16),
		[]byte{cfaDefCFA, 7, 8, cfaOffset | 16, 1})
	dbg := cat(u32(uint32(len(body))), body)
	fdeBody := cat(u32(0), u64(0x2000), u64(0x100), []byte{cfaSetLoc}, u64(0x2080), []byte{cfaDefCFAOffset, 64})
	dbg = cat(dbg, u32(uint32(len(fdeBody))), fdeBody)
	tab, err := newTable("test", nil, 0, nil, 0, dbg)
	if err != nil {
		t.Fatal(err)
	}
	for pc, want := range map[uint64]int64{0x2000: 8, 0x207f: 8, 0x2080: 64, 0x20ff: 64} {
		r, err := tab.Row(pc)
		if err != nil || r.CFA.Offset != want {
			t.Errorf("Row(%#x) = CFA %v, %v; want offset %d", pc, r.CFA, err, want)
		}
	}
}

func TestCIEAugmentations(t *testing.T) {
	// "zPLR": personality (indirect pcrel sdata4), LSDA encoding, FDE encoding; the FDE has
	// 4 bytes of augmentation data (its LSDA pointer).
	e := &ehBuilder{addr: 0x8000}
	pers := cat([]byte{peIndirect | pePCRel | peSdata4}, u32(0x1234), []byte{pePCRel | peSdata4, pePCRel | peSdata4})
	c := e.cie("zPLR", pers, cfaDefCFA, 7, 8, cfaOffset|16, 1)
	e.fde(c, 0x1000, 0x10, u32(0x4444), cfaAdvanceLoc|4, cfaDefCFAOffset, 16)
	// "zRS": a signal frame.
	s := e.cie("zRS", []byte{pePCRel | peSdata4}, cfaDefCFA, 7, 8, cfaOffset|16, 1)
	e.fde(s, 0x2000, 0x10, nil)
	tab := e.table(t)
	r, err := tab.Row(0x1004)
	if err != nil || r.CFA.Offset != 16 || r.Signal {
		t.Errorf("zPLR: Row = %v signal %v, %v; want CFA offset 16, not a signal frame", r.CFA, r.Signal, err)
	}
	r, err = tab.Row(0x2000)
	if err != nil || !r.Signal {
		t.Errorf("zRS: Row signal %v, %v; want a signal frame", r.Signal, err)
	}
}

func TestDebugFrameVersions(t *testing.T) {
	// Version 1 (RA a byte), version 3 (RA uleb), version 4 (address and segment sizes), and
	// the 64-bit DWARF format, with absolute 8-byte addresses.
	for _, tt := range []struct {
		name string
		cie  []byte
		is64 bool
	}{
		{"v1", cat([]byte{1, 0}, uleb(1), sleb(-8), []byte{16}), false},
		{"v3", cat([]byte{3, 0}, uleb(1), sleb(-8), uleb(16)), false},
		{"v4", cat([]byte{4, 0, 8, 0}, uleb(1), sleb(-8), uleb(16)), false},
		{"v3 64-bit", cat([]byte{3, 0}, uleb(1), sleb(-8), uleb(16)), true},
	} {
		insns := []byte{cfaDefCFA, 7, 8, cfaOffset | 16, 1}
		var dbg []byte
		if tt.is64 {
			body := cat(u64(^uint64(0)), tt.cie, insns)
			dbg = cat(u32(0xffffffff), u64(uint64(len(body))), body)
			fdeBody := cat(u64(0), u64(0x3000), u64(0x20), []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16})
			dbg = cat(dbg, u32(0xffffffff), u64(uint64(len(fdeBody))), fdeBody)
		} else {
			body := cat(u32(0xffffffff), tt.cie, insns)
			dbg = cat(u32(uint32(len(body))), body)
			fdeBody := cat(u32(0), u64(0x3000), u64(0x20), []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16})
			dbg = cat(dbg, u32(uint32(len(fdeBody))), fdeBody)
		}
		tab, err := newTable("test", nil, 0, nil, 0, dbg)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		r0, err0 := tab.Row(0x3000)
		r1, err1 := tab.Row(0x3001)
		if err0 != nil || err1 != nil || r0.CFA.Offset != 8 || r1.CFA.Offset != 16 || r1.Regs[16].Offset != -8 {
			t.Errorf("%s: rows %v (%v), %v (%v)", tt.name, r0.CFA, err0, r1.CFA, err1)
		}
		if _, err := tab.Row(0x3020); err == nil {
			t.Errorf("%s: Row past the FDE succeeded", tt.name)
		}
	}
}

func TestMalformedCFI(t *testing.T) {
	good := func() *ehBuilder {
		e := &ehBuilder{addr: 0x4000}
		e.fde(zR(e), 0x1000, 0x100, nil, cfaDefCFAOffset, 16)
		return e
	}
	tests := []struct {
		name    string
		mutate  func(b []byte) []byte
		wantErr string
	}{
		{"length past the end", func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 1000); return b }, "does not fit"},
		{"bad version", func(b []byte) []byte { b[8] = 2; return b }, "CIE version 2"},
		{"unknown augmentation", func(b []byte) []byte { b[9] = 'q'; return b }, "unknown CIE augmentation"},
		{"truncated section", func(b []byte) []byte { return b[:3] }, "runs past the end"},
		{"FDE points to nothing", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[24+4:], 0x10000)
			return b
		}, "points before the section"},
	}
	for _, tt := range tests {
		b := tt.mutate(good().b)
		_, err := newTable("test", b, 0x4000, nil, 0, nil)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "test: .eh_frame at offset") {
			t.Errorf("%s: err = %v, want one naming the section, an offset and %q", tt.name, err, tt.wantErr)
		}
	}
	// Malformed instructions are reported when the row is evaluated.
	for _, tt := range []struct {
		name    string
		insns   []byte
		wantErr string
	}{
		{"unknown opcode", []byte{0x3f}, "unknown call frame instruction 0x3f"},
		{"restore_state without remember", []byte{cfaRestoreState}, "restore_state without remember_state"},
		{"truncated operand", []byte{cfaMIPSAdvanceLoc8, 1}, "operands run past the end"},
		{"expression block too long", []byte{cfaDefCFAExpression, 100, 1}, "operands run past the end"},
		{"def_cfa_offset after an expression", []byte{cfaDefCFAExpression, 1, 0x30, cfaDefCFAOffset, 8}, "not register-based"},
	} {
		_, err := rowOf(t, 0x1000, tt.insns...)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
	deep := make([]byte, 0, maxStateDepth+1)
	for range maxStateDepth + 1 {
		deep = append(deep, cfaRememberState)
	}
	if _, err := rowOf(t, 0x1000, deep...); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep remember_state: err = %v", err)
	}
}

func TestCursorLEB(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 32, 1<<64 - 1} {
		c := &cursor{b: uleb(v)}
		if got := c.uleb(); got != v || c.bad {
			t.Errorf("uleb(%d) = %d bad %v", v, got, c.bad)
		}
	}
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 1 << 40, -1 << 40, -1 << 63} {
		c := &cursor{b: sleb(v)}
		if got := c.sleb(); got != v || c.bad {
			t.Errorf("sleb(%d) = %d bad %v", v, got, c.bad)
		}
	}
	c := &cursor{b: []byte{0x80, 0x80}}
	if c.uleb(); !c.bad {
		t.Error("unterminated uleb did not fail")
	}
}

// FuzzParseCFI feeds raw section bytes to the table parser and the interpreter: they must
// return errors, never panic.
func FuzzParseCFI(f *testing.F) {
	e := &ehBuilder{addr: 0x4000}
	e.fde(zR(e), 0x1000, 0x100, nil, cfaAdvanceLoc|1, cfaDefCFAOffset, 16, cfaRememberState, cfaAdvanceLoc|1,
		cfaDefCFAExpression, 3, 0x77, 8, 0x22, cfaAdvanceLoc|1, cfaRestoreState)
	hdr := e.hdr(0x8000, []uint64{0x1000}, []int{24})
	f.Add(e.b, []byte(nil), false)
	f.Add(e.b, hdr, false)
	f.Add(e.b, []byte(nil), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0}, []byte(nil), true)
	f.Fuzz(func(t *testing.T, data, hdr []byte, debug bool) {
		var tab *Table
		var err error
		if debug {
			tab, err = newTable("fuzz", nil, 0, nil, 0, data)
		} else {
			tab, err = newTable("fuzz", data, 0x4000, hdr, 0x8000, nil)
		}
		if err != nil {
			return
		}
		for _, pc := range []uint64{0, 0x1000, 0x1001, 0x1002, 0x1003, 0x10ff, 1 << 40} {
			tab.Row(pc)
		}
		for _, idx := range [][]span{tab.ehIdx, tab.dbgIdx} {
			for i, s := range idx {
				if i > 10 {
					break
				}
				tab.Row(s.lo)
				tab.Row(s.hi - 1)
			}
		}
	})
}
