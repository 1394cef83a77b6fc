// Package disasm decodes x86-64 machine code into instructions with objdump-like text and named call and jump targets.
package disasm

import (
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Syntax is the assembler syntax of Inst.Text.
type Syntax int

// The syntaxes.
const (
	GNU   Syntax = iota // AT&T, as objdump -d prints it
	Intel               // as objdump -d -M intel prints it
)

// Inst is one decoded instruction.
type Inst struct {
	Addr   uint64 // link-time address
	Len    int
	Bytes  []byte // the instruction's bytes (a subslice of the code given)
	Text   string // mnemonic and operands; "(bad)" for bytes that do not decode
	Target uint64 // the target of a call or jump with a direct (relative) target, else 0
	IsCall bool   // a call, direct or indirect
	IsJump bool   // a jump, conditional or not, direct or indirect (not a call or return)
	MemRef uint64 // the address a RIP-relative memory operand refers to, else 0
}

// Decode disassembles code that starts at link-time address addr, in GNU
// syntax. symbolize, when not nil, names an address ("f", "f+0x12",
// "puts@plt"); Text then shows direct targets as "call   f" and
// RIP-relative operands with a comment "# 0x4010 <name>". Bytes that do not
// decode become one-byte "(bad)" instructions.
func Decode(code []byte, addr uint64, symbolize func(uint64) (string, bool)) []Inst {
	return DecodeSyntax(code, addr, symbolize, GNU)
}

// DecodeSyntax is Decode with the syntax given.
func DecodeSyntax(code []byte, addr uint64, symbolize func(uint64) (string, bool), syntax Syntax) []Inst {
	var out []Inst
	for off := 0; off < len(code); {
		in := decodeAt(code[off:], addr+uint64(off), symbolize, syntax)
		out = append(out, in)
		off += in.Len
	}
	return out
}

// decodeAt decodes the instruction at the start of code, at address pc.
func decodeAt(code []byte, pc uint64, symbolize func(uint64) (string, bool), syntax Syntax) Inst {
	in, inst, ok := decodeInst(code, pc)
	if !ok {
		return in
	}
	in.Text = safeFormat(inst, code, pc, syntax)
	if in.Target != 0 {
		in.Text = nameTarget(in.Text, in.Target, symbolize)
	}
	if in.MemRef != 0 {
		in.Text += fmt.Sprintf("        # %#x", in.MemRef)
		if symbolize != nil {
			if s, ok := symbolize(in.MemRef); ok {
				in.Text += " <" + s + ">"
			}
		}
	}
	return in
}

// decodeInst decodes the instruction at the start of code, at address pc, without its text: ok is
// false for bytes that x86asm does not decode (in is then whole, its Text set).
func decodeInst(code []byte, pc uint64) (in Inst, inst x86asm.Inst, ok bool) {
	if n, text, ok := special(code); ok {
		return Inst{Addr: pc, Len: n, Bytes: code[:n:n], Text: text}, inst, false
	}
	inst, ok = decode(code)
	if !ok {
		return Inst{Addr: pc, Len: 1, Bytes: code[:1:1], Text: "(bad)"}, inst, false
	}
	fixRIPRelative(&inst, code)
	fixVZero(&inst, code)
	fixDisp32(&inst, code)
	fixVEXPayload(&inst)
	in = Inst{Addr: pc, Len: inst.Len, Bytes: code[:inst.Len:inst.Len]}
	next := pc + uint64(inst.Len)
	switch inst.Op {
	case x86asm.CALL, x86asm.LCALL:
		in.IsCall = true
	case x86asm.JMP, x86asm.LJMP, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE, x86asm.JECXZ,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
		x86asm.JP, x86asm.JRCXZ, x86asm.JS, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		in.IsJump = true
	}
	if rel, ok := inst.Args[0].(x86asm.Rel); ok && (in.IsCall || in.IsJump) {
		in.Target = next + uint64(int64(rel))
	}
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP && m.Index == 0 {
			in.MemRef = next + uint64(m.Disp)
		}
	}
	return in, inst, true
}

// Starts lists the addresses of the instructions that Decode of code at addr finds, decoding without
// making any text.
func Starts(code []byte, addr uint64) []uint64 {
	var out []uint64
	for off := 0; off < len(code); {
		in, _, _ := decodeInst(code[off:], addr+uint64(off))
		out = append(out, in.Addr)
		off += in.Len
	}
	return out
}

// References lists the addresses that Decode of code at addr may ask its symbolize to name (each
// instruction's direct target and RIP-relative operand), decoding without making any text: a
// tenth of Decode's time.
func References(code []byte, addr uint64) []uint64 {
	var out []uint64
	for off := 0; off < len(code); {
		in, _, _ := decodeInst(code[off:], addr+uint64(off))
		if in.Target != 0 {
			out = append(out, in.Target)
		}
		if in.MemRef != 0 {
			out = append(out, in.MemRef)
		}
		off += in.Len
	}
	return out
}

// decode runs x86asm.Decode, which must not take down the caller on
// strange input.
func decode(code []byte) (inst x86asm.Inst, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	inst, err := x86asm.Decode(code, 64)
	if err != nil || inst.Len <= 0 || inst.Len > len(code) {
		return inst, false
	}
	// A byte x86asm takes for a prefix of nothing (a truncated instruction).
	if inst.Op == 0 && !isLegacyPrefix(code[0]) {
		return inst, false
	}
	return inst, true
}

// fixedInsts are instructions without operands that x86asm does not know
// (it would decode some as a lone prefix and lose the instruction boundary).
var fixedInsts = []struct {
	bytes string
	text  string
}{
	{"\xf3\x0f\x1e\xfa", "endbr64"},
	{"\xf3\x0f\x1e\xfb", "endbr32"},
	{"\x0f\x01\xee", "rdpkru"},
	{"\x0f\x01\xef", "wrpkru"},
	{"\x0f\x01\xe8", "serialize"},
	{"\x0f\x01\xca", "clac"},
	{"\x0f\x01\xcb", "stac"},
	{"\xf3\x0f\x01\xea", "saveprevssp"},
	{"\xf3\x0f\x01\xe8", "setssbsy"},
	{"\xc5\xf8\x77", "vzeroupper"}, // x86asm wants a ModRM byte (see fixVZero)
	{"\xc5\xfc\x77", "vzeroall"},
}

// Register names by number, 64- and 32-bit.
var (
	reg64 = []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	reg32 = []string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"}
)

// special decodes instructions that x86asm does not know: those of
// fixedInsts, and the F3-prefixed register forms rdpid, rdssp and incssp.
func special(code []byte) (int, string, bool) {
	for _, f := range fixedInsts {
		if len(code) >= len(f.bytes) && string(code[:len(f.bytes)]) == f.bytes {
			return len(f.bytes), f.text, true
		}
	}
	if len(code) < 4 || code[0] != 0xf3 {
		return 0, "", false
	}
	p, rex := 1, byte(0)
	if code[1]&0xf0 == 0x40 {
		p, rex = 2, code[1]
	}
	if len(code) < p+3 || code[p] != 0x0f || code[p+2]>>6 != 3 {
		return 0, "", false
	}
	op, modrm := code[p+1], code[p+2]
	r := int(modrm & 7)
	if rex&1 != 0 {
		r += 8
	}
	wide := rex&8 != 0
	name := func(base string) string {
		if wide {
			return fmt.Sprintf("%-6s %%%s", base+"q", reg64[r])
		}
		return fmt.Sprintf("%-6s %%%s", base+"d", reg32[r])
	}
	switch reg := modrm >> 3 & 7; {
	case op == 0xc7 && reg == 7:
		return p + 3, fmt.Sprintf("%-6s %%%s", "rdpid", reg64[r]), true
	case op == 0x1e && reg == 1:
		return p + 3, name("rdssp"), true
	case op == 0xae && reg == 5:
		return p + 3, name("incssp"), true
	}
	return 0, "", false
}

// vexStart finds the VEX or EVEX prefix of the instruction at code after
// its legacy prefixes: its index, the length of the prefix (3, 4 or 5
// bytes with the opcode), and whether an address-size prefix came first.
// n is 0 when the instruction has none.
func vexStart(code []byte) (p, n int, addr32 bool) {
	for p < len(code) && isLegacyPrefix(code[p]) {
		addr32 = addr32 || code[p] == 0x67
		p++
	}
	if p >= len(code) {
		return p, 0, addr32
	}
	switch code[p] {
	case 0xc5:
		n = 3
	case 0xc4:
		n = 4
	case 0x62:
		n = 5
	}
	return p, n, addr32
}

// fixVEXPayload keeps the payload bytes of a VEX or EVEX prefix, which
// x86asm stores among the prefixes, from being printed as segment
// overrides (a payload byte 0x65 printed "%gs:").
func fixVEXPayload(inst *x86asm.Inst) {
	for i, p := range inst.Prefix {
		if p == 0 {
			return
		}
		n := 0
		switch {
		case p&0xff == x86asm.PrefixVEX2Bytes:
			n = 1
		case p&0xff == x86asm.PrefixVEX3Bytes:
			n = 2
		case p&0xff == x86asm.PrefixEVEX:
			n = 3
		default:
			continue
		}
		for k := i + 1; k <= i+n && k < len(inst.Prefix); k++ {
			inst.Prefix[k] |= x86asm.PrefixImplicit
		}
		return
	}
}

// fixRIPRelative corrects the memory operand of VEX- and EVEX-encoded
// instructions with ModRM mod=00 r/m=101: x86asm decodes it as an absolute
// disp32, but in 64-bit mode it is RIP-relative (EIP-relative with an
// address-size prefix).
func fixRIPRelative(inst *x86asm.Inst, code []byte) {
	p, n, addr32 := vexStart(code)
	modrm := p + n
	if n == 0 || modrm >= len(code) || modrm >= inst.Len || code[modrm]>>6 != 0 || code[modrm]&7 != 5 {
		return
	}
	for i, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 {
			m.Base = x86asm.RIP
			if addr32 {
				m.Base = x86asm.EIP
			}
			inst.Args[i] = m
		}
	}
}

// fixVZero corrects the length of vzeroupper and vzeroall (VEX 0F 77),
// which have no ModRM byte: x86asm counts one.
func fixVZero(inst *x86asm.Inst, code []byte) {
	if inst.Op != x86asm.VZEROUPPER && inst.Op != x86asm.VZEROALL {
		return
	}
	if p, n, _ := vexStart(code); n == 3 || n == 4 {
		inst.Len = p + n
	}
}

// fixDisp32 sign-extends 32-bit displacements, which x86asm keeps
// unsigned (0xfffffb08(%rbp) for -0x4f8(%rbp)). The 64-bit absolute address
// of MOV A0-A3 (moffs) is left alone.
func fixDisp32(inst *x86asm.Inst, code []byte) {
	if op := opcode(code); op >= 0xa0 && op <= 0xa3 {
		return
	}
	for i, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Disp >= 1<<31 && m.Disp < 1<<32 {
			m.Disp = int64(int32(uint32(m.Disp)))
			inst.Args[i] = m
		}
	}
}

// isLegacyPrefix reports whether b is a legacy instruction prefix.
func isLegacyPrefix(b byte) bool {
	switch b {
	case 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65:
		return true
	}
	return false
}

// format renders inst at pc in the syntax, objdump-like: the mnemonic (with
// its prefixes) padded to 6 columns, a space, the operands.
func format(inst x86asm.Inst, code []byte, pc uint64, syntax Syntax) string {
	var s string
	if syntax == Intel {
		s = x86asm.IntelSyntax(inst, pc, nil)
	} else {
		s = x86asm.GNUSyntax(inst, pc, nil)
	}
	words := strings.Split(s, " ")
	i := 0
	for i < len(words)-1 && isPrefixWord(words[i]) {
		i++
	}
	mnem, ops := strings.Join(words[:i+1], " "), strings.Join(words[i+1:], " ")
	if syntax == GNU {
		mnem = gnuMnemonic(mnem, inst, code)
		ops = gnuOperands(ops)
	}
	if ops == "" {
		return mnem
	}
	return fmt.Sprintf("%-6s %s", mnem, ops)
}

// safeFormat is format, with x86asm's own rendering should it panic.
func safeFormat(inst x86asm.Inst, code []byte, pc uint64, syntax Syntax) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("(bad: % x)", code[:inst.Len])
		}
	}()
	return format(inst, code, pc, syntax)
}

// isPrefixWord reports whether w is an instruction prefix as x86asm prints it.
func isPrefixWord(w string) bool {
	switch w {
	case "lock", "rep", "repe", "repne", "repz", "repnz", "bnd", "notrack", "data16", "data32", "addr16", "addr32",
		"cs", "ds", "es", "fs", "gs", "ss", "xacquire", "xrelease", "pt", "pn":
		return true
	}
	return strings.HasPrefix(w, "rex")
}

// gnuNames are objdump's names for mnemonics that x86asm spells otherwise.
var gnuNames = map[string]string{
	"callq": "call", "retq": "ret", "jmpq": "jmp", "pushq": "push", "popq": "pop", "leaveq": "leave",
	"cdqe": "cltq", "cqo": "cqto", "cwde": "cwtl", "cdq": "cltd", "cbw": "cbtw", "cwd": "cwtd", "movsxd": "movslq",
	"xbeginq": "xbegin", "rep": "repz",
}

// bmi are the BMI1/BMI2 mnemonics (general-purpose registers, VEX-encoded).
var bmi = map[string]bool{"andn": true, "bextr": true, "blsi": true, "blsmsk": true, "blsr": true, "bzhi": true,
	"mulx": true, "pdep": true, "pext": true, "rorx": true, "sarx": true, "shlx": true, "shrx": true}

// gnuMnemonic renames the mnemonic (the last word of m) as objdump
// (binutils 2.40) prints it.
func gnuMnemonic(m string, inst x86asm.Inst, code []byte) string {
	head, last := "", m
	if i := strings.LastIndexByte(m, ' '); i >= 0 {
		head, last = m[:i+1], m[i+1:]
	}
	if n, ok := gnuNames[last]; ok {
		last = n
	}
	// objdump gives the BMI instructions no size suffix.
	if n := len(last); n > 1 && (last[n-1] == 'l' || last[n-1] == 'q') && bmi[last[:n-1]] {
		last = last[:n-1]
	}
	if last == "jmp" || last == "call" {
		head = strings.Replace(head, "ds ", "notrack ", 1) // CET: an indirect branch that need not land on endbr64
	}
	if inst.Op == x86asm.MOV {
		// MOV with a 64-bit immediate or a 64-bit absolute address.
		if op := opcode(code); op >= 0xb8 && op <= 0xbf && inst.DataSize == 64 || op >= 0xa0 && op <= 0xa3 {
			last = "movabs"
		}
	}
	return head + last
}

// opcode returns the first opcode byte of the instruction at code, after
// legacy and REX prefixes.
func opcode(code []byte) byte {
	p := 0
	for p < len(code) && (isLegacyPrefix(code[p]) || code[p]&0xf0 == 0x40) {
		p++
	}
	if p < len(code) {
		return code[p]
	}
	return 0
}

// gnuOperands rewrites x86asm's GNU operands as objdump prints them: an
// absolute address 0 as 0x0, (%r12) without a %riz index, an index with
// its scale 1, and AVX-512 masks next to their operand.
func gnuOperands(ops string) string {
	if ops == "" {
		return ""
	}
	ops = strings.ReplaceAll(ops, " {", "{")
	parts := splitOperands(ops)
	for i, p := range parts {
		switch {
		case p == "" || strings.HasSuffix(p, ":"):
			p += "0x0"
		case strings.Contains(p, ",%riz)"), strings.Contains(p, ",%eiz)"):
			p = strings.Replace(strings.Replace(p, ",%riz)", ")", 1), ",%eiz)", ")", 1)
			p = strings.TrimSuffix(p, "()") // no base either: an absolute address
		}
		if open := strings.IndexByte(p, '('); open >= 0 && strings.HasSuffix(p, ")") && strings.Count(p[open:], ",") == 1 {
			p = p[:len(p)-1] + ",1)"
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// splitOperands splits at the commas outside parentheses.
func splitOperands(ops string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(ops); i++ {
		switch ops[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, ops[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, ops[start:])
}

// nameTarget replaces the hex target at the end of text with its name.
func nameTarget(text string, target uint64, symbolize func(uint64) (string, bool)) string {
	hex := fmt.Sprintf("%#x", target)
	if !strings.HasSuffix(text, hex) || symbolize == nil {
		return text
	}
	if s, ok := symbolize(target); ok {
		return text[:len(text)-len(hex)] + s
	}
	return text
}
