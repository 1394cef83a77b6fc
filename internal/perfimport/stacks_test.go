package perfimport

import (
	"slices"
	"strings"
	"testing"

	"er/internal/experiment"
	"er/internal/perfabi"
	"er/internal/perfdata"
)

func TestStackFromCallchain(t *testing.T) {
	st := newStacker(newConverter(&perfdata.File{}, "", "x"))
	const kctx, uctx = 0xffffffffffffff80, 0xfffffffffffffe00
	s := &perfabi.Sample{Pid: 5, IP: 0xffffffff81000010,
		Callchain: []uint64{kctx, 0xffffffff81000010, 0xffffffff81000200, uctx, 0x401000, 0x401234}}
	if got := st.stack(s, 0, nil); !slices.Equal(got, experiment.Stack{0xffffffff81000010, 0xffffffff81000200, 0x401000, 0x401234}) {
		t.Errorf("stack %x", got)
	}
	// Without a call chain, the sample's IP alone.
	s = &perfabi.Sample{Pid: 5, IP: 0x401000}
	if got := st.stack(s, 0, nil); !slices.Equal(got, experiment.Stack{0x401000}) {
		t.Errorf("stack %x", got)
	}
	// User registers and a stack copy but no mapping of the PC: the unwind fails, and says so.
	const regsMask = 0xff0fff
	regs := make([]uint64, 20)
	regs[7], regs[8] = 0x7ffc0000, 0x401000 // SP, IP
	s = &perfabi.Sample{Pid: 5, IP: 0x401000, RegsABI: 2, Regs: regs,
		Stack: make([]byte, 64), StackDynSize: 64}
	got := st.stack(s, regsMask, nil)
	if len(got) != 2 || got[0] != 0x401000 || got[1] != experiment.FrameUnwindFailed {
		t.Errorf("unwind without mappings: %x", got)
	}
	text, bad := st.summary()
	if !bad || !strings.Contains(text, "0 of 1 complete, 0 truncated") || !strings.Contains(text, "1 failed: ") {
		t.Errorf("summary %q (%v)", text, bad)
	}
}
