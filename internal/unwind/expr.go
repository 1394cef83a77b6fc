package unwind

import "fmt"

// DWARF expression operations that call frame information uses (DWARF 5 section 2.5).
const (
	opAddr         = 0x03
	opDeref        = 0x06
	opConst1u      = 0x08
	opConst1s      = 0x09
	opConst2u      = 0x0a
	opConst2s      = 0x0b
	opConst4u      = 0x0c
	opConst4s      = 0x0d
	opConst8u      = 0x0e
	opConst8s      = 0x0f
	opConstu       = 0x10
	opConsts       = 0x11
	opDup          = 0x12
	opDrop         = 0x13
	opOver         = 0x14
	opPick         = 0x15
	opSwap         = 0x16
	opRot          = 0x17
	opAbs          = 0x19
	opAnd          = 0x1a
	opDiv          = 0x1b
	opMinus        = 0x1c
	opMod          = 0x1d
	opMul          = 0x1e
	opNeg          = 0x1f
	opNot          = 0x20
	opOr           = 0x21
	opPlus         = 0x22
	opPlusUconst   = 0x23
	opShl          = 0x24
	opShr          = 0x25
	opShra         = 0x26
	opXor          = 0x27
	opBra          = 0x28
	opEq           = 0x29
	opGe           = 0x2a
	opGt           = 0x2b
	opLe           = 0x2c
	opLt           = 0x2d
	opNe           = 0x2e
	opSkip         = 0x2f
	opLit0         = 0x30
	opLit31        = 0x4f
	opBreg0        = 0x70
	opBreg31       = 0x8f
	opBregx        = 0x92
	opDerefSize    = 0x94
	opNop          = 0x96
	opCallFrameCFA = 0x9c
)

// Limits of the expression machine: stack depth and operations executed (branches can loop).
const (
	exprStackSize = 64
	exprMaxSteps  = 10000
)

// exprFail says why an expression could not be evaluated.
type exprFail uint8

const (
	exprOK    exprFail = iota
	exprBad            // malformed or unsupported; see exprResult.msg
	exprNoReg          // a register it reads is unknown in this frame; see reg
	exprNoMem          // a memory read failed; see addr
)

// exprResult is the outcome of evaluating an expression, without allocating on failure.
type exprResult struct {
	fail exprFail
	msg  string // exprBad
	reg  uint16 // exprNoReg
	addr uint64 // exprNoMem
}

// frameRegs is the register state of one frame: values of the DWARF registers, and a bit per
// register that is known. Register 16 is the frame's program counter.
type frameRegs struct {
	r     [NumRegs]uint64
	valid uint32
}

func (f *frameRegs) get(reg uint16) (uint64, bool) {
	if reg >= NumRegs || f.valid&(1<<reg) == 0 {
		return 0, false
	}
	return f.r[reg], true
}

// evalExpr evaluates a DWARF expression of a CFI rule with the registers of the frame being
// unwound. When push is set, initial (the CFA) is pushed first, as for DW_CFA_expression and
// DW_CFA_val_expression. cfa is the value DW_OP_call_frame_cfa pushes (haveCFA false while the
// CFA itself is being computed).
func evalExpr(expr []byte, regs *frameRegs, mem Memory, push bool, initial uint64, cfa uint64, haveCFA bool) (uint64, exprResult) {
	var st [exprStackSize]uint64
	n := 0
	if push {
		st[0] = initial
		n = 1
	}
	c := cursor{b: expr}
	bad := func(msg string) (uint64, exprResult) { return 0, exprResult{fail: exprBad, msg: msg} }
	for steps := 0; c.off < len(c.b); steps++ {
		if steps >= exprMaxSteps {
			return bad(fmt.Sprintf("expression ran more than %d operations", exprMaxSteps))
		}
		op := c.u8()
		// need checks the stack has k operands; room that it can take one more.
		need := func(k int) bool { return n >= k }
		room := n < exprStackSize
		var pushV uint64
		doPush := false
		switch {
		case op >= opLit0 && op <= opLit31:
			pushV, doPush = uint64(op-opLit0), true
		case op >= opBreg0 && op <= opBreg31 || op == opBregx:
			reg := uint16(op - opBreg0)
			if op == opBregx {
				reg = regNum(c.uleb())
			}
			off := c.sleb()
			v, ok := regs.get(reg)
			if !ok {
				return 0, exprResult{fail: exprNoReg, reg: reg}
			}
			pushV, doPush = v+uint64(off), true
		default:
			switch op {
			case opAddr:
				pushV, doPush = c.u64(), true
			case opConst1u:
				pushV, doPush = uint64(c.u8()), true
			case opConst1s:
				pushV, doPush = uint64(int64(int8(c.u8()))), true
			case opConst2u:
				pushV, doPush = uint64(c.u16()), true
			case opConst2s:
				pushV, doPush = uint64(int64(int16(c.u16()))), true
			case opConst4u:
				pushV, doPush = uint64(c.u32()), true
			case opConst4s:
				pushV, doPush = uint64(int64(int32(c.u32()))), true
			case opConst8u, opConst8s:
				pushV, doPush = c.u64(), true
			case opConstu:
				pushV, doPush = c.uleb(), true
			case opConsts:
				pushV, doPush = uint64(c.sleb()), true
			case opCallFrameCFA:
				if !haveCFA {
					return bad("DW_OP_call_frame_cfa in the CFA's own expression")
				}
				pushV, doPush = cfa, true
			case opDup:
				if !need(1) {
					return bad("dup on an empty stack")
				}
				pushV, doPush = st[n-1], true
			case opOver:
				if !need(2) {
					return bad("over needs 2 operands")
				}
				pushV, doPush = st[n-2], true
			case opPick:
				i := int(c.u8())
				if !need(i + 1) {
					return bad("pick beyond the stack")
				}
				pushV, doPush = st[n-1-i], true
			case opDrop:
				if !need(1) {
					return bad("drop on an empty stack")
				}
				n--
			case opSwap:
				if !need(2) {
					return bad("swap needs 2 operands")
				}
				st[n-1], st[n-2] = st[n-2], st[n-1]
			case opRot:
				if !need(3) {
					return bad("rot needs 3 operands")
				}
				st[n-1], st[n-2], st[n-3] = st[n-2], st[n-3], st[n-1]
			case opDeref, opDerefSize:
				size := uint8(8)
				if op == opDerefSize {
					size = c.u8()
					if size == 0 || size > 8 {
						return bad(fmt.Sprintf("deref_size of %d bytes", size))
					}
				}
				if !need(1) {
					return bad("deref on an empty stack")
				}
				v, ok := mem.ReadU64(st[n-1])
				if !ok {
					return 0, exprResult{fail: exprNoMem, addr: st[n-1]}
				}
				if size < 8 {
					v &= 1<<(8*uint(size)) - 1
				}
				st[n-1] = v
			case opAbs, opNeg, opNot:
				if !need(1) {
					return bad("unary operation on an empty stack")
				}
				v := int64(st[n-1])
				switch op {
				case opAbs:
					if v < 0 {
						v = -v
					}
				case opNeg:
					v = -v
				case opNot:
					v = ^v
				}
				st[n-1] = uint64(v)
			case opPlusUconst:
				if !need(1) {
					return bad("plus_uconst on an empty stack")
				}
				st[n-1] += c.uleb()
			case opAnd, opDiv, opMinus, opMod, opMul, opOr, opPlus, opShl, opShr, opShra, opXor,
				opEq, opGe, opGt, opLe, opLt, opNe:
				if !need(2) {
					return bad(fmt.Sprintf("binary operation %#x needs 2 operands", op))
				}
				b, a := st[n-1], st[n-2]
				n--
				var r uint64
				switch op {
				case opAnd:
					r = a & b
				case opOr:
					r = a | b
				case opXor:
					r = a ^ b
				case opPlus:
					r = a + b
				case opMinus:
					r = a - b
				case opMul:
					r = a * b
				case opDiv:
					if b == 0 {
						return bad("division by zero")
					}
					if int64(b) == -1 {
						r = -a
					} else {
						r = uint64(int64(a) / int64(b))
					}
				case opMod:
					if b == 0 {
						return bad("modulo by zero")
					}
					r = a % b
				case opShl:
					if b < 64 {
						r = a << b
					}
				case opShr:
					if b < 64 {
						r = a >> b
					}
				case opShra:
					r = uint64(int64(a) >> min(b, 63))
				case opEq:
					r = b2u(a == b)
				case opNe:
					r = b2u(a != b)
				case opGe:
					r = b2u(int64(a) >= int64(b))
				case opGt:
					r = b2u(int64(a) > int64(b))
				case opLe:
					r = b2u(int64(a) <= int64(b))
				case opLt:
					r = b2u(int64(a) < int64(b))
				}
				st[n-1] = r
			case opSkip, opBra:
				d := int(int16(c.u16()))
				take := true
				if op == opBra {
					if !need(1) {
						return bad("bra on an empty stack")
					}
					n--
					take = st[n] != 0
				}
				if take {
					to := c.off + d
					if to < 0 || to > len(c.b) {
						return bad("branch outside the expression")
					}
					c.off = to
				}
			case opNop:
			default:
				return bad(fmt.Sprintf("unsupported expression operation %#x", op))
			}
		}
		if c.bad {
			return bad("operand runs past the end of the expression")
		}
		if doPush {
			if !room {
				return bad("expression stack overflow")
			}
			st[n] = pushV
			n++
		}
	}
	if n == 0 {
		return bad("expression leaves an empty stack")
	}
	return st[n-1], exprResult{}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
