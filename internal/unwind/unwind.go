// Package unwind unwinds x86-64 Linux user stacks from a sample's registers and stack copy with DWARF call frame information.
//
// A Table holds one load object's CFI (.eh_frame, with .eh_frame_hdr's search table, and
// .debug_frame); Row evaluates it at an address. An Unwinder walks a sampled stack: for each
// frame it finds the module of the PC and evaluates the row there, computes the CFA and the
// caller's registers, and goes on until the return address rule is undefined (_start, clone3:
// the outermost frame), the return address is 0, or, in Go binaries, it reaches
// runtime.goexit, runtime.mstart or runtime.rt0_go. Every frame but the leaf is looked up at
// PC-1, inside its call instruction, since a return address may already belong to another row
// or, after a call that does not return, to the next function; except the frame below a signal
// frame (a CIE with the 'S' augmentation: glibc's __restore_rt, whose CFI restores every
// register from the signal's ucontext), whose PC is where the signal interrupted it. The
// handler thus shows as called from the trampoline, itself called from the interrupted
// function.
// Where no CFI covers a PC the unwinder falls back to the frame pointer, but only when RBP
// points into the stack at or above SP.
//
// A rule that finds a saved register below the frame's SP is taken to mean that the register
// was already restored: gcc describes `pop %rbx` in an epilogue by the CFA offset alone, without
// a restore rule, so in the last instructions of a function the CFI still points at the
// popped slot. The register then already holds the caller's value (and perf's copy starts at
// SP, so the slot could not be read anyway).
//
// # Deep stacks
//
// perf copies at most 65528 bytes of stack with a sample, so a deep recursion does not fit.
// When the unwind needs a word past the end of the copy, StackCopy can read on from the live
// process (process_vm_readv), but only if the copy's outermost VerifyBytes bytes are still
// identical in live memory. The reasoning: the stack above the sampled frames changes only when
// the thread returns through them; if the thread had returned past the copy's end since the
// sample, then the words there (return addresses, saved registers, locals of the frames being
// returned through) would almost surely differ now, since new calls overwrite them. While they
// are identical, the thread is still running below them, and the frames further out are the
// ones that were there when the sample was taken. The check is made once per sample, when the
// unwind first leaves the copy; if it fails, or the thread or process is gone, the unwind ends
// as Truncated. The live read must therefore happen soon after the sample, during collection.
//
// Unwinding needs no allocation per sample once an Unwinder's row cache and buffers are warm.
package unwind

import (
	"errors"
	"fmt"
	"math/bits"

	"er/internal/perfevent"
)

// Regs is the register state of the sampled frame, by DWARF register number (RegRAX...RegR15,
// and RegRIP for the program counter). Valid has a bit per register that is known.
type Regs struct {
	R     [NumRegs]uint64
	Valid uint32
}

// IP returns the program counter.
func (r *Regs) IP() uint64 { return r.R[RegRIP] }

// SP returns the stack pointer.
func (r *Regs) SP() uint64 { return r.R[RegRSP] }

// Set sets register reg (a DWARF number below NumRegs) and marks it valid.
func (r *Regs) Set(reg int, v uint64) {
	r.R[reg] = v
	r.Valid |= 1 << uint(reg)
}

// perfRegs maps DWARF register numbers to perf's x86-64 register numbers.
var perfRegs = [NumRegs]int{
	RegRAX: perfevent.RegAMD64AX, RegRDX: perfevent.RegAMD64DX, RegRCX: perfevent.RegAMD64CX,
	RegRBX: perfevent.RegAMD64BX, RegRSI: perfevent.RegAMD64SI, RegRDI: perfevent.RegAMD64DI,
	RegRBP: perfevent.RegAMD64BP, RegRSP: perfevent.RegAMD64SP,
	8: perfevent.RegAMD64R8, 9: perfevent.RegAMD64R8 + 1, 10: perfevent.RegAMD64R8 + 2, 11: perfevent.RegAMD64R8 + 3,
	12: perfevent.RegAMD64R8 + 4, 13: perfevent.RegAMD64R8 + 5, 14: perfevent.RegAMD64R8 + 6, 15: perfevent.RegAMD64R15,
	RegRIP: perfevent.RegAMD64IP,
}

// RegsFromSample converts perf's sampled user registers (perfabi.Sample.Regs, taken with
// register mask mask) to Regs. Registers the mask lacks are not valid.
func RegsFromSample(regs []uint64, mask uint64) Regs {
	var r Regs
	for d, p := range perfRegs {
		if i := perfevent.RegIndex(mask, p); i >= 0 && i < len(regs) {
			r.Set(d, regs[i])
		}
	}
	return r
}

// Status says how an unwind ended.
type Status int

const (
	// Complete: the outermost frame was reached (its return address rule is undefined, the
	// return address is 0, or it is a Go stack's first function).
	Complete Status = iota
	// Truncated: the stack copy (and live memory, if allowed) or MaxFrames ran out.
	Truncated
	// Failed: a PC has no module or CFI and no valid frame pointer, a rule needs a register or a
	// word that cannot be had, or the CFI is malformed.
	Failed
)

func (s Status) String() string {
	switch s {
	case Complete:
		return "complete"
	case Truncated:
		return "truncated"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// DefaultMaxFrames is the frame limit when Unwinder.MaxFrames is 0.
const DefaultMaxFrames = 65536

// cacheBits sizes the row cache of an Unwinder: 1<<cacheBits rows, direct-mapped by PC.
const cacheBits = 10

type rowEntry struct {
	t     *Table
	pc    uint64
	noCFI bool
	row   Row
}

// Unwinder unwinds sampled stacks. It keeps a cache of evaluated rows and is not safe for
// concurrent use: use one per goroutine.
type Unwinder struct {
	// Modules returns the module containing runtime address pc, or nil.
	Modules func(pc uint64) *Module
	// MaxFrames bounds the frames returned; 0 means DefaultMaxFrames.
	MaxFrames int
	// FPChain, when set, is the kernel's frame-pointer call chain of the sample's user stack, leaf
	// first, as perf records it. Where the stack switches (Go's runtime.systemstack runs a function
	// on the thread's g0 stack, while the goroutine's frames stay on its own stack, which the copy
	// does not hold), the unwind goes on along it: Go keeps the goroutine's frame pointer in rbp
	// across the switch, and the kernel walked the frame pointers when it took the sample.
	FPChain []uint64
	// FrameData, when set, is called for each frame whose caller was found by its frame pointer
	// (code without CFI: a JIT's), with the frame's PC, its frame pointer and the stack memory, and
	// returns frames with what else it wants to say of the frame appended (a JVM interpreter frame's
	// method: the stacker's). The words it appends are not PCs: they are never unwound.
	FrameData func(pc, bp uint64, mem Memory, frames []uint64) []uint64

	in      interp
	cache   []rowEntry
	noCache bool // for benchmarks: evaluate every row afresh
	scratch Row
}

// rowFor returns the row of table t at link-time address pc, from the cache when it can.
// It returns nil and ErrNoCFI when no FDE covers pc.
func (u *Unwinder) rowFor(t *Table, pc uint64) (*Row, error) {
	if u.noCache {
		s, f, err := t.find(pc)
		if err != nil {
			return nil, err
		}
		if err := u.in.run(s, &f, pc, &u.scratch); err != nil {
			return nil, err
		}
		return &u.scratch, nil
	}
	if u.cache == nil {
		u.cache = make([]rowEntry, 1<<cacheBits)
	}
	h := pc * 0x9e3779b97f4a7c15
	e := &u.cache[h>>(64-cacheBits)]
	if e.t == t && e.pc == pc {
		if e.noCFI {
			return nil, ErrNoCFI
		}
		return &e.row, nil
	}
	s, f, err := t.find(pc)
	if errors.Is(err, ErrNoCFI) {
		e.t, e.pc, e.noCFI = t, pc, true
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	e.t = nil
	if err := u.in.run(s, &f, pc, &e.row); err != nil {
		return nil, err
	}
	e.t, e.pc, e.noCFI = t, pc, false
	return &e.row, nil
}

var regNames = [NumRegs]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"}

// followFPChain ends an unwind that reached return address pc in a function that switched stacks
// (frames ends with it): the frames of the kernel's frame-pointer chain after pc are the caller's.
// The function that called the switch is not among them (it made no frame-pointer frame of its own
// between the switch's and its caller's); the chain ends at the outermost frame, or the unwind is
// truncated there.
func (u *Unwinder) followFPChain(frames []uint64, pc uint64, maxFrames int) ([]uint64, Status, string) {
	i := 1
	for i < len(u.FPChain) && u.FPChain[i] != pc {
		i++
	}
	if i >= len(u.FPChain) {
		return frames, Failed, fmt.Sprintf("pc %#x switched stacks, and the kernel's frame-pointer chain does not pass it", pc)
	}
	for _, ra := range u.FPChain[i+1:] {
		if len(frames) >= maxFrames {
			return frames, Truncated, fmt.Sprintf("more than %d frames", maxFrames)
		}
		frames = append(frames, ra)
	}
	last := frames[len(frames)-1]
	if mod := u.moduleOf(last - 1); mod != nil && mod.table() != nil && mod.Table.isRoot(last-1-mod.Bias) {
		return frames, Complete, ""
	}
	return frames, Truncated, fmt.Sprintf("the kernel's frame-pointer chain past the stack switch at %#x ends at %#x", pc, last)
}

// moduleOf is u.Modules(pc), or nil without it.
func (u *Unwinder) moduleOf(pc uint64) *Module {
	if u.Modules == nil {
		return nil
	}
	return u.Modules(pc)
}

func regName(r uint16) string {
	if r < NumRegs {
		return regNames[r]
	}
	return fmt.Sprintf("r%d", r)
}

// Unwind unwinds the stack whose leaf registers are r, reading stack memory from mem. It
// appends to frames[:0] and returns the call stack leaf first: the leaf's PC, then each
// caller's return address (the address after its call, or, for a function interrupted by a
// signal, the interrupted PC plus one). Every frame but the leaf is thus one past an address in
// the instruction that frame was executing: look up frame-1. The reason says why an unwind was
// Failed or Truncated.
func (u *Unwinder) Unwind(r Regs, mem Memory, frames []uint64) ([]uint64, Status, string) {
	frames = frames[:0]
	maxFrames := u.MaxFrames
	if maxFrames <= 0 {
		maxFrames = DefaultMaxFrames
	}
	if r.Valid&(1<<RegRIP) == 0 || r.Valid&(1<<RegRSP) == 0 {
		return frames, Failed, "the sample has no IP or SP"
	}
	cur := frameRegs{r: r.R, valid: r.Valid}
	var vals [NumRegs]uint64 // the caller's register values, being computed
	exact := true            // the leaf's PC, and a PC after a signal frame, are not return addresses
	// fail classifies a failed read of addr.
	fail := func(addr uint64, what string) (Status, string) {
		if b, ok := mem.(Bounded); ok && b.Beyond(addr) {
			return Truncated, fmt.Sprintf("the stack copy ends before %#x (%s)", addr, what)
		}
		return Failed, fmt.Sprintf("cannot read %#x (%s)", addr, what)
	}
	for {
		if len(frames) >= maxFrames {
			return frames, Truncated, fmt.Sprintf("more than %d frames", maxFrames)
		}
		pc := cur.r[RegRIP]
		if exact && len(frames) > 0 {
			// A PC interrupted by a signal is stored plus one, so that, as for return addresses,
			// frame-1 is an address in the instruction the frame was executing.
			frames = append(frames, pc+1)
		} else {
			frames = append(frames, pc)
		}
		look := pc
		if !exact {
			look = pc - 1
		}
		var mod *Module
		if u.Modules != nil {
			mod = u.Modules(look)
		}
		var row *Row
		if mod != nil && mod.table() != nil {
			lpc := look - mod.Bias
			if mod.Table.isRoot(lpc) {
				return frames, Complete, ""
			}
			if !exact && mod.Table.isSwitch(lpc) {
				return u.followFPChain(frames, pc, maxFrames)
			}
			var err error
			row, err = u.rowFor(mod.Table, lpc)
			if err != nil && !errors.Is(err, ErrNoCFI) {
				return frames, Failed, fmt.Sprintf("pc %#x in %s: %v", pc, mod.Path, err)
			}
		}
		if row == nil {
			// No CFI: follow the frame pointer, if it points into the stack above SP.
			bp, okBP := cur.get(RegRBP)
			sp := cur.r[RegRSP]
			if !okBP || bp < sp || bp%8 != 0 || bp+16 < bp {
				where := "no module"
				if mod != nil {
					where = "no CFI in " + mod.Path
				}
				return frames, Failed, fmt.Sprintf("pc %#x: %s, and rbp %#x is not a frame pointer", pc, where, bp)
			}
			savedBP, ok1 := mem.ReadU64(bp)
			ra, ok2 := mem.ReadU64(bp + 8)
			if !ok1 || !ok2 {
				st, why := fail(bp+8, "frame pointer")
				return frames, st, why
			}
			if u.FrameData != nil {
				frames = u.FrameData(look, bp, mem, frames)
			}
			cur.valid = 1<<RegRBP | 1<<RegRSP | 1<<RegRIP
			cur.r[RegRBP], cur.r[RegRSP], cur.r[RegRIP] = savedBP, bp+16, ra
			exact = false
			if ra == 0 {
				return frames, Complete, ""
			}
			continue
		}
		// The CFA.
		var cfa uint64
		switch row.CFA.Kind {
		case RuleRegister:
			v, ok := cur.get(row.CFA.Reg)
			if !ok {
				return frames, Failed, fmt.Sprintf("pc %#x: the CFA needs %s, which is unknown here", pc, regName(row.CFA.Reg))
			}
			cfa = v + uint64(row.CFA.Offset)
		case RuleValExpression:
			v, res := evalExpr(row.CFA.Expr, &cur, mem, false, 0, 0, false)
			if res.fail != exprOK {
				st, why := u.exprFailure(res, mem, pc, "CFA", fail)
				return frames, st, why
			}
			cfa = v
		default:
			return frames, Failed, fmt.Sprintf("pc %#x: no CFA rule", pc)
		}
		// The caller's registers: those without a rule keep their values.
		if row.set&(1<<row.RA) == 0 {
			return frames, Failed, fmt.Sprintf("pc %#x: the return address has no rule", pc)
		}
		// New values are gathered in vals (set: known, unset: unknown) and applied once all
		// rules were evaluated, since the rules read the callee's registers.
		var set, unset uint32
		for m := row.set; m != 0; m &= m - 1 {
			reg := bits.TrailingZeros32(m)
			rule := &row.Regs[reg]
			var v uint64
			switch rule.Kind {
			case RuleUndefined:
				unset |= 1 << uint(reg)
				continue
			case RuleOffset:
				addr := cfa + uint64(rule.Offset)
				if addr < cur.r[RegRSP] && reg != int(row.RA) {
					// Below SP: an epilogue popped the register (gcc emits no restore rule
					// for pops), so it already holds the caller's value. The copy starts at
					// SP in any case.
					continue
				}
				var ok bool
				if v, ok = mem.ReadU64(addr); !ok {
					st, why := fail(addr, "saved "+regNames[reg])
					return frames, st, why
				}
			case RuleValOffset:
				v = cfa + uint64(rule.Offset)
			case RuleRegister:
				var ok bool
				if v, ok = cur.get(rule.Reg); !ok {
					unset |= 1 << uint(reg)
					continue
				}
			case RuleExpression, RuleValExpression:
				var res exprResult
				v, res = evalExpr(rule.Expr, &cur, mem, true, cfa, cfa, true)
				if res.fail != exprOK {
					st, why := u.exprFailure(res, mem, pc, regNames[reg], fail)
					return frames, st, why
				}
				if rule.Kind == RuleExpression {
					addr := v
					var ok bool
					if v, ok = mem.ReadU64(addr); !ok {
						st, why := fail(addr, "saved "+regNames[reg])
						return frames, st, why
					}
				}
			default:
				return frames, Failed, fmt.Sprintf("pc %#x: bad rule kind %d", pc, rule.Kind)
			}
			vals[reg] = v
			set |= 1 << uint(reg)
		}
		if unset&(1<<row.RA) != 0 {
			return frames, Complete, "" // the return address is undefined: the outermost frame
		}
		ra := vals[row.RA]
		if ra == 0 {
			return frames, Complete, ""
		}
		// The CFA is the caller's SP unless a rule says otherwise.
		if (set|unset)&(1<<RegRSP) == 0 {
			vals[RegRSP] = cfa
			set |= 1 << RegRSP
		}
		if !row.Signal && (set&(1<<RegRSP) == 0 || vals[RegRSP] <= cur.r[RegRSP]) {
			return frames, Failed, fmt.Sprintf("pc %#x: the caller's stack pointer %#x is not above %#x", pc, vals[RegRSP], cur.r[RegRSP])
		}
		for m := set; m != 0; m &= m - 1 {
			reg := bits.TrailingZeros32(m)
			cur.r[reg] = vals[reg]
		}
		cur.valid = (cur.valid | set) &^ unset
		cur.r[RegRIP] = ra
		cur.valid |= 1 << RegRIP
		exact = row.Signal
	}
}

// exprFailure turns a failed expression into a status and reason.
func (u *Unwinder) exprFailure(res exprResult, mem Memory, pc uint64, what string,
	fail func(uint64, string) (Status, string)) (Status, string) {
	switch res.fail {
	case exprNoMem:
		return fail(res.addr, what+" expression")
	case exprNoReg:
		return Failed, fmt.Sprintf("pc %#x: the %s expression needs %s, which is unknown here", pc, what, regName(res.reg))
	}
	return Failed, fmt.Sprintf("pc %#x: the %s expression: %s", pc, what, res.msg)
}
