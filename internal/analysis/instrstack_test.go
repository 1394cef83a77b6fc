package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"er/internal/debuginfo"
	"er/internal/experiment"
)

// locString writes an instruction with its lines, innermost first: "0x1118 hot x.c:7 caller1 x.c:11".
func locString(p *Profile, l InstrLoc) string {
	parts := []string{fmt.Sprintf("%#x", l.Addr)}
	for _, ln := range l.Lines {
		parts = append(parts, fmt.Sprintf("%s %s:%d", p.FuncName(ln.Func, NameLong), ln.File, ln.Line))
	}
	return strings.Join(parts, " ")
}

// checkInstrStacks: each raw stack's lines, read from the leaf, are its function stack reversed, and
// the raw stacks' values add up to the totals.
func checkInstrStacks(t *testing.T, p *Profile) {
	t.Helper()
	is := p.InstrStacks()
	sum := make([]int64, len(p.Metrics))
	for r, rs := range is.Stacks {
		var got []int32
		for _, l := range rs.Locs {
			for _, ln := range is.Locs[l].Lines {
				got = append(got, int32(ln.Func))
			}
		}
		fr, _ := p.Stack(rs.Stack)
		want := slices.Clone(fr)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Errorf("raw stack %d: lines %v, function stack reversed %v", r, got, want)
		}
		for m, v := range rs.Values {
			sum[m] += v
		}
	}
	if !slices.Equal(sum, p.Total) {
		t.Errorf("raw stacks add up to %v, total %v", sum, p.Total)
	}
}

// TestInstrStacks: the inline example's instructions with their inline chains, innermost first, the
// callers at their call instructions.
func TestInstrStacks(t *testing.T) {
	fk, opt := inlineExample()
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkInstrStacks(t, p)
	is := p.InstrStacks()
	var got []string
	for _, rs := range is.Stacks {
		var locs []string
		for _, l := range rs.Locs {
			locs = append(locs, locString(p, is.Locs[l]))
		}
		got = append(got, fmt.Sprintf("%d: %s", rs.Values[0], strings.Join(locs, " | ")))
	}
	want := []string{
		"2: 0x1118 hot x.c:7 caller1 x.c:11 | 0x101b main x.c:40",
		"1: 0x1104 caller1 x.c:10 | 0x101b main x.c:40",
		"3: 0x1214 hot x.c:6 caller2 x.c:21 | 0x103b main x.c:40",
		"4: 0x1228 helper x.c:30 caller2 x.c:22 | 0x103b main x.c:40",
		"5: 0x1308 helper x.c:31 | 0x105b main x.c:40",
		"6: 0x1390 helper :0 | 0x105b main x.c:40",
	}
	if !slices.Equal(got, want) {
		t.Errorf("instruction stacks:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(is.Locs) != 9 {
		t.Errorf("%d distinct instructions, want 9 (main's three calls, six leaves)", len(is.Locs))
	}

	// Folded: one line per instruction, at its own function's line.
	opt.FoldInlines = true
	p, err = Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkInstrStacks(t, p)
	is = p.InstrStacks()
	if got := locString(p, is.Locs[is.Stacks[0].Locs[0]]); got != "0x1118 caller1 x.c:11" {
		t.Errorf("folded: %s", got)
	}

	// An unnamed frame (a block without a function) is code of the function around it, at its line.
	fk = newFake("main", "f")
	d := &fakeDebug{}
	d.add(0x1000, 0x1100, frame("main", "y.c", 2))
	d.add(0x1100, 0x1140, debuginfo.Frame{File: "y.c", Line: 3, Inlined: true}, inlined("g", "y.c", 5), frame("f", "y.c", 9))
	fk.rawSample(1, at{"main", 0x20}, at{"f", 0x10})
	p, err = Analyze([]*experiment.Data{fk.d}, withFiles(map[string]*fakeDebug{"/bin/prog": d}, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkInstrStacks(t, p)
	is = p.InstrStacks()
	if got := locString(p, is.Locs[is.Stacks[0].Locs[0]]); got != "0x1110 g y.c:3 f y.c:9" {
		t.Errorf("unnamed frame: %s", got)
	}
}

// TestPropertiesInstrStacks: on random profiles with inlined functions (named and unnamed, merging
// with others), the instruction stacks' lines are the function stacks.
func TestPropertiesInstrStacks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 30 {
		p := randomInlineProfile(t, r, 2+i%5, 1+r.IntN(60), i%3 == 0)
		checkInstrStacks(t, p)
		if t.Failed() {
			t.Fatalf("failed on random profile %d", i)
		}
	}
}

// TestByThread: the values of each thread at each raw stack, adding up to the raw stacks', for the
// whole profile and for one refiltered to some events.
func TestByThread(t *testing.T) {
	fk, opt := inlineExample()
	for i := range fk.d.ClockTable().Len() { // samples 0, 2, 4 on thread 101, the others on the main thread
		if i%2 == 0 {
			fk.d.ClockTable().Tid[i] = progPid + 1
		}
		fk.d.ClockTable().Time[i] = int64(i + 1)
	}
	again := experiment.ClockAt(fk.d.ClockTable(), 0) // the first stack again, on the main thread
	again.Tid, again.Period, again.Time = progPid, 7, 7
	fk.d.AppendClock(again)
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	tv, err := p.ByThread()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range tv {
		got = append(got, fmt.Sprintf("raw %d exp %d pid %d tid %d thread %d: %d", v.Raw, v.Exp, v.Pid, v.Tid, v.Thread, v.Values[0]))
	}
	want := []string{
		"raw 0 exp 0 pid 100 tid 101 thread 2: 2",
		"raw 1 exp 0 pid 100 tid 100 thread 1: 1",
		"raw 2 exp 0 pid 100 tid 101 thread 2: 3",
		"raw 3 exp 0 pid 100 tid 100 thread 1: 4",
		"raw 4 exp 0 pid 100 tid 101 thread 2: 5",
		"raw 5 exp 0 pid 100 tid 100 thread 1: 6",
		"raw 0 exp 0 pid 100 tid 100 thread 1: 7",
	}
	if !slices.Equal(got, want) {
		t.Errorf("by thread:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Refiltered to the events after time 2: raw stacks numbered as that profile numbers them.
	q, err := p.Refilter(func(ev *EventInfo) bool { return ev.Time > 2 }, false)
	if err != nil {
		t.Fatal(err)
	}
	tv, err = q.ByThread()
	if err != nil {
		t.Fatal(err)
	}
	is := q.InstrStacks()
	sums := make([]int64, len(is.Stacks))
	for _, v := range tv {
		sums[v.Raw] += v.Values[0]
	}
	for r, rs := range is.Stacks {
		if sums[r] != rs.Values[0] {
			t.Errorf("refiltered raw stack %d: threads add up to %d, its value %d", r, sums[r], rs.Values[0])
		}
	}
	if len(tv) != 5 || q.Total[0] != 3+4+5+6+7 {
		t.Errorf("refiltered: %d thread values, total %d", len(tv), q.Total[0])
	}
}
