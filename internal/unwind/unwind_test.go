package unwind

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"er/internal/perfevent"
)

// synthetic is a made-up load object at [0x1000, 0x6000) (bias 0) with these functions:
//
//	L [0x1000, 0x1100): a leaf; CFA rsp+8
//	M [0x2000, 0x2100): CFA rsp+8 at its first instruction, then rsp+32 with rbx at CFA-16
//	R [0x3000, 0x3100): a root; CFA rsp+16, return address undefined
//	S [0x3fff, 0x4010): a signal trampoline ('S'); everything restored from a "ucontext" at rsp
//	B [0x4100, 0x4200): CFA rbx+16 (needs rbx)
//	Z [0x4200, 0x4300): CFA rsp+0 (a broken rule: the caller's SP is not above)
//	E [0x4300, 0x4400): an epilogue after pop %rbx: CFA rsp+8, rbx "saved" at CFA-16, below SP
//	no CFI at [0x5000, 0x6000): frame pointers
func synthetic(t testing.TB) *Unwinder {
	e := &ehBuilder{addr: 0x100000}
	c := zR(e)
	e.fde(c, 0x1000, 0x100, nil)
	e.fde(c, 0x2000, 0x100, nil, cfaAdvanceLoc|4, cfaDefCFAOffset, 32, cfaOffset|3, 2)
	e.fde(c, 0x3000, 0x100, nil, cfaDefCFAOffset, 16, cfaUndefined, 16)
	// The ucontext: saved rsp at rsp+8, rip at rsp+16, rbp at rsp+24.
	s := e.cie("zRS", []byte{pePCRel | peSdata4},
		cfaDefCFAExpression, 3, 0x77, 8, 0x06, // CFA = *(rsp+8)
		cfaExpression, 16, 2, 0x77, 16, // rip at rsp+16
		cfaExpression, 6, 2, 0x77, 24, // rbp at rsp+24
	)
	e.fde(s, 0x3fff, 0x11, nil)
	e.fde(c, 0x4100, 0x100, nil, cfaDefCFA, 3, 16)
	e.fde(c, 0x4200, 0x100, nil, cfaDefCFAOffset, 0)
	e.fde(c, 0x4300, 0x100, nil, cfaOffset|3, 2)
	tab, err := newTable("synthetic", append(e.b, 0, 0, 0, 0), e.addr, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &Module{Start: 0x1000, End: 0x6000, Path: "synthetic", Table: tab}
	return &Unwinder{Modules: func(pc uint64) *Module {
		if pc >= m.Start && pc < m.End {
			return m
		}
		return nil
	}}
}

// stackOf makes a stack copy at sp of the given words.
func stackOf(sp uint64, words ...uint64) *StackCopy {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return &StackCopy{SP: sp, Data: b}
}

func regs(ip, sp uint64, more ...uint64) Regs {
	var r Regs
	r.Set(RegRIP, ip)
	r.Set(RegRSP, sp)
	for i := 0; i+1 < len(more); i += 2 {
		r.Set(int(more[i]), more[i+1])
	}
	return r
}

func TestUnwindSynthetic(t *testing.T) {
	u := synthetic(t)
	tests := []struct {
		name   string
		regs   Regs
		stack  *StackCopy
		frames []uint64
		status Status
		reason string
	}{
		{"L <- M <- R", regs(0x1010, 0x7000),
			// L: RA at 0x7000. M (CFA 0x7008+32 = 0x7028): rbx at 0x7018, RA at 0x7020. R: CFA 0x7038.
			stackOf(0x7000, 0x2051, 0, 0, 0xbbb, 0x3021, 0, 0),
			[]uint64{0x1010, 0x2051, 0x3021}, Complete, ""},
		{"return address 0 ends the stack", regs(0x1010, 0x7000), stackOf(0x7000, 0),
			[]uint64{0x1010}, Complete, ""},
		{"copy ends", regs(0x1010, 0x7000), stackOf(0x7000, 0x2051, 0, 0),
			[]uint64{0x1010, 0x2051}, Truncated, "stack copy ends"},
		{"no module, no frame pointer", regs(0x9000, 0x7000), stackOf(0x7000, 0),
			[]uint64{0x9000}, Failed, "no module"},
		{"frame pointer where there is no CFI", regs(0x5010, 0x7000, RegRBP, 0x7010),
			stackOf(0x7000, 0, 0, 0x0, 0x3021, 0, 0),
			[]uint64{0x5010, 0x3021}, Complete, ""},
		{"frame pointer below SP", regs(0x5010, 0x7000, RegRBP, 0x6000), stackOf(0x7000, 0),
			[]uint64{0x5010}, Failed, "not a frame pointer"},
		{"CFA needs an unknown register", regs(0x4110, 0x7000), stackOf(0x7000, 0),
			[]uint64{0x4110}, Failed, "needs rbx"},
		{"CFA from rbx", regs(0x4110, 0x7000, RegRBX, 0x7008), stackOf(0x7000, 0, 0, 0x3021, 0, 0),
			[]uint64{0x4110, 0x3021}, Complete, ""},
		{"SP must increase", regs(0x4210, 0x7008), stackOf(0x7000, 0x1010, 0),
			[]uint64{0x4210}, Failed, "not above"},
		// In E's epilogue rbx was popped already: its rule points below SP and its value is
		// the caller's, which B's CFA needs.
		{"epilogue after a pop", regs(0x4310, 0x7000, RegRBX, 0x7010),
			stackOf(0x7000, 0x4151, 0, 0, 0x3021, 0, 0),
			[]uint64{0x4310, 0x4151, 0x3021}, Complete, ""},
		{"no SP", Regs{R: [NumRegs]uint64{RegRIP: 0x1010}, Valid: 1 << RegRIP}, stackOf(0x7000, 0),
			nil, Failed, "no IP or SP"},
		// A signal handler L returns to the trampoline S (at S's start + 1, found through pc-1);
		// S restores the interrupted M, at its very first instruction 0x2000 (found at pc, not
		// pc-1, which has no CFI), where M's CFA is rsp+8 and its RA at 0x7050. The interrupted PC is
		// returned plus one, like a return address: frame-1 is in the interrupted instruction.
		{"signal frame", regs(0x1010, 0x7000),
			stackOf(0x7000, 0x4000, 0x0, 0x7048, 0x2000, 0x1, 0, 0, 0, 0, 0x3021, 0, 0),
			[]uint64{0x1010, 0x4000, 0x2001, 0x3021}, Complete, ""},
	}
	for _, tt := range tests {
		frames, st, why := u.Unwind(tt.regs, tt.stack, nil)
		if !slices.Equal(frames, tt.frames) || st != tt.status || !strings.Contains(why, tt.reason) || (tt.reason == "") != (why == "") {
			t.Errorf("%s: Unwind = %x, %v, %q; want %x, %v, %q", tt.name, frames, st, why, tt.frames, tt.status, tt.reason)
		}
	}
}

func TestUnwindMaxFrames(t *testing.T) {
	u := synthetic(t)
	// M calling M calling M ...: each frame is 32 bytes, its RA at CFA-8.
	var words []uint64
	words = append(words, 0x2051) // L's return address into M
	for range 10 {
		words = append(words, 0, 0, 0xbbb, 0x2051)
	}
	for _, max := range []int{1, 3, 8} {
		u.MaxFrames = max
		frames, st, why := u.Unwind(regs(0x1010, 0x7000), stackOf(0x7000, words...), nil)
		if len(frames) != max || st != Truncated || !strings.Contains(why, "frames") {
			t.Errorf("MaxFrames %d: %d frames, %v %q", max, len(frames), st, why)
		}
	}
	// A stack of exactly MaxFrames frames is complete.
	u.MaxFrames = 3
	frames, st, _ := u.Unwind(regs(0x1010, 0x7000), stackOf(0x7000, 0x2051, 0, 0, 0xbbb, 0x3021, 0, 0), nil)
	if len(frames) != 3 || st != Complete {
		t.Errorf("3 frames with MaxFrames 3: %x %v", frames, st)
	}
}

func TestUnwindReusesFrames(t *testing.T) {
	u := synthetic(t)
	buf := make([]uint64, 0, 16)
	stack := stackOf(0x7000, 0x2051, 0, 0, 0xbbb, 0x3021, 0, 0)
	frames, _, _ := u.Unwind(regs(0x1010, 0x7000), stack, buf)
	if &frames[0] != &buf[:1][0] {
		t.Error("Unwind did not append to the frames it was given")
	}
	// Cached rows give the same results as fresh ones.
	again, _, _ := u.Unwind(regs(0x1010, 0x7000), stack, nil)
	u.noCache = true
	fresh, _, _ := u.Unwind(regs(0x1010, 0x7000), stack, nil)
	if !slices.Equal(again, fresh) || !slices.Equal(again, []uint64{0x1010, 0x2051, 0x3021}) {
		t.Errorf("cached %x, fresh %x", again, fresh)
	}
}

// FuzzUnwind unwinds made-up registers and stacks through the synthetic object: any status,
// never a panic, and at most MaxFrames frames.
func FuzzUnwind(f *testing.F) {
	f.Add(uint64(0x1010), uint64(0x7000), uint64(0x7010), []byte{0x51, 0x20, 0, 0, 0, 0, 0, 0})
	f.Add(uint64(0x3ff0), uint64(0x7000), uint64(0), make([]byte, 64))
	f.Add(uint64(0x5010), uint64(0x7000), uint64(0x7000), make([]byte, 64))
	u := synthetic(f)
	u.MaxFrames = 100
	f.Fuzz(func(t *testing.T, ip, sp, bp uint64, stack []byte) {
		frames, st, why := u.Unwind(regs(ip, sp, RegRBP, bp, RegRBX, bp), &StackCopy{SP: sp, Data: stack}, nil)
		if len(frames) > 100 || (st != Complete) != (why != "") {
			t.Errorf("%d frames, %v %q", len(frames), st, why)
		}
	})
}

func TestRegsFromSample(t *testing.T) {
	// perf's order for RegsAMD64All: ax bx cx dx si di bp sp ip flags cs ss r8..r15.
	mask := uint64(perfevent.RegsAMD64All)
	vals := []uint64{0xa, 0xb, 0xc, 0xd, 0x51, 0xd1, 0xb9, 0x59, 0x19, 0xf1, 0x33, 0x2b,
		0x8, 0x9, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15}
	r := RegsFromSample(vals, mask)
	want := [NumRegs]uint64{0xa, 0xd, 0xc, 0xb, 0x51, 0xd1, 0xb9, 0x59, 0x8, 0x9, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x19}
	if r.R != want || r.Valid != 1<<NumRegs-1 || r.IP() != 0x19 || r.SP() != 0x59 {
		t.Errorf("RegsFromSample = %x valid %#x, want %x", r.R, r.Valid, want)
	}
	// Only IP and SP sampled.
	mask = 1<<perfevent.RegAMD64IP | 1<<perfevent.RegAMD64SP
	r = RegsFromSample([]uint64{0x70, 0x80}, mask)
	if r.SP() != 0x70 || r.IP() != 0x80 || r.Valid != 1<<RegRSP|1<<RegRIP {
		t.Errorf("IP and SP only: %x valid %#x", r.R, r.Valid)
	}
	if r := RegsFromSample(nil, mask); r.Valid != 0 {
		t.Errorf("no registers: valid %#x", r.Valid)
	}
}

func TestStatusString(t *testing.T) {
	if Complete.String() != "complete" || Truncated.String() != "truncated" || Failed.String() != "failed" || Status(9).String() != "Status(9)" {
		t.Error("Status.String")
	}
}

// recorded profiles a program once and keeps its samples, for the benchmarks.
func recorded(b *testing.B, name string, args ...string) *runResult {
	b.Helper()
	return profile(b, runCfg{stack: 65528, keep: true}, program(b, name), args...)
}

// benchUnwind unwinds the kept samples round-robin and reports ns per frame and per sample.
func benchUnwind(b *testing.B, res *runResult, u *Unwinder, live func(uint64, []byte) bool) {
	stack := &StackCopy{Live: live}
	var frames []uint64
	n, i := 0, 0
	for _, k := range res.kept { // warm the row cache, as in a long collection
		stack.Reset(k.sp, k.data)
		frames, _, _ = u.Unwind(k.regs, stack, frames)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		k := &res.kept[i%len(res.kept)]
		i++
		stack.Reset(k.sp, k.data)
		frames, _, _ = u.Unwind(k.regs, stack, frames)
		n += len(frames)
	}
	el := time.Since(start)
	b.ReportMetric(float64(el.Nanoseconds())/float64(max(n, 1)), "ns/frame")
	b.ReportMetric(float64(n)/float64(max(i, 1)), "frames/sample")
}

func BenchmarkUnwind(b *testing.B) {
	for _, p := range []struct{ name, prog string }{{"chain", "chain"}, {"qsort", "qsort"}, {"signal", "signal"}} {
		res := recorded(b, p.prog, "0.2")
		b.Run(p.name, func(b *testing.B) {
			benchUnwind(b, res, &Unwinder{Modules: res.space.Find}, nil)
		})
		b.Run(p.name+"-nocache", func(b *testing.B) {
			benchUnwind(b, res, &Unwinder{Modules: res.space.Find, noCache: true}, nil)
		})
	}
	// A 10,000-frame recursion, from the copy only (truncated) and continued live.
	b.Run("recurse-copy", func(b *testing.B) {
		res := recorded(b, "recurse", "0.1", "10000", "wait")
		benchUnwind(b, res, &Unwinder{Modules: res.space.Find}, nil)
	})
	b.Run("recurse-live", func(b *testing.B) {
		profile(b, runCfg{stack: 65528, keep: true, atDone: func(res *runResult, pid int) {
			benchUnwind(b, res, &Unwinder{Modules: res.space.Find}, LiveReader(pid))
		}}, program(b, "recurse"), "0.1", "10000", "wait")
	})
}

func TestUnwindNoAlloc(t *testing.T) {
	// Once the row cache is warm, unwinding a sample allocates nothing.
	res := profile(t, runCfg{stack: 65528, keep: true}, program(t, "qsort"), "0.1")
	u := &Unwinder{Modules: res.space.Find}
	stack := &StackCopy{}
	frames := make([]uint64, 0, 64)
	for _, k := range res.kept {
		stack.Reset(k.sp, k.data)
		frames, _, _ = u.Unwind(k.regs, stack, frames)
	}
	i := 0
	allocs := testing.AllocsPerRun(len(res.kept), func() {
		k := &res.kept[i%len(res.kept)]
		i++
		stack.Reset(k.sp, k.data)
		var st Status
		frames, st, _ = u.Unwind(k.regs, stack, frames)
		if st != Complete {
			t.Fatalf("sample %d: %v", i, st)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per sample, want 0", allocs)
	}
}

func TestFollowFPChain(t *testing.T) {
	// The kernel's chain: the leaf, the return address into systemstack, then the goroutine's.
	u := &Unwinder{FPChain: []uint64{0x1000, 0x2008, 0x3010, 0x4020}}
	frames, st, why := u.followFPChain([]uint64{0x1000, 0x2008}, 0x2008, 100)
	if !slices.Equal(frames, []uint64{0x1000, 0x2008, 0x3010, 0x4020}) || st != Truncated {
		t.Errorf("followFPChain = %#x, %v (%s); want the chain's frames, truncated (no module says the last is a root)", frames, st, why)
	}
	if _, st, why := u.followFPChain([]uint64{0x1000, 0x2999}, 0x2999, 100); st != Failed || !strings.Contains(why, "does not pass") {
		t.Errorf("a return address not in the chain: %v (%s)", st, why)
	}
	if frames, st, _ := u.followFPChain([]uint64{0x1000, 0x2008}, 0x2008, 3); st != Truncated || len(frames) != 3 {
		t.Errorf("with 3 frames at most: %d frames, %v", len(frames), st)
	}
}
