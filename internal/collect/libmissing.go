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

	"golang.org/x/sys/unix"

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
	root                  string // its root directory (a chroot), "" when unknown
	otherMounts           bool   // it runs in a mount namespace that is not er's
	euid                  int    // the user it runs as, where er runs as root and read it; else -1
	inherited             string // why the library could not run in the process it came from (inheritedReason), or ""
}

// libStart is a collector library's word that it started in process pid at time t (ns since the
// session start).
type libStart struct {
	pid uint32
	t   int64
}

// libNoStart is a collector library's word that it could not start in process pid at time t: the
// error, and the user the process ran as; or (nofile) that its descriptor limits, soft and hard,
// left it no descriptor out of the program's way.
type libNoStart struct {
	libStart
	err    unix.Errno
	euid   uint32
	nofile [2]uint32
}

// atSecure is AT_SECURE's type in the auxiliary vector.
const atSecure = 23

// readExecFacts reads the facts of process pid's image, which exec started as comm, and whose
// environment was to preload lib (none: only its program file is read). The kernel reports the exec
// before it has replaced the process's memory and set up its auxiliary vector and environment: facts
// read before (the program file is not comm's yet) or meanwhile (the vector is still empty) are
// unknown.
func readExecFacts(pid uint32, comm, lib string) execFacts {
	exe, err := os.Readlink(procPath(pid, 0, "exe"))
	if err != nil || comm == "" || !strings.HasPrefix(filepath.Base(exe), comm) {
		return execFacts{}
	}
	f := execFacts{exe: exe, euid: -1}
	if lib == "" {
		return f
	}
	// Where the experiment may be out of its reach: a chroot, another mount namespace, another user
	// (only root's processes can become one).
	f.root, _ = os.Readlink(procPath(pid, 0, "root"))
	if ns, err := os.Readlink(procPath(pid, 0, "ns/mnt")); err == nil {
		own, err := os.Readlink("/proc/self/ns/mnt")
		f.otherMounts = err == nil && own != ns
	}
	if os.Geteuid() == 0 {
		f.euid = statusEUID(procPath(pid, 0, "status"))
	}
	auxv, err := os.ReadFile(procPath(pid, 0, "auxv"))
	if err != nil {
		return f
	}
	if f.secure, f.secureKnown = auxvValue(auxv, atSecure); !f.secureKnown {
		return f
	}
	if env, err := os.ReadFile(procPath(pid, 0, "environ")); err == nil {
		f.preloadKnown = true
		for _, v := range bytes.Split(env, []byte{0}) {
			if rest, ok := bytes.CutPrefix(v, []byte("LD_PRELOAD=")); ok && bytes.Contains(rest, []byte(filepath.Base(lib))) {
				f.preload = true
			}
		}
	}
	return f
}

// statusEUID is the effective uid in the /proc/PID/status file path, or -1.
func statusEUID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(v); len(f) >= 2 {
				if n, err := strconv.Atoi(f[1]); err == nil {
					return n
				}
			}
		}
	}
	return -1
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
	case f.root != "" && f.root != "/":
		return fmt.Sprintf("it runs chrooted to %s, where the experiment directory is out of its reach (the processes "+
			"it forks are still traced; the programs it runs there, and their descendants, are not)", f.root)
	case f.otherMounts:
		return "it runs in a mount namespace of its own, where the experiment directory is out of its reach"
	case f.euid > 0:
		return fmt.Sprintf("it runs as user %s, which may not write into the experiment: %s", userName(uint32(f.euid)), dropUnseen)
	case f.inherited != "":
		return f.inherited
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

// dropUnseen says why a process that runs as another user than er's cannot write into the experiment.
const dropUnseen = "its privileges were dropped by the system call itself, which the collector library does not see " +
	"(where the C library's setuid, seteuid, setreuid, setresuid or setfsuid drops them, the library first prepares " +
	"a directory for that user in the experiment)"

// noStartText says why the collector library could not start in process pid: cause (noStartCause).
func noStartText(pid uint32, prog, uses, cause string) string {
	return fmt.Sprintf("the collector library could not start in process %d (%s), so %s recorded nothing in it: %s", pid, prog, uses, cause)
}

// noStartCause says why the collector library could not start in image p, as m says: its descriptor
// limits; or creating its directory and files in the experiment failed, with m.err, and what denied
// them where er knows (a Landlock ruleset of p's process or of the processes it came from, or a
// privilege drop the library did not see: the process ran as m.euid).
func (s *Session) noStartCause(m libNoStart, p *proc) string {
	if m.nofile != [2]uint32{} {
		return nofileText(m.nofile)
	}
	text := fmt.Sprintf("creating its directory and files in the experiment: %v", m.err)
	if m.err != unix.EACCES && m.err != unix.EPERM {
		return text
	}
	if ll := s.landlockBefore(p, m.t); ll != "" {
		return text + ": " + ll
	}
	if m.euid != uint32(os.Geteuid()) {
		text += fmt.Sprintf(" (the process runs as user %s; %s)", userName(m.euid), dropUnseen)
	}
	return text
}

// nofileText says why the library did not start under the descriptor limits soft and hard.
func nofileText(l [2]uint32) string {
	return fmt.Sprintf("its descriptor limit (RLIMIT_NOFILE %d, hard %d, which the program lowered) leaves the library no "+
		"descriptor above the numbers the program's own files get, and it takes none of those", l[0], l[1])
}

// landlockBefore says which process in p's lineage (p's own, or one it came from) restricted itself with
// a Landlock ruleset before time t, and what that means for the library; "" when none did.
func (s *Session) landlockBefore(p *proc, t int64) string {
	for q := p; q != nil; q = q.parent {
		for _, m := range s.libLandlocks {
			if m.pid == q.pid && m.t >= q.start && m.t <= t {
				return fmt.Sprintf("process %d restricted itself with a Landlock ruleset at %.3f s (landlock_restrict_self) that "+
					"denies the library its files in the experiment directory: Landlock checks every file and directory made, "+
					"through a directory descriptor held from before too, so no process under the ruleset can start recording "+
					"(the process that made it records on, in the files it holds)", m.pid, float64(m.t)/1e9)
			}
		}
	}
	return ""
}

// inheritedReason says why the collector library could not run in image p from what its process, or
// the processes it was forked from, did before p began: a chroot out of the experiment's reach, or
// a start that failed (a privilege drop the library did not see); "" when none of them did.
func (s *Session) inheritedReason(p *proc) string {
	before := func(m libStart, q *proc) bool { return m.pid == q.pid && m.t <= p.start && m.t >= q.start }
	for q := p.parent; q != nil; q = q.parent {
		for _, m := range s.libUnreachable {
			if before(m.libStart, q) {
				what := "chrooted"
				if m.euid == 2 {
					what = "changed its mounts (or entered another mount namespace)"
				}
				return fmt.Sprintf("process %d %s at %.3f s, and the experiment directory is out of reach of the "+
					"programs it and its descendants run there (the processes it forks are still traced)", q.pid, what, float64(m.t)/1e9)
			}
		}
		for _, m := range s.libNoStarts {
			if !before(m.libStart, q) {
				continue
			}
			if cause := s.noStartCause(m, q); m.nofile != [2]uint32{} || strings.Contains(cause, "Landlock") {
				return fmt.Sprintf("the library could not start in process %d before it either: %s", q.pid, cause)
			}
			return fmt.Sprintf("the library could not start in process %d before it either (%v, as user %s)", q.pid, m.err, userName(m.euid))
		}
		if ll := s.landlockBefore(q, p.start); ll != "" {
			return ll
		}
		for _, m := range s.libSetUIDs {
			if why := unreachable(s.dir, m.euid); before(m.libStart, q) && why != "" {
				return fmt.Sprintf("process %d made itself user %s at %.3f s%s", q.pid, userName(m.euid), float64(m.t)/1e9, why)
			}
		}
	}
	return ""
}

// unreachable says which directory on the way to dir user uid may not search (its group memberships
// aside), as a clause: ", who may not search /root (0700 root)"; "" when none.
func unreachable(dir string, uid uint32) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for p := abs; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&0o001 == 0 && !(st.Uid == uid && st.Mode&0o100 != 0) {
			return fmt.Sprintf(", who may not search %s (%04o, user %s): the programs it runs there cannot reach the experiment", p, st.Mode&0o7777, userName(st.Uid))
		}
		if p == "/" || p == "." {
			return ""
		}
	}
}

// warnLibraryMissing says, in the experiment of each followed image in which the collector library
// could not start, or (an image that exec started) never ran, that its traces recorded nothing and
// why; on stderr, the first few. (The founder is checked before it starts.) An instance whose start
// er did not hear of (its process may no longer open the FIFO) counts by its directory.
func (s *Session) warnLibraryMissing() {
	if s.lib == "" || s.sigprof || s.writeErr != nil {
		return
	}
	seen := map[*proc]bool{}
	for _, m := range s.libStarts {
		seen[s.imageAt(m.pid, m.t)] = true
	}
	for _, d := range libraryDirs(filepath.Join(s.dir, procDirName)) {
		// (A directory without its info file is one whose instance could not go on: a file it may not
		// create, under a Landlock ruleset, or no descriptor left.)
		if fi, err := os.Lstat(filepath.Join(d.parent, d.name, "info")); err == nil && fi.Mode().IsRegular() {
			seen[s.imageAt(d.pid, d.start-s.startNS)] = true
		}
	}
	failed := map[*proc]libNoStart{}
	for _, m := range s.libNoStarts {
		if p := s.imageAt(m.pid, m.t); p != nil && !seen[p] {
			failed[p] = m
		}
	}
	uses := libraryUses(s.spec, s.sigprof)
	said := 0
	for _, p := range s.images {
		m, noStart := failed[p]
		// A forked image says itself why it could not start (message 8), where it holds the FIFO; one that
		// did not is said of only under a Landlock ruleset, which denies it the FIFO by its name too (a
		// vfork child, which exec replaces at once, has no instance of its own either).
		forked := !p.execed && !noStart
		if p == s.founder || forked && (p.replaced || s.landlockBefore(p, p.start) == "") || seen[p] || !p.open() ||
			p.unrecorded || p.seccompOf() != nil {
			continue
		}
		f := p.exec
		f.inherited = s.inheritedReason(p)
		text := fmt.Sprintf("the collector library did not run in process %d (%s), so %s recorded nothing in it: %s",
			p.pid, p.prog, uses, libraryMissingReason(f))
		if noStart {
			text = noStartText(p.pid, p.prog, uses, s.noStartCause(m, p))
		}
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
	// (The founder too where it waited at the gate: its events were opened before its exec.)
	gated := p == s.founder && s.gate != nil
	if p == s.founder && !gated || !p.execed && !gated || p.unrecorded || !p.open() || p.mappedProgram() {
		return
	}
	p.unrecorded = true
	prog := p.prog
	if p.exec.exe != "" {
		prog = p.exec.exe
	}
	text := fmt.Sprintf("process %d (%s, %s): the kernel stopped recording it at its exec, and nothing of it was recorded: "+
		"it removes perf events from a process that a set-user-ID, set-group-ID or file-capabilities program makes not dumpable, "+
		"and from one that execs with an effective user or group other than its real one (after a seteuid) "+
		"(or its records were lost); run er collect on the program itself, as root, to profile it",
		p.pid, prog, filepath.Base(p.w.Dir()))
	if gated {
		text = fmt.Sprintf("process %d (%s, %s): the kernel stopped recording it at its exec, and nothing of it was recorded: "+
			"er collect opened its events before that exec, as it waited at the gate (ptrace was refused), and the kernel removes "+
			"them from a process that a set-user-ID, set-group-ID or file-capabilities program makes not dumpable (or its records "+
			"were lost); run er collect where it may start the target under ptrace, as root, to profile it", p.pid, prog, filepath.Base(p.w.Dir()))
		if s.setIDGated {
			p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: text}) // (said on stderr before it ran)
			return
		}
	}
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
