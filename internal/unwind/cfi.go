package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DWARF call frame instructions (DWARF 5 section 6.4.2, plus the GNU extensions).
const (
	cfaAdvanceLoc        = 0x40 // high 2 bits; delta in the low 6
	cfaOffset            = 0x80 // high 2 bits; register in the low 6
	cfaRestore           = 0xc0 // high 2 bits; register in the low 6
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpression        = 0x10
	cfaOffsetExtendedSF  = 0x11
	cfaDefCFASF          = 0x12
	cfaDefCFAOffsetSF    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSF       = 0x15
	cfaValExpression     = 0x16
	cfaMIPSAdvanceLoc8   = 0x1d
	cfaGNUWindowSave     = 0x2d
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExtnd = 0x2f
)

// Pointer encodings of .eh_frame and .eh_frame_hdr (DW_EH_PE_*, LSB section 10.5).
const (
	peAbsptr   = 0x00
	peULEB128  = 0x01
	peUdata2   = 0x02
	peUdata4   = 0x03
	peUdata8   = 0x04
	peSLEB128  = 0x09
	peSdata2   = 0x0a
	peSdata4   = 0x0b
	peSdata8   = 0x0c
	pePCRel    = 0x10
	peTextRel  = 0x20
	peDataRel  = 0x30
	peFuncRel  = 0x40
	peAligned  = 0x50
	peIndirect = 0x80
	peOmit     = 0xff
)

// maxStateDepth bounds DW_CFA_remember_state nesting, so that malformed CFI cannot make the
// interpreter grow without limit. gcc and clang nest at most a few levels.
const maxStateDepth = 64

// NumRegs is the number of DWARF registers the unwinder tracks: the x86-64 general registers
// 0-15 and the return address column 16.
const NumRegs = 17

// DWARF register numbers on x86-64 (System V ABI, figure 3.36).
const (
	RegRAX = 0
	RegRDX = 1
	RegRCX = 2
	RegRBX = 3
	RegRSI = 4
	RegRDI = 5
	RegRBP = 6
	RegRSP = 7
	RegR8  = 8
	RegR15 = 15
	RegRIP = 16 // the return address column
)

// RuleKind says how a register's value in the caller (or the CFA) is found.
type RuleKind uint8

// Register rules. The zero value, RuleSameValue, is the default for a register no instruction
// mentions: its value is unchanged in the caller, as the x86-64 ABI treats callee-saved registers.
const (
	RuleSameValue     RuleKind = iota // unchanged
	RuleUndefined                     // not recoverable; for the return address: the outermost frame
	RuleOffset                        // saved at address CFA+Offset
	RuleValOffset                     // the value is CFA+Offset
	RuleRegister                      // the value is register Reg (+Offset, for the CFA rule)
	RuleExpression                    // saved at the address Expr computes (the CFA pushed first)
	RuleValExpression                 // the value is what Expr computes (for the CFA: nothing pushed)
)

var ruleNames = [...]string{"same", "undefined", "offset", "val_offset", "register", "expression", "val_expression"}

func (k RuleKind) String() string {
	if int(k) < len(ruleNames) {
		return ruleNames[k]
	}
	return fmt.Sprintf("rule(%d)", uint8(k))
}

// Rule is one register rule, or the CFA rule (then Kind is RuleRegister, meaning Reg+Offset, or
// RuleValExpression).
type Rule struct {
	Kind   RuleKind
	Reg    uint16 // RuleRegister: the DWARF register (it may be above NumRegs in malformed or exotic CFI)
	Offset int64  // RuleOffset, RuleValOffset, RuleRegister (CFA only)
	Expr   []byte // RuleExpression, RuleValExpression: a DWARF expression, pointing into the section
}

func (r Rule) String() string {
	switch r.Kind {
	case RuleOffset, RuleValOffset:
		return fmt.Sprintf("%s(%d)", r.Kind, r.Offset)
	case RuleRegister:
		if r.Offset != 0 {
			return fmt.Sprintf("r%d%+d", r.Reg, r.Offset)
		}
		return fmt.Sprintf("r%d", r.Reg)
	case RuleExpression, RuleValExpression:
		return fmt.Sprintf("%s[% x]", r.Kind, r.Expr)
	}
	return r.Kind.String()
}

// Row is the unwind rule set in effect at one code address: how to compute the canonical frame
// address (CFA, the caller's stack pointer) and each register's value in the caller.
type Row struct {
	CFA    Rule
	Regs   [NumRegs]Rule
	RA     uint8 // the return address column (16 on x86-64)
	Signal bool  // the CIE has the 'S' augmentation: a signal trampoline (glibc's __restore_rt)
	// Lo and Hi bound the range of the FDE the row came from, as link-time addresses.
	Lo, Hi uint64

	set uint32 // a bit per register whose rule is not RuleSameValue (computed by interp.run)
}

// ErrNoCFI says that no FDE covers an address.
var ErrNoCFI = errors.New("no call frame information covers the address")

// cie is a parsed Common Information Entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte
	addrSize  int
	signal    bool
	aug       bool   // 'z': FDEs have augmentation data
	insns     []byte // initial instructions
	insOff    uint64 // offset of insns in the section
}

// fde is a parsed Frame Description Entry.
type fde struct {
	cie    cie
	lo, hi uint64
	insns  []byte
	insOff uint64 // offset of insns in the section
	off    uint64 // offset of the FDE in its section
}

// section is one CFI section: .eh_frame or .debug_frame.
type section struct {
	name string
	data []byte
	addr uint64 // the section's link-time address (for pcrel pointers)
	eh   bool   // .eh_frame format: CIE id 0, CIE pointers relative
}

// cfiError describes malformed CFI: where and what.
func (s *section) errorf(off uint64, format string, args ...any) error {
	return fmt.Errorf("%s at offset %#x: %s", s.name, off, fmt.Sprintf(format, args...))
}

// cursor reads little-endian DWARF values from b, remembering the first overrun.
type cursor struct {
	b   []byte
	off int
	bad bool
}

func (c *cursor) avail(n int) bool {
	if c.bad || n < 0 || len(c.b)-c.off < n {
		c.bad = true
		return false
	}
	return true
}

func (c *cursor) u8() uint8 {
	if !c.avail(1) {
		return 0
	}
	v := c.b[c.off]
	c.off++
	return v
}

func (c *cursor) u16() uint16 {
	if !c.avail(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(c.b[c.off:])
	c.off += 2
	return v
}

func (c *cursor) u32() uint32 {
	if !c.avail(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

func (c *cursor) u64() uint64 {
	if !c.avail(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			return v
		}
	}
}

func (c *cursor) sleb() int64 {
	var v int64
	var shift uint
	for {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b)) || !c.avail(int(n)) {
		c.bad = true
		return nil
	}
	v := c.b[c.off : c.off+int(n) : c.off+int(n)]
	c.off += int(n)
	return v
}

// cstring reads a NUL-terminated string, without the NUL.
func (c *cursor) cstring() []byte {
	for i := c.off; i < len(c.b); i++ {
		if c.b[i] == 0 {
			s := c.b[c.off:i]
			c.off = i + 1
			return s
		}
	}
	c.bad = true
	return nil
}

// pointer reads a pointer in encoding enc. pos is the link-time address of c.b[0] (for pcrel)
// and dataBase the base of datarel pointers (0 when datarel is not allowed). It returns an error
// message for an encoding it cannot decode.
func (c *cursor) pointer(enc byte, addrSize int, pos, dataBase uint64) (uint64, string) {
	if enc == peOmit {
		return 0, ""
	}
	here := pos + uint64(c.off)
	if enc&0x70 == peAligned {
		for (pos+uint64(c.off))%uint64(addrSize) != 0 && !c.bad {
			c.u8()
		}
		enc = peAbsptr
	}
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		if addrSize == 4 {
			v = uint64(c.u32())
		} else {
			v = c.u64()
		}
	case peULEB128:
		v = c.uleb()
	case peUdata2:
		v = uint64(c.u16())
	case peUdata4:
		v = uint64(c.u32())
	case peUdata8, peSdata8:
		v = c.u64()
	case peSLEB128:
		v = uint64(c.sleb())
	case peSdata2:
		v = uint64(int64(int16(c.u16())))
	case peSdata4:
		v = uint64(int64(int32(c.u32())))
	default:
		return 0, fmt.Sprintf("unknown pointer format %#x", enc)
	}
	switch enc & 0x70 {
	case peAbsptr:
	case pePCRel:
		v += here
	case peDataRel:
		if dataBase == 0 {
			return 0, fmt.Sprintf("datarel pointer encoding %#x is not supported here", enc)
		}
		v += dataBase
	default:
		return 0, fmt.Sprintf("pointer encoding %#x (textrel or funcrel) is not supported", enc)
	}
	if c.bad {
		return 0, "pointer runs past the end of the entry"
	}
	return v, ""
}

// entry reads the header of the CIE or FDE at off: its body (after the length field), the
// offset of the body, the offset of the next entry, and the CIE id or pointer field.
// A zero length (the .eh_frame terminator) returns next == 0.
func (s *section) entry(off uint64) (body []byte, bodyOff, next, id uint64, is64 bool, err error) {
	if off >= uint64(len(s.data)) || uint64(len(s.data))-off < 4 {
		return nil, 0, 0, 0, false, s.errorf(off, "entry length runs past the end of the section (%d bytes)", len(s.data))
	}
	n := uint64(binary.LittleEndian.Uint32(s.data[off:]))
	bodyOff = off + 4
	if n == 0xffffffff {
		if uint64(len(s.data))-off < 12 {
			return nil, 0, 0, 0, false, s.errorf(off, "64-bit entry length runs past the end of the section")
		}
		n = binary.LittleEndian.Uint64(s.data[off+4:])
		bodyOff = off + 12
		is64 = true
	}
	if n == 0 {
		return nil, bodyOff, 0, 0, is64, nil
	}
	idSize := uint64(4)
	if is64 {
		idSize = 8
	}
	if n > uint64(len(s.data))-bodyOff || n < idSize {
		return nil, 0, 0, 0, false, s.errorf(off, "entry length %d does not fit the section (%d bytes)", n, len(s.data))
	}
	body = s.data[bodyOff : bodyOff+n : bodyOff+n]
	if is64 {
		id = binary.LittleEndian.Uint64(body)
	} else {
		id = uint64(binary.LittleEndian.Uint32(body))
	}
	return body, bodyOff, bodyOff + n, id, is64, nil
}

// isCIE reports whether an entry with id field id (of an entry in 64-bit format when is64) is a CIE.
func (s *section) isCIE(id uint64, is64 bool) bool {
	if s.eh {
		return id == 0
	}
	if is64 {
		return id == ^uint64(0)
	}
	return id == 0xffffffff
}

// cieAt parses the CIE at offset off.
func (s *section) cieAt(off uint64) (cie, error) {
	body, bodyOff, _, id, is64, err := s.entry(off)
	if err != nil {
		return cie{}, err
	}
	if body == nil || !s.isCIE(id, is64) {
		return cie{}, s.errorf(off, "an FDE points here for its CIE, but there is no CIE")
	}
	c := &cursor{b: body, off: 4}
	if is64 {
		c.off = 8
	}
	var e cie
	e.addrSize = 8
	version := c.u8()
	if version != 1 && version != 3 && version != 4 {
		return cie{}, s.errorf(off, "CIE version %d is not 1, 3 or 4", version)
	}
	aug := c.cstring()
	if version == 4 {
		e.addrSize = int(c.u8())
		if seg := c.u8(); seg != 0 {
			return cie{}, s.errorf(off, "CIE segment selector size %d is not supported", seg)
		}
		if e.addrSize != 4 && e.addrSize != 8 {
			return cie{}, s.errorf(off, "CIE address size %d is not 4 or 8", e.addrSize)
		}
	}
	if string(aug) == "eh" { // old gcc: an eh_ptr follows
		c.bytes(uint64(e.addrSize))
	}
	e.codeAlign = c.uleb()
	e.dataAlign = c.sleb()
	if version == 1 {
		e.raReg = uint64(c.u8())
	} else {
		e.raReg = c.uleb()
	}
	e.fdeEnc = peAbsptr
	if len(aug) > 0 && aug[0] == 'z' {
		e.aug = true
		n := c.uleb()
		augStart := c.off
		data := &cursor{b: c.bytes(n)}
		if c.bad {
			return cie{}, s.errorf(off, "CIE augmentation data of %d bytes runs past the entry", n)
		}
	augLoop:
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				e.fdeEnc = data.u8()
			case 'P':
				enc := data.u8()
				// The personality routine is not needed for unwinding: skip its pointer,
				// whose size depends only on the format (and alignment) of its encoding.
				skip := enc & 0x0f
				if enc&0x70 == peAligned {
					skip |= peAligned
				}
				if _, msg := data.pointer(skip, e.addrSize, s.addr+bodyOff+uint64(augStart), 0); msg != "" {
					return cie{}, s.errorf(off, "CIE personality pointer: %s", msg)
				}
			case 'L':
				data.u8() // the LSDA encoding; the LSDA itself is not needed
			case 'S':
				e.signal = true
			case 'B', 'G':
				// AArch64 B-key and MTE-tagged frames: no data.
			default:
				break augLoop // unknown: the length lets us skip the rest
			}
		}
		if data.bad {
			return cie{}, s.errorf(off, "CIE augmentation data %q is shorter than its string says", aug)
		}
	} else if len(aug) != 0 && string(aug) != "eh" {
		return cie{}, s.errorf(off, "unknown CIE augmentation %q", aug)
	}
	if c.bad {
		return cie{}, s.errorf(off, "CIE is truncated")
	}
	if e.codeAlign == 0 {
		return cie{}, s.errorf(off, "CIE code alignment factor is 0")
	}
	if e.raReg >= NumRegs {
		return cie{}, s.errorf(off, "CIE return address register %d is not an x86-64 register (0-16)", e.raReg)
	}
	e.insns = body[c.off:]
	e.insOff = bodyOff + uint64(c.off)
	return e, nil
}

// fdeAt parses the FDE at offset off. cies, when not nil, caches parsed CIEs by offset.
func (s *section) fdeAt(off uint64, cies map[uint64]cie) (fde, error) {
	body, bodyOff, _, id, is64, err := s.entry(off)
	if err != nil {
		return fde{}, err
	}
	if body == nil {
		return fde{}, s.errorf(off, "expected an FDE, found the section terminator")
	}
	if s.isCIE(id, is64) {
		return fde{}, s.errorf(off, "expected an FDE, found a CIE")
	}
	var cieOff uint64
	if s.eh {
		if id > bodyOff {
			return fde{}, s.errorf(off, "FDE's CIE pointer %#x points before the section", id)
		}
		cieOff = bodyOff - id
	} else {
		cieOff = id
	}
	e, ok := cies[cieOff]
	if !ok {
		if e, err = s.cieAt(cieOff); err != nil {
			return fde{}, fmt.Errorf("FDE at offset %#x: %w", off, err)
		}
		if cies != nil {
			cies[cieOff] = e
		}
	}
	f := fde{cie: e, off: off}
	c := &cursor{b: body, off: 4}
	if is64 {
		c.off = 8
	}
	enc := e.fdeEnc
	if !s.eh {
		enc = peAbsptr
	}
	if enc&peIndirect != 0 {
		return fde{}, s.errorf(off, "FDE address encoding %#x is indirect", enc)
	}
	var msg string
	f.lo, msg = c.pointer(enc, e.addrSize, s.addr+bodyOff, 0)
	if msg != "" {
		return fde{}, s.errorf(off, "FDE start address: %s", msg)
	}
	n, msg := c.pointer(enc&0x0f, e.addrSize, 0, 0)
	if msg != "" {
		return fde{}, s.errorf(off, "FDE address range: %s", msg)
	}
	f.hi = f.lo + n
	if f.hi < f.lo {
		f.hi = ^uint64(0)
	}
	if e.aug {
		c.bytes(c.uleb())
	}
	if c.bad {
		return fde{}, s.errorf(off, "FDE is truncated")
	}
	f.insns = body[c.off:]
	f.insOff = bodyOff + uint64(c.off)
	return f, nil
}

// interp runs call frame instructions. Its remember_state stack is reused between runs.
type interp struct {
	stack []Row
}

// run computes the row of f at pc into out.
func (in *interp) run(s *section, f *fde, pc uint64, out *Row) error {
	*out = Row{RA: uint8(f.cie.raReg), Signal: f.cie.signal, Lo: f.lo, Hi: f.hi}
	in.stack = in.stack[:0]
	if err := in.exec(s, f, f.cie.insns, f.cie.insOff, ^uint64(0), out, nil); err != nil {
		return err
	}
	init := *out
	if err := in.exec(s, f, f.insns, f.insOff, pc, out, &init); err != nil {
		return err
	}
	out.set = 0
	for i, r := range out.Regs {
		if r.Kind != RuleSameValue {
			out.set |= 1 << uint(i)
		}
	}
	return nil
}

// exec executes insns, found at offset insOff of the section (a CIE's initial instructions when
// init is nil, else an FDE's) from f.lo until the location passes pc.
func (in *interp) exec(s *section, f *fde, insns []byte, insOff, pc uint64, row *Row, init *Row) error {
	c := &cursor{b: insns}
	loc := f.lo
	e := &f.cie
	what := "FDE"
	if init == nil {
		what = "CIE"
	}
	bad := func(format string, args ...any) error {
		return s.errorf(f.off, "%s instruction at byte %d: %s", what, c.off, fmt.Sprintf(format, args...))
	}
	set := func(reg uint64, r Rule) {
		if reg < NumRegs {
			row.Regs[reg] = r
		}
	}
	advance := func(delta uint64) bool {
		loc += delta * e.codeAlign
		return loc > pc
	}
	for c.off < len(c.b) {
		op := c.u8()
		var done bool
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			done = advance(uint64(op & 0x3f))
		case cfaOffset:
			set(uint64(op&0x3f), Rule{Kind: RuleOffset, Offset: int64(c.uleb()) * e.dataAlign})
		case cfaRestore:
			reg := uint64(op & 0x3f)
			if reg < NumRegs {
				row.Regs[reg] = Rule{}
				if init != nil {
					row.Regs[reg] = init.Regs[reg]
				}
			}
		default:
			switch op {
			case cfaNop:
			case cfaSetLoc:
				enc := e.fdeEnc
				if !s.eh {
					enc = peAbsptr
				}
				// pos is the link-time address of insns[0], for pcrel.
				v, msg := c.pointer(enc&^peIndirect, e.addrSize, s.addr+insOff, 0)
				if msg != "" {
					return bad("set_loc: %s", msg)
				}
				if v > pc {
					done = true
				}
				loc = v
			case cfaAdvanceLoc1:
				done = advance(uint64(c.u8()))
			case cfaAdvanceLoc2:
				done = advance(uint64(c.u16()))
			case cfaAdvanceLoc4:
				done = advance(uint64(c.u32()))
			case cfaMIPSAdvanceLoc8:
				done = advance(c.u64())
			case cfaOffsetExtended:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleOffset, Offset: int64(c.uleb()) * e.dataAlign})
			case cfaOffsetExtendedSF:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleOffset, Offset: c.sleb() * e.dataAlign})
			case cfaGNUNegOffsetExtnd:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleOffset, Offset: -int64(c.uleb()) * e.dataAlign})
			case cfaValOffset:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleValOffset, Offset: int64(c.uleb()) * e.dataAlign})
			case cfaValOffsetSF:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleValOffset, Offset: c.sleb() * e.dataAlign})
			case cfaRestoreExtended:
				reg := c.uleb()
				if reg < NumRegs {
					row.Regs[reg] = Rule{}
					if init != nil {
						row.Regs[reg] = init.Regs[reg]
					}
				}
			case cfaUndefined:
				set(c.uleb(), Rule{Kind: RuleUndefined})
			case cfaSameValue:
				set(c.uleb(), Rule{Kind: RuleSameValue})
			case cfaRegister:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleRegister, Reg: regNum(c.uleb())})
			case cfaRememberState:
				if len(in.stack) >= maxStateDepth {
					return bad("remember_state nested deeper than %d", maxStateDepth)
				}
				in.stack = append(in.stack, *row)
			case cfaRestoreState:
				if len(in.stack) == 0 {
					return bad("restore_state without remember_state")
				}
				// Like libgcc and LLVM's libunwind, the CFA rule is part of the remembered state.
				top := in.stack[len(in.stack)-1]
				in.stack = in.stack[:len(in.stack)-1]
				row.CFA, row.Regs = top.CFA, top.Regs
			case cfaDefCFA:
				reg := c.uleb()
				row.CFA = Rule{Kind: RuleRegister, Reg: regNum(reg), Offset: int64(c.uleb())}
			case cfaDefCFASF:
				reg := c.uleb()
				row.CFA = Rule{Kind: RuleRegister, Reg: regNum(reg), Offset: c.sleb() * e.dataAlign}
			case cfaDefCFARegister:
				reg := c.uleb()
				if row.CFA.Kind != RuleRegister {
					return bad("def_cfa_register when the CFA is not register-based")
				}
				row.CFA.Reg = regNum(reg)
			case cfaDefCFAOffset:
				if row.CFA.Kind != RuleRegister {
					return bad("def_cfa_offset when the CFA is not register-based")
				}
				row.CFA.Offset = int64(c.uleb())
			case cfaDefCFAOffsetSF:
				if row.CFA.Kind != RuleRegister {
					return bad("def_cfa_offset_sf when the CFA is not register-based")
				}
				row.CFA.Offset = c.sleb() * e.dataAlign
			case cfaDefCFAExpression:
				row.CFA = Rule{Kind: RuleValExpression, Expr: c.bytes(c.uleb())}
			case cfaExpression:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleExpression, Expr: c.bytes(c.uleb())})
			case cfaValExpression:
				reg := c.uleb()
				set(reg, Rule{Kind: RuleValExpression, Expr: c.bytes(c.uleb())})
			case cfaGNUArgsSize:
				c.uleb() // the size of outgoing arguments: only landing pads need it
			case cfaGNUWindowSave:
				// SPARC register windows / AArch64 return address signing: nothing on x86-64.
			default:
				return bad("unknown call frame instruction %#x", op)
			}
		}
		if c.bad {
			return bad("operands run past the end of the instructions")
		}
		if done {
			break
		}
	}
	return nil
}

// regNum narrows a register number for Rule.Reg, mapping huge ones to an invalid number.
func regNum(r uint64) uint16 {
	if r > 0xffff {
		return 0xffff
	}
	return uint16(r)
}
