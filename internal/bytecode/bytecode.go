// Package bytecode decodes Java Virtual Machine bytecode into instructions, for the disassembly of a Java method.
package bytecode

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Inst is one instruction: its bytecode index, its length in bytes and its text ("iload_1",
// "invokevirtual #12", "if_icmpge 27").
type Inst struct {
	BCI  int
	Len  int
	Text string
}

// The operands of an opcode: what follows the opcode byte.
const (
	opNone    = iota
	opU1      // an unsigned byte: a local variable index, an array type
	opS1      // a signed byte (bipush)
	opS2      // a signed short (sipush)
	opCP1     // a constant-pool index of 1 byte (ldc)
	opCP2     // a constant-pool index of 2 bytes
	opBranch2 // a branch offset of 2 bytes
	opBranch4 // a branch offset of 4 bytes (goto_w, jsr_w)
	opIinc    // a local index and a signed byte
	opIface   // invokeinterface: an index of 2 bytes, a count, a zero
	opIndy    // invokedynamic: an index of 2 bytes, two zeros
	opMulti   // multianewarray: an index of 2 bytes, the dimensions
	opTable   // tableswitch
	opLookup  // lookupswitch
	opWide    // wide: the next opcode's local index (and iinc's constant) widened
)

type opcode struct {
	name string
	kind int
}

// opcodes is the JVM's instruction set (The Java Virtual Machine Specification, chapter 6), by
// opcode; "" where none is defined.
var opcodes = [256]opcode{}

func def(op byte, name string, kind int) { opcodes[op] = opcode{name, kind} }

func init() {
	simple := []string{"nop", "aconst_null", "iconst_m1", "iconst_0", "iconst_1", "iconst_2", "iconst_3", "iconst_4",
		"iconst_5", "lconst_0", "lconst_1", "fconst_0", "fconst_1", "fconst_2", "dconst_0", "dconst_1"}
	for i, n := range simple {
		def(byte(i), n, opNone)
	}
	def(0x10, "bipush", opS1)
	def(0x11, "sipush", opS2)
	def(0x12, "ldc", opCP1)
	def(0x13, "ldc_w", opCP2)
	def(0x14, "ldc2_w", opCP2)
	types := []string{"i", "l", "f", "d", "a"}
	for i, t := range types {
		def(byte(0x15+i), t+"load", opU1)
		def(byte(0x36+i), t+"store", opU1)
		for k := 0; k < 4; k++ {
			def(byte(0x1a+4*i+k), t+"load_"+strconv.Itoa(k), opNone)
			def(byte(0x3b+4*i+k), t+"store_"+strconv.Itoa(k), opNone)
		}
	}
	for i, n := range []string{"iaload", "laload", "faload", "daload", "aaload", "baload", "caload", "saload"} {
		def(byte(0x2e+i), n, opNone)
	}
	for i, n := range []string{"iastore", "lastore", "fastore", "dastore", "aastore", "bastore", "castore", "sastore",
		"pop", "pop2", "dup", "dup_x1", "dup_x2", "dup2", "dup2_x1", "dup2_x2", "swap"} {
		def(byte(0x4f+i), n, opNone)
	}
	arith := []string{"add", "sub", "mul", "div", "rem", "neg"}
	for i, a := range arith {
		for k, t := range types[:4] {
			def(byte(0x60+4*i+k), t+a, opNone)
		}
	}
	for i, n := range []string{"ishl", "lshl", "ishr", "lshr", "iushr", "lushr", "iand", "land", "ior", "lor", "ixor", "lxor"} {
		def(byte(0x78+i), n, opNone)
	}
	def(0x84, "iinc", opIinc)
	for i, n := range []string{"i2l", "i2f", "i2d", "l2i", "l2f", "l2d", "f2i", "f2l", "f2d", "d2i", "d2l", "d2f", "i2b", "i2c", "i2s",
		"lcmp", "fcmpl", "fcmpg", "dcmpl", "dcmpg"} {
		def(byte(0x85+i), n, opNone)
	}
	for i, n := range []string{"ifeq", "ifne", "iflt", "ifge", "ifgt", "ifle", "if_icmpeq", "if_icmpne", "if_icmplt", "if_icmpge",
		"if_icmpgt", "if_icmple", "if_acmpeq", "if_acmpne", "goto", "jsr"} {
		def(byte(0x99+i), n, opBranch2)
	}
	def(0xa9, "ret", opU1)
	def(0xaa, "tableswitch", opTable)
	def(0xab, "lookupswitch", opLookup)
	for i, n := range []string{"ireturn", "lreturn", "freturn", "dreturn", "areturn", "return"} {
		def(byte(0xac+i), n, opNone)
	}
	for i, n := range []string{"getstatic", "putstatic", "getfield", "putfield", "invokevirtual", "invokespecial", "invokestatic"} {
		def(byte(0xb2+i), n, opCP2)
	}
	def(0xb9, "invokeinterface", opIface)
	def(0xba, "invokedynamic", opIndy)
	def(0xbb, "new", opCP2)
	def(0xbc, "newarray", opU1)
	def(0xbd, "anewarray", opCP2)
	def(0xbe, "arraylength", opNone)
	def(0xbf, "athrow", opNone)
	def(0xc0, "checkcast", opCP2)
	def(0xc1, "instanceof", opCP2)
	def(0xc2, "monitorenter", opNone)
	def(0xc3, "monitorexit", opNone)
	def(0xc4, "wide", opWide)
	def(0xc5, "multianewarray", opMulti)
	def(0xc6, "ifnull", opBranch2)
	def(0xc7, "ifnonnull", opBranch2)
	def(0xc8, "goto_w", opBranch4)
	def(0xc9, "jsr_w", opBranch4)
	def(0xca, "breakpoint", opNone)
}

var arrayTypes = map[byte]string{4: "boolean", 5: "char", 6: "float", 7: "double", 8: "byte", 9: "short", 10: "int", 11: "long"}

// Decode decodes code, a method's bytecode, into its instructions. An opcode the JVM does not
// define, or an instruction cut short by the end of the code, is an instruction of its own
// ("<bad opcode 0xfe>", "<truncated>") of the rest of the code.
func Decode(code []byte) []Inst {
	var out []Inst
	for pc := 0; pc < len(code); {
		in, ok := decodeAt(code, pc)
		if !ok {
			out = append(out, Inst{BCI: pc, Len: len(code) - pc, Text: in.Text})
			break
		}
		out = append(out, in)
		pc += in.Len
	}
	return out
}

func decodeAt(code []byte, pc int) (Inst, bool) {
	op := opcodes[code[pc]]
	if op.name == "" {
		return Inst{Text: fmt.Sprintf("<bad opcode %#02x>", code[pc])}, false
	}
	rest := code[pc+1:]
	need := func(n int) bool { return len(rest) >= n }
	u2 := func(b []byte) int { return int(binary.BigEndian.Uint16(b)) }
	s4 := func(b []byte) int { return int(int32(binary.BigEndian.Uint32(b))) }
	short := Inst{Text: "<truncated " + op.name + ">"}
	in := Inst{BCI: pc, Len: 1, Text: op.name}
	switch op.kind {
	case opNone:
	case opU1:
		if !need(1) {
			return short, false
		}
		in.Len, in.Text = 2, fmt.Sprintf("%s %d", op.name, rest[0])
		if code[pc] == 0xbc {
			if t, ok := arrayTypes[rest[0]]; ok {
				in.Text = op.name + " " + t
			}
		}
	case opS1:
		if !need(1) {
			return short, false
		}
		in.Len, in.Text = 2, fmt.Sprintf("%s %d", op.name, int8(rest[0]))
	case opS2:
		if !need(2) {
			return short, false
		}
		in.Len, in.Text = 3, fmt.Sprintf("%s %d", op.name, int16(u2(rest)))
	case opCP1:
		if !need(1) {
			return short, false
		}
		in.Len, in.Text = 2, fmt.Sprintf("%s #%d", op.name, rest[0])
	case opCP2:
		if !need(2) {
			return short, false
		}
		in.Len, in.Text = 3, fmt.Sprintf("%s #%d", op.name, u2(rest))
	case opBranch2:
		if !need(2) {
			return short, false
		}
		in.Len, in.Text = 3, fmt.Sprintf("%s %d", op.name, pc+int(int16(u2(rest))))
	case opBranch4:
		if !need(4) {
			return short, false
		}
		in.Len, in.Text = 5, fmt.Sprintf("%s %d", op.name, pc+s4(rest))
	case opIinc:
		if !need(2) {
			return short, false
		}
		in.Len, in.Text = 3, fmt.Sprintf("%s %d, %d", op.name, rest[0], int8(rest[1]))
	case opIface:
		if !need(4) {
			return short, false
		}
		in.Len, in.Text = 5, fmt.Sprintf("%s #%d, %d", op.name, u2(rest), rest[2])
	case opIndy:
		if !need(4) {
			return short, false
		}
		in.Len, in.Text = 5, fmt.Sprintf("%s #%d", op.name, u2(rest))
	case opMulti:
		if !need(3) {
			return short, false
		}
		in.Len, in.Text = 4, fmt.Sprintf("%s #%d, %d", op.name, u2(rest), rest[2])
	case opWide:
		if !need(3) {
			return short, false
		}
		wop := opcodes[rest[0]]
		switch {
		case rest[0] == 0x84:
			if !need(5) {
				return short, false
			}
			in.Len, in.Text = 6, fmt.Sprintf("wide iinc %d, %d", u2(rest[1:]), int16(u2(rest[3:])))
		case wop.kind == opU1 && rest[0] != 0xbc:
			in.Len, in.Text = 4, fmt.Sprintf("wide %s %d", wop.name, u2(rest[1:]))
		default:
			return Inst{Text: fmt.Sprintf("<bad wide opcode %#02x>", rest[0])}, false
		}
	case opTable, opLookup:
		pad := (4 - (pc+1)%4) % 4
		b := rest
		if len(b) < pad+8 {
			return short, false
		}
		b = b[pad:]
		def := s4(b)
		var cases []string
		var n int
		if op.kind == opTable {
			if len(b) < 12 {
				return short, false
			}
			lo, hi := s4(b[4:]), s4(b[8:])
			if hi < lo || int64(hi)-int64(lo) >= 1<<16 || len(b) < 12+4*(hi-lo+1) {
				return short, false
			}
			for k := 0; k <= hi-lo; k++ {
				cases = append(cases, fmt.Sprintf("%d: %d", lo+k, pc+s4(b[12+4*k:])))
			}
			n = 12 + 4*(hi-lo+1)
		} else {
			pairs := s4(b[4:])
			if pairs < 0 || pairs >= 1<<16 || len(b) < 8+8*pairs {
				return short, false
			}
			for k := 0; k < pairs; k++ {
				cases = append(cases, fmt.Sprintf("%d: %d", s4(b[8+8*k:]), pc+s4(b[12+8*k:])))
			}
			n = 8 + 8*pairs
		}
		cases = append(cases, fmt.Sprintf("default: %d", pc+def))
		in.Len, in.Text = 1+pad+n, op.name+" { "+strings.Join(cases, ", ")+" }"
	}
	return in, true
}
