package analysis

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"er/internal/experiment"
)

func TestInstructionStarts(t *testing.T) {
	// push %rbp; mov %rsp,%rbp; call rel32; (bad byte 0x06 in 64-bit mode); ret
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0xe8, 1, 2, 3, 4, 0x06, 0xc3}
	got := instructionStarts(code, 0x1000)
	want := []uint64{0x1000, 0x1001, 0x1004, 0x1009, 0x100a}
	if !slices.Equal(got, want) {
		t.Errorf("starts %#x, want %#x", got, want)
	}
}

// TestInstructionStartsAhead: with 300 callers, decoded several at once before the PCs are
// counted (instructionStartsAhead), each caller's instruction is its call, at offset 0x1b (27
// nops, then call rel32 ending at the return address, +0x20), with the leaf's time inclusive.
func TestInstructionStartsAhead(t *testing.T) {
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("caller%d", i))
	}
	fk := newFake(append([]string{"leaf"}, names...)...)
	for _, n := range names {
		fk.sample(1, n, "leaf")
	}
	size := 0x1000 + uint64(len(names)+2)*symSpan
	code := bytes.Repeat([]byte{0x90}, int(size))
	for i := range names {
		at := 0x1000 + uint64(i+1)*symSpan + 0x1b
		copy(code[at:], []byte{0xe8, 0, 0, 0, 0})
	}
	p, err := Analyze([]*experiment.Data{fk.d}, withFiles(nil, map[string][]byte{"/bin/prog": code}))
	if err != nil {
		t.Fatal(err)
	}
	pt := p.PCs()
	for _, n := range names {
		f := fn(t, p, n)
		j := pt.Find(p.Functions[f].Object, f, p.Functions[f].Addr+0x1b)
		if j < 0 || pt.Inclusive(j)[0] != 1 {
			t.Errorf("%s: no instruction at its call (+0x1b) with the leaf's sample", n)
		}
	}
}

// TestLinesWithoutDebugInfo: without files, every function has one line, its instructions
// without line numbers, and a caller's instruction is its return address minus one.
func TestLinesWithoutDebugInfo(t *testing.T) {
	p := analyze(t, seedExample().d)
	lt := p.Lines()
	if len(lt.Lines) != 7 || len(lt.Files()) != 0 {
		t.Errorf("%d lines, files %q", len(lt.Lines), lt.Files())
	}
	c := fn(t, p, "C")
	i := lt.Find(SourceLine{Func: c})
	if i < 0 || lt.Exclusive(i)[0] != 5 || lt.Inclusive(i)[0] != 25 {
		t.Errorf("C's line: %d", i)
	}
	pt := p.PCs()
	// C is called at A+0x1f and B+0x1f (return addresses +0x20), and sampled at C+4.
	for _, k := range []struct {
		fn         string
		off        uint64
		excl, incl int64
	}{{"C", 0x1304, 5, 5}, {"A", 0x111f, 0, 10}, {"B", 0x121f, 0, 15}, {"C", 0x131f, 0, 20}, {"main", 0x101f, 0, 30}} {
		f := fn(t, p, k.fn)
		j := pt.Find(p.Functions[f].Object, f, k.off)
		if j < 0 {
			t.Errorf("no instruction %s at %#x", k.fn, k.off)
			continue
		}
		if e, i := pt.Exclusive(j)[0], pt.Inclusive(j)[0]; e != k.excl || i != k.incl || pt.PCs[j].Frames != nil {
			t.Errorf("%s at %#x: exclusive %d inclusive %d, want %d %d", k.fn, k.off, e, i, k.excl, k.incl)
		}
	}
	checkLinesPCs(t, p)
}

// TestLinesRecursion: a line on the stack several times counts once in its inclusive metrics.
func TestLinesRecursion(t *testing.T) {
	fk := newFake("main", "a")
	d := &fakeDebug{}
	d.add(0x1000, 0x1100, frame("main", "r.c", 1))
	d.add(0x1100, 0x1200, frame("a", "r.c", 5))
	fk.rawSample(10, at{"main", 0x20}, at{"a", 0x20}, at{"a", 0x20}, at{"a", 0x4})
	fk.rawSample(3, at{"main", 0x20}, at{"a", 0x4})
	p, err := Analyze([]*experiment.Data{fk.d}, withFiles(map[string]*fakeDebug{"/bin/prog": d}, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, p.Lines(), map[string][2]int64{"a r.c:5": {13, 13}, "main r.c:1": {0, 13}})
	if e, i, ok := p.Lines().FileLine("r.c", 5); !ok || e[0] != 13 || i[0] != 13 {
		t.Errorf("r.c:5 %v %v", e, i)
	}
	pt := p.PCs()
	a := fn(t, p, "a")
	// Without code, a caller's instruction is its return address minus one.
	if j := pt.Find(p.Functions[a].Object, a, 0x111f); j < 0 || pt.Inclusive(j)[0] != 10 || pt.Exclusive(j)[0] != 0 {
		t.Errorf("a+0x1f: %d", j)
	}
	checkLinesPCs(t, p)
}
