package perfimport

import (
	"fmt"
	"strings"

	"er/internal/experiment"
	"er/internal/perfabi"
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

	tally unwind.Tally
}

func newStacker(c *converter) *stacker {
	return &stacker{c: c, spaces: map[uint32]*unwind.Space{}}
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
	if file, _ := st.c.object(m.Path, m.BuildID, m.Offset); file != "" {
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

// stack appends sample s's stack, leaf first, to out; regsMask is its event's user registers.
func (st *stacker) stack(s *perfabi.Sample, regsMask uint64, out experiment.Stack) experiment.Stack {
	kernel, user := perfabi.SplitCallchain(s.Callchain)
	out = append(out, kernel...)
	sp := st.spaces[s.Pid]
	if s.RegsABI != 2 || len(s.Regs) == 0 || len(s.Stack) == 0 { // not PERF_SAMPLE_REGS_ABI_64 with a stack copy
		out = append(out, user...)
		if len(out) == 0 {
			out = append(out, s.IP)
		}
		return out
	}
	if sp == nil {
		sp = &unwind.Space{}
	}
	regs := unwind.RegsFromSample(s.Regs, regsMask)
	st.copy.Reset(regs.SP(), s.Stack[:min(uint64(len(s.Stack)), s.StackDynSize)])
	st.unw.Modules = sp.Find
	st.unw.FPChain = user
	frames, status, reason := st.unw.Unwind(regs, &st.copy, out[len(out):])
	out = append(out, frames...)
	st.tally.Add(status, reason)
	switch status {
	case unwind.Complete:
	case unwind.Truncated:
		out = append(out, experiment.FrameTruncated)
	default:
		out = append(out, experiment.FrameUnwindFailed)
	}
	return out
}

// summary says how the DWARF unwinds went, where there were any, and whether some did not complete.
func (st *stacker) summary() (text string, incomplete bool) {
	tl := &st.tally
	n := tl.Total()
	if n == 0 {
		return "", false
	}
	text = fmt.Sprintf("DWARF unwinding of the user stacks: %d of %d complete, %d truncated (the stack copy, perf's --call-graph dwarf,SIZE, ended first), %d failed",
		tl.Complete, n, tl.Truncated, tl.Failed)
	if tl.Failed > 0 {
		var top []string
		for _, r := range tl.TopReasons(3) {
			top = append(top, fmt.Sprintf("%s (%d)", r.Text, r.N))
		}
		text += ": " + strings.Join(top, "; ")
	}
	return text, tl.Truncated+tl.Failed > 0
}
