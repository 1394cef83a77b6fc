package unwind

import (
	"strings"
	"testing"
)

// mapMemory is a Memory of a few words.
type mapMemory map[uint64]uint64

func (m mapMemory) ReadU64(addr uint64) (uint64, bool) {
	v, ok := m[addr]
	return v, ok
}

func TestExprPLT(t *testing.T) {
	// The CFA of a PLT entry: rsp+8, plus 8 once the entry's push has run (rip&15 >= 11).
	plt := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	for rip, want := range map[uint64]uint64{0x1020: 0x7008, 0x102a: 0x7008, 0x102b: 0x7010, 0x102f: 0x7010} {
		var regs frameRegs
		regs.r[RegRSP], regs.r[RegRIP], regs.valid = 0x7000, rip, 1<<RegRSP|1<<RegRIP
		got, res := evalExpr(plt, &regs, mapMemory{}, false, 0, 0, false)
		if res.fail != exprOK || got != want {
			t.Errorf("rip %#x: CFA = %#x (%+v), want %#x", rip, got, res, want)
		}
	}
}

func TestExprOps(t *testing.T) {
	var regs frameRegs
	regs.r[RegRBX], regs.r[RegRSP], regs.valid = 100, 0x8000, 1<<RegRBX|1<<RegRSP
	mem := mapMemory{0x8010: 0x1122334455667788}
	tests := []struct {
		name string
		expr []byte
		push bool
		want uint64
	}{
		{"lit", []byte{0x35}, false, 5},
		{"pushed CFA", []byte{0x23, 8}, true, 0x9008}, // plus_uconst 8 on the pushed 0x9000
		{"const1u const1s", []byte{0x08, 200, 0x09, 0xfe, 0x22}, false, 198},
		{"const2u const2s", []byte{0x0a, 0x00, 0x01, 0x0b, 0xff, 0xff, 0x22}, false, 255},
		{"const4u const4s", []byte{0x0c, 1, 0, 0, 0, 0x0d, 0xfe, 0xff, 0xff, 0xff, 0x22}, false, ^uint64(0)},
		{"const8u", cat([]byte{0x0e}, u64(1<<40)), false, 1 << 40},
		{"constu consts", cat([]byte{0x10}, uleb(1000), []byte{0x11}, sleb(-1), []byte{0x22}), false, 999},
		{"addr", cat([]byte{0x03}, u64(0xdead)), false, 0xdead},
		{"breg", cat([]byte{0x73}, sleb(-10)), false, 90},
		{"bregx", cat([]byte{0x92}, uleb(3), sleb(5)), false, 105},
		{"deref", cat([]byte{0x77}, sleb(0x10), []byte{0x06}), false, 0x1122334455667788},
		{"deref_size 2", cat([]byte{0x77}, sleb(0x10), []byte{0x94, 2}), false, 0x7788},
		{"dup plus", []byte{0x33, 0x12, 0x22}, false, 6},
		{"drop", []byte{0x31, 0x32, 0x13}, false, 1},
		{"over", []byte{0x31, 0x32, 0x14}, false, 1},
		{"pick", []byte{0x31, 0x32, 0x33, 0x15, 2}, false, 1},
		{"swap minus", []byte{0x31, 0x35, 0x16, 0x1c}, false, 4},
		{"rot", []byte{0x31, 0x32, 0x33, 0x17, 0x13, 0x13}, false, 3},
		{"abs neg", []byte{0x35, 0x1f, 0x19}, false, 5},
		{"not", []byte{0x30, 0x20}, false, ^uint64(0)},
		{"div signed", []byte{0x37, 0x1f, 0x32, 0x1b}, false, uint64(1<<64 - 3)},
		{"mod mul", []byte{0x37, 0x33, 0x1d, 0x35, 0x1e}, false, 5},
		{"or xor and", []byte{0x31, 0x32, 0x21, 0x36, 0x27, 0x37, 0x1a}, false, 5},
		{"shl shr shra", []byte{0x31, 0x3f, 0x24, 0x32, 0x25, 0x1f, 0x31, 0x26}, false, uint64(1<<64 - 4096)},
		{"comparisons", []byte{0x31, 0x32, 0x2d, 0x31, 0x32, 0x2b, 0x22, 0x33, 0x33, 0x29, 0x22, 0x33, 0x34, 0x2e, 0x22, 0x33, 0x33, 0x2c, 0x22}, false, 4},
		{"skip", []byte{0x31, 0x2f, 1, 0, 0x32, 0x96}, false, 1},
		{"bra loop: count to 5", []byte{0x30, 0x23, 1, 0x12, 0x35, 0x2e, 0x28, 0xf8, 0xff}, false, 5},
	}
	for _, tt := range tests {
		got, res := evalExpr(tt.expr, &regs, mem, tt.push, 0x9000, 0, false)
		if res.fail != exprOK || got != tt.want {
			t.Errorf("%s: % x = %#x (%+v), want %#x", tt.name, tt.expr, got, res, tt.want)
		}
	}
}

func TestExprFailures(t *testing.T) {
	var regs frameRegs
	regs.r[RegRSP], regs.valid = 0x8000, 1<<RegRSP
	tests := []struct {
		name string
		expr []byte
		fail exprFail
		msg  string
	}{
		{"unknown register", []byte{0x76, 0}, exprNoReg, ""},
		{"unreadable memory", []byte{0x77, 0, 0x06}, exprNoMem, ""},
		{"empty result", []byte{0x96}, exprBad, "empty stack"},
		{"drop on empty", []byte{0x13}, exprBad, "empty stack"},
		{"binary on one", []byte{0x31, 0x22}, exprBad, "needs 2 operands"},
		{"division by zero", []byte{0x31, 0x30, 0x1b}, exprBad, "division by zero"},
		{"branch out", []byte{0x31, 0x28, 0x40, 0}, exprBad, "outside the expression"},
		{"endless loop", []byte{0x2f, 0xfd, 0xff}, exprBad, "more than"},
		{"truncated operand", []byte{0x0e, 1, 2}, exprBad, "past the end"},
		{"unsupported op", []byte{0x50}, exprBad, "unsupported"},
		{"call_frame_cfa in the CFA", []byte{0x9c}, exprBad, "call_frame_cfa"},
		{"deref_size 9", []byte{0x31, 0x94, 9}, exprBad, "deref_size"},
	}
	for _, tt := range tests {
		_, res := evalExpr(tt.expr, &regs, mapMemory{}, false, 0, 0, false)
		if res.fail != tt.fail || !strings.Contains(res.msg, tt.msg) {
			t.Errorf("%s: %+v, want failure %d with %q", tt.name, res, tt.fail, tt.msg)
		}
	}
	overflow := make([]byte, exprStackSize+1)
	for i := range overflow {
		overflow[i] = 0x31
	}
	if _, res := evalExpr(overflow, &regs, mapMemory{}, false, 0, 0, false); res.fail != exprBad || !strings.Contains(res.msg, "overflow") {
		t.Errorf("stack overflow: %+v", res)
	}
	if v, res := evalExpr([]byte{0x9c}, &regs, mapMemory{}, false, 0, 0x1234, true); res.fail != exprOK || v != 0x1234 {
		t.Errorf("call_frame_cfa = %#x %+v, want 0x1234", v, res)
	}
}
