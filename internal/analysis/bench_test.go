package analysis

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"er/internal/experiment"
)

// bigExperiment makes nSamples clock samples over nStacks random stacks of 10 to 40 frames in an
// executable of nFuncs functions.
func bigExperiment(nSamples, nStacks, nFuncs int) *experiment.Data {
	r := rand.New(rand.NewPCG(3, 4))
	a := &experiment.Archive{Path: "/bin/big", Kind: "elf", Segments: []experiment.Segment{{Filesz: 1 << 30}}}
	for i := range nFuncs {
		a.Symbols = append(a.Symbols, experiment.Symbol{Name: fmt.Sprintf("func%05d", i), Addr: 0x1000 + uint64(i)*0x100, Size: 0xf0})
	}
	d := &experiment.Data{
		Dir:      "big.er",
		Log:      experiment.Log{Pid: 1},
		Mappings: []experiment.Mapping{{Pid: 1, Start: progBase, End: progBase + 1<<30, Path: "/bin/big", UnloadTime: -1}},
		Archives: map[string]*experiment.Archive{"/bin/big": a},
		Stacks:   []experiment.Stack{nil},
	}
	for range nStacks {
		st := make(experiment.Stack, 10+r.IntN(31))
		for i := range st {
			st[i] = progBase + 0x1000 + uint64(r.IntN(nFuncs))*0x100 + 0x20
		}
		d.Stacks = append(d.Stacks, st)
	}
	samples := make([]experiment.ClockSample, nSamples)
	for i := range samples {
		samples[i] = experiment.ClockSample{Time: int64(i) * 1000, Pid: 1, Tid: uint32(1 + i%8), Mode: experiment.Mode(1 + i%2),
			Period: 10007000, Stack: uint32(1 + r.IntN(nStacks))}
	}
	d.SetClock(samples)
	return d
}

// BenchmarkAnalyze1M analyses 1 million samples over 10,000 stacks and 20,000 functions, then
// computes the callers-callees index and the call tree.
func BenchmarkAnalyze1M(b *testing.B) {
	d := bigExperiment(1_000_000, 10_000, 20_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := Analyze([]*experiment.Data{d}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		p.edgeIndex()
		p.CallTree()
		if p.Events != 1_000_000 {
			b.Fatal(p.Events)
		}
	}
}

func TestBigExperimentShape(t *testing.T) {
	d := bigExperiment(20_000, 1000, 2000)
	p := analyze(t, d)
	if p.NumStacks() != 1000 || p.Total[0] != 20_000*10007000 {
		t.Errorf("%d stacks, total %d", p.NumStacks(), p.Total[0])
	}
	checkIdentities(t, p)
}

// BenchmarkProcMaps50k looks up two addresses in each of the 50,001 epochs of 50,000 mappings made
// one after another, kept (as a program that maps a file 50,000 times without unmapping it).
func BenchmarkProcMaps50k(b *testing.B) {
	ms := manyMappings(50_000, false)
	b.ReportAllocs()
	for b.Loop() {
		pm := newProcMaps(ms)
		for i := 1; i < len(ms); i++ {
			e := pm.epoch(int64(i) * 10)
			if pm.find(e, ms[i].Start) != ms[i] || pm.find(e, progBase) != ms[0] {
				b.Fatal("wrong mapping")
			}
		}
	}
}
