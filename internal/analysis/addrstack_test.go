package analysis

import (
	"fmt"
	"strings"
	"testing"

	"er/internal/experiment"
)

// frameString writes an address stack as "f+0xOFF ...", leaf first.
func frameString(p *Profile, as AddrStack) string {
	var parts []string
	for _, fr := range as.Frames {
		if off, ok := p.Offset(fr); ok {
			parts = append(parts, fmt.Sprintf("%s+%#x", p.FuncName(fr.Func, NameLong), off))
		} else {
			parts = append(parts, p.FuncName(fr.Func, NameLong))
		}
	}
	return strings.Join(parts, " ")
}

func TestAddrStacks(t *testing.T) {
	fk := heapFake()
	malloc := fk.addr["malloc"] + 0xc7
	leaky, main := fk.addr["leaky"], fk.addr["main"]
	add := func(st experiment.Stack) uint32 {
		fk.d.Stacks = append(fk.d.Stacks, st)
		return uint32(len(fk.d.Stacks) - 1)
	}
	// leaky called from two call sites of main; the same site in a second process; a stack
	// ending in a truncation mark.
	s1 := add(experiment.Stack{malloc, leaky + 9, main + 0x0e})
	s2 := add(experiment.Stack{malloc, leaky + 9, main + 0x18})
	s3 := add(experiment.Stack{malloc, leaky + 9, main + 0x0e, experiment.FrameTruncated})
	ev := func(pid uint32, addr, size uint64, st uint32) {
		fk.d.AddHeap([]experiment.HeapEvent{{Time: int64(fk.d.HeapTable().Len()), Pid: pid, Op: experiment.HeapMalloc, Addr: addr, Size: size, Stack: st}})
	}
	ev(progPid, 0x1000, 100, s1)
	ev(progPid, 0x2000, 200, s2)
	ev(progPid+1, 0x1000, 300, s1) // another process (it uses the target's mappings)
	ev(progPid, 0x3000, 5, s3)
	fk.d.AddHeap([]experiment.HeapEvent{{Time: 9, Pid: progPid, Op: experiment.HeapFree, Old: 0x2000}})
	p := analyze(t, fk.d)
	as := p.AddrStacks()
	if len(as) != 3 {
		t.Fatalf("%d stacks", len(as))
	}
	leaks := MetricIndex(p.Metrics, "heapleakbytes")
	allocs := MetricIndex(p.Metrics, "heapalloccnt")
	want := []struct {
		frames        string
		allocs, leaks int64
	}{
		{"malloc+0xc7 leaky+0x8 main+0xd", 2, 400},
		{"malloc+0xc7 leaky+0x8 main+0x17", 1, 0},
		{"malloc+0xc7 leaky+0x8 main+0xd <Truncated-stack>", 1, 5},
	}
	for i, w := range want {
		if got := frameString(p, as[i]); got != w.frames || as[i].Values[allocs] != w.allocs || as[i].Values[leaks] != w.leaks {
			t.Errorf("stack %d: %s allocs %d leaks %d, want %+v", i, got, as[i].Values[allocs], as[i].Values[leaks], w)
		}
	}
	if &p.AddrStacks()[0] != &as[0] {
		t.Error("computed twice")
	}
}
