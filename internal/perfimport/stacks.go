package perfimport

import (
	"fmt"
	"sort"
	"strings"

	"er/internal/experiment"
	"er/internal/perfdata"
	"er/internal/perfevent"
	"er/internal/unwind"
)

// stacker turns a sample into an er stack: the kernel frames of its call chain, then the user frames,
// from the call chain where perf walked the frame pointers (perf record -g), or unwound with the
// DWARF CFI of the load objects from the registers and stack copy (perf record --call-graph dwarf).
type stacker struct {
	c      *converter
	cache  unwind.Cache
	spaces map[uint32]*unwind.Space
	unw    unwind.Unwinder
	copy   unwind.StackCopy

	complete, truncated, failed int64
	reasons                     map[string]int64
}

func newStacker(c *converter) *stacker {
	return &stacker{c: c, spaces: map[uint32]*unwind.Space{}, reasons: map[string]int64{}}
}

// addMapping adds a mapping to its process's address space, with the CFI of its load object where
// the object on this machine is the one profiled.
func (st *stacker) addMapping(m experiment.Mapping) {
	sp := st.spaces[m.Pid]
	if sp == nil {
		sp = &unwind.Space{}
		st.spaces[m.Pid] = sp
	}
	var t *unwind.Table
	if file, _ := st.c.object(m.Path, m.BuildID); file != "" {
		t, _ = st.cache.Table(file)
	}
	sp.Remove(m.Start, m.End)
	sp.Add(unwind.NewModule(m.Start, m.End, m.Offset, m.Path, t))
}

// fork gives a new process a copy of its parent's space.
func (st *stacker) fork(parent, child uint32) {
	if sp := st.spaces[parent]; sp != nil {
		st.spaces[child] = sp.Clone()
	} else {
		delete(st.spaces, child)
	}
}

// gone forgets a process that exited or called exec.
func (st *stacker) gone(pid uint32) { delete(st.spaces, pid) }

// stack appends sample s's stack, leaf first, to out.
func (st *stacker) stack(s *perfdata.Sample, out experiment.Stack) experiment.Stack {
	kernel, user := perfevent.SplitCallchain(s.Callchain)
	out = append(out, kernel...)
	sp := st.spaces[s.Pid]
	if s.UserRegsABI != 2 || len(s.UserRegs) == 0 || len(s.UserStack) == 0 { // not PERF_SAMPLE_REGS_ABI_64 with a stack copy
		out = append(out, user...)
		if len(out) == 0 {
			out = append(out, s.IP)
		}
		return out
	}
	if sp == nil {
		sp = &unwind.Space{}
	}
	regs := unwind.RegsFromSample(s.UserRegs, s.Attr.SampleRegsUser)
	st.copy.Reset(regs.SP(), s.UserStack[:min(uint64(len(s.UserStack)), s.UserStackDynSize)])
	st.unw.Modules = sp.Find
	st.unw.FPChain = user
	frames, status, reason := st.unw.Unwind(regs, &st.copy, out[len(out):])
	out = append(out, frames...)
	switch status {
	case unwind.Complete:
		st.complete++
	case unwind.Truncated:
		st.truncated++
		out = append(out, experiment.FrameTruncated)
	default:
		st.failed++
		st.reasons[reasonClass(reason)]++
		out = append(out, experiment.FrameUnwindFailed)
	}
	return out
}

// reasonClass drops the addresses from an unwind failure's reason, so that like failures count together.
func reasonClass(reason string) string {
	f := strings.Fields(reason)
	for i, w := range f {
		if strings.HasPrefix(w, "0x") {
			f[i] = "ADDR"
		}
	}
	return strings.Join(f, " ")
}

// summary says how the DWARF unwinds went, where there were any, and whether some did not complete.
func (st *stacker) summary() (text string, incomplete bool) {
	n := st.complete + st.truncated + st.failed
	if n == 0 {
		return "", false
	}
	text = fmt.Sprintf("DWARF unwinding of the user stacks: %d of %d complete, %d truncated (the stack copy, perf's --call-graph dwarf,SIZE, ended first), %d failed",
		st.complete, n, st.truncated, st.failed)
	if st.failed > 0 {
		type rc struct {
			r string
			n int64
		}
		var all []rc
		for r, k := range st.reasons {
			all = append(all, rc{r, k})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].r < all[j].r })
		var top []string
		for i := 0; i < len(all) && i < 3; i++ {
			top = append(top, fmt.Sprintf("%s (%d)", all[i].r, all[i].n))
		}
		text += ": " + strings.Join(top, "; ")
	}
	return text, st.truncated+st.failed > 0
}
