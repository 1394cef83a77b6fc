package collect

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"er/internal/experiment"
)

// execFacts is what er read of a new image at its exec, to say later why the collector library did
// not run in it: whether the loader runs it in secure mode (AT_SECURE: set-user-ID, set-group-ID or
// file capabilities, where LD_PRELOAD is ignored) and whether its environment still preloads the
// library. Either is unknown when the process was gone, or would not let er read it.
type execFacts struct {
	secure, secureKnown   bool
	preload, preloadKnown bool
	exe                   string // its program file, "" when unknown
}

// libStart is a collector library's word that it started in process pid at time t (ns since the
// session start).
type libStart struct {
	pid uint32
	t   int64
}

// atSecure is AT_SECURE's type in the auxiliary vector.
const atSecure = 23

// readExecFacts reads the facts of process pid's image, which exec started as comm, and whose
// environment was to preload lib (none: only its program file is read). The kernel reports the exec
// before it has replaced the process's memory and set up its auxiliary vector and environment: facts
// read before (the program file is not comm's yet) or meanwhile (the vector is still empty) are
// unknown.
func readExecFacts(pid uint32, comm, lib string) execFacts {
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	exe, err := os.Readlink(dir + "/exe")
	if err != nil || comm == "" || !strings.HasPrefix(filepath.Base(exe), comm) {
		return execFacts{}
	}
	f := execFacts{exe: exe}
	if lib == "" {
		return f
	}
	auxv, err := os.ReadFile(dir + "/auxv")
	if err != nil {
		return f
	}
	if f.secure, f.secureKnown = auxvValue(auxv, atSecure); !f.secureKnown {
		return f
	}
	if env, err := os.ReadFile(dir + "/environ"); err == nil {
		f.preloadKnown = true
		for _, v := range bytes.Split(env, []byte{0}) {
			if rest, ok := bytes.CutPrefix(v, []byte("LD_PRELOAD=")); ok && bytes.Contains(rest, []byte(filepath.Base(lib))) {
				f.preload = true
			}
		}
	}
	return f
}

// auxvValue says whether the entry of type typ in a 64-bit auxiliary vector is non-zero, and
// whether the vector has it.
func auxvValue(auxv []byte, typ uint64) (nonzero, ok bool) {
	for i := 0; i+16 <= len(auxv); i += 16 {
		t, v := binary.LittleEndian.Uint64(auxv[i:]), binary.LittleEndian.Uint64(auxv[i+8:])
		if t == 0 {
			break
		}
		if t == typ {
			return v != 0, true
		}
	}
	return false, false
}

// staticELF says whether the ELF program file at path has no program interpreter: no dynamic
// loader runs, and LD_PRELOAD means nothing to it.
func staticELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// libraryMissingReason says why the collector library did not run in an image, from what er read
// at its exec, or else from its program file.
func libraryMissingReason(f execFacts) string {
	const secure = "the dynamic loader runs such a program in secure mode, where it ignores LD_PRELOAD"
	switch {
	case f.secureKnown && f.secure:
		return "it is a set-user-ID, set-group-ID or file-capabilities program: " + secure
	case f.preloadKnown && !f.preload:
		return "its environment did not preload the collector library (the process that ran it cleared LD_PRELOAD or the environment)"
	}
	if f.exe != "" {
		if ids, err := statIDs(f.exe); err == nil && !ids.nosuid && (ids.setuid || ids.setgid || ids.caps) {
			return fmt.Sprintf("%s is a set-user-ID, set-group-ID or file-capabilities program: %s", f.exe, secure)
		}
		if staticELF(f.exe) {
			return f.exe + " is statically linked, so it loads no library"
		}
	}
	if f.preloadKnown {
		return "it ended before the library started"
	}
	return "its environment did not preload the collector library (the process that ran it cleared LD_PRELOAD or the environment), or it ended before the library started"
}

// warnLibraryMissing says, in the experiment of each followed image that exec started and in which
// the collector library never ran, that its traces recorded nothing and why; on stderr, the first
// few. (A forked image runs the library its parent ran; the founder is checked before it starts.)
func (s *Session) warnLibraryMissing() {
	if s.lib == "" || s.sigprof || s.writeErr != nil {
		return
	}
	seen := map[*proc]bool{}
	for _, m := range s.libStarts {
		seen[s.imageAt(m.pid, m.t)] = true
	}
	uses := libraryUses(s.spec, s.sigprof)
	said := 0
	for _, p := range s.images {
		if p == s.founder || !p.execed || seen[p] || !p.open() || p.unrecorded {
			continue
		}
		text := fmt.Sprintf("the collector library did not run in process %d (%s), so %s recorded nothing in it: %s",
			p.pid, p.prog, uses, libraryMissingReason(p.exec))
		p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: text})
		if said++; said <= 3 {
			fmt.Fprintf(s.stderr, "er collect: %s: %s\n", filepath.Base(p.w.Dir()), text)
		}
	}
	if said > 3 {
		fmt.Fprintf(s.stderr, "er collect: and in %d more images (see their experiments' logs)\n", said-3)
	}
}

// checkUnrecorded says, in the experiment of an image that exec started and of which the kernel
// sent nothing (not even the mapping of its program), that nothing of it was recorded: the kernel removes perf events from a process whose exec makes it not dumpable (a
// set-user-ID, set-group-ID or file-capabilities program), and reports it as exited there. On
// stderr, the first few (unrecordedSummary says how many more).
func (s *Session) checkUnrecorded(p *proc) {
	if p == s.founder || !p.execed || p.unrecorded || !p.open() || p.mappedProgram() {
		return
	}
	p.unrecorded = true
	prog := p.prog
	if p.exec.exe != "" {
		prog = p.exec.exe
	}
	text := fmt.Sprintf("process %d (%s, %s): the kernel stopped recording it at its exec, and nothing of it was recorded: "+
		"it removes perf events from a process that a set-user-ID, set-group-ID or file-capabilities program makes not dumpable "+
		"(or its records were lost); run er collect on the program itself, as root, to profile it",
		p.pid, prog, filepath.Base(p.w.Dir()))
	p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: text}) // er print of the founder says it too
	if s.unrecorded++; s.unrecorded <= 3 {
		fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
	}
}

// warnUnrecordedExecs checks the images still open at the end, and says how many more than the
// first few the kernel did not record.
func (s *Session) warnUnrecordedExecs() {
	for _, p := range s.images {
		s.checkUnrecorded(p)
	}
	if s.unrecorded > 3 {
		fmt.Fprintf(s.stderr, "er collect: and %d more processes like it (see their experiments' logs)\n", s.unrecorded-3)
	}
}

// mappedProgram says whether the kernel reported any mapping of a file in the image (the program's
// code is mapped at its exec).
func (p *proc) mappedProgram() bool {
	for k := range p.mapped {
		if strings.HasPrefix(k.path, "/") {
			return true
		}
	}
	return false
}
