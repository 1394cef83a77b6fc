package collect

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fileIDs is what a program file asks of exec: set-user-ID, set-group-ID, file capabilities.
type fileIDs struct {
	setuid, setgid bool
	uid, gid       uint32
	caps           bool // a security.capability attribute
	nosuid         bool // on a nosuid mount, where exec ignores all three
}

// creds is what er runs with, and how its target starts, as far as exec cares: under er's ptrace, or
// (gated) waiting at the gate, where the tracer of er that follows its children (tracer) traces it.
type creds struct {
	euid, egid uint32
	ptrace     bool   // the target's tracer at its exec has CAP_SYS_PTRACE: the kernel grants a traced program its privileges
	nnp        bool   // no_new_privs: exec grants no privilege at all, with or without er
	gated      bool   // the target started at the gate: its perf events were opened before its exec
	tracer     string // gated: the process that traces it, "process 40 (strace)"; "" when none does
}

// capSysPtrace is CAP_SYS_PTRACE's bit in /proc/self/status's CapEff.
const capSysPtrace = 19

func statIDs(path string) (fileIDs, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileIDs{}, err
	}
	f := fileIDs{setuid: st.Mode&unix.S_ISUID != 0, setgid: st.Mode&unix.S_ISGID != 0 && st.Mode&unix.S_IXGRP != 0,
		uid: st.Uid, gid: st.Gid}
	if n, err := unix.Getxattr(path, "security.capability", nil); err == nil && n > 0 {
		f.caps = true
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err == nil {
		f.nosuid = sfs.Flags&unix.ST_NOSUID != 0
	}
	return f, nil
}

func selfCreds() creds {
	status, _ := os.ReadFile("/proc/self/status")
	return creds{euid: uint32(os.Geteuid()), egid: uint32(os.Getegid()), ptrace: hasPtraceCap(string(status)),
		nnp: statusField(string(status), "NoNewPrivs") == "1"}
}

// hasPtraceCap says whether the process of a /proc/PID/status text has CAP_SYS_PTRACE in effect.
func hasPtraceCap(status string) bool {
	bits, err := strconv.ParseUint(statusField(status, "CapEff"), 16, 64)
	return err == nil && bits&(1<<capSysPtrace) != 0
}

// gatedCreds is c for a target that waits at the gate as process pid: the process that traces it
// (a tracer of er's that follows its children), if any, is the one whose CAP_SYS_PTRACE decides.
func gatedCreds(c creds, pid int) creds {
	c.gated, c.tracer, c.ptrace = true, "", false
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	tp, _ := strconv.Atoi(statusField(string(status), "TracerPid"))
	if tp <= 0 {
		return c
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tp))
	ts, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", tp))
	c.tracer = fmt.Sprintf("process %d (%s)", tp, strings.TrimSpace(string(comm)))
	c.ptrace = hasPtraceCap(string(ts))
	return c
}

// setIDWarning says what a set-user-ID, set-group-ID or file-capabilities program loses under er
// collect, or "" when it loses nothing. Traced at its exec by a process without CAP_SYS_PTRACE (er
// itself, or at the gate the tracer of er's that follows its children), the kernel runs it without
// the privilege; where it is granted, the dynamic loader runs it in secure mode, which ignores
// LD_PRELOAD, so the collector library (libUses: what it was loaded for) is not loaded; and at the
// gate, where its events were opened before its exec, the kernel removes them from the process that
// exec makes not dumpable: nothing of it is recorded.
func setIDWarning(path string, f fileIDs, c creds, libUses string) string {
	if f.nosuid || c.nnp {
		return "" // exec ignores the bits and capabilities there (a nosuid mount, no_new_privs), with or without er
	}
	var what []string
	if f.setuid && f.uid != c.euid {
		what = append(what, fmt.Sprintf("set-user-ID (user %s)", userName(f.uid)))
	}
	if f.setgid && f.gid != c.egid {
		what = append(what, fmt.Sprintf("set-group-ID (group %s)", groupName(f.gid)))
	}
	if f.caps && c.euid != 0 {
		what = append(what, "given file capabilities")
	}
	if len(what) == 0 {
		return ""
	}
	prog := filepath.Base(path)
	head := prog + " is " + strings.Join(what, " and ")
	noLib := ""
	if libUses != "" {
		noLib = fmt.Sprintf("the dynamic loader ignores LD_PRELOAD for such a program, so the collector library is not loaded "+
			"into it and %s records nothing in it", libUses)
	}
	if c.gated && (c.tracer == "" || c.ptrace) {
		why := "it is not traced"
		if c.tracer != "" {
			why = "its tracer, " + c.tracer + ", has CAP_SYS_PTRACE"
		}
		text := head + ": it runs with that privilege (" + why + "), but the kernel removes the perf events of a process " +
			"that exec makes not dumpable, and er collect opened them before its exec (ptrace was refused, so it waited at " +
			"the gate): nothing of it is recorded"
		if noLib != "" {
			text += "; and " + noLib
		}
		return text + "; run er collect where it may start the target under ptrace, as root, to profile it"
	}
	if c.gated {
		text := head + ": under er collect it runs without that privilege, as you (it is traced by " + c.tracer + ", which " +
			"traces er and follows its children, and the kernel does not grant the privilege to a program traced by a " +
			"process without CAP_SYS_PTRACE), so it may fail or behave differently"
		if noLib != "" {
			text += "; and " + noLib
		}
		return text + "; trace er without following its children, and run it as root, to profile it as it normally runs"
	}
	if !c.ptrace {
		text := head + ": under er collect it runs without that privilege, as you (the kernel does not grant it to a " +
			"program started under ptrace by a process without CAP_SYS_PTRACE), so it may fail or behave differently"
		if noLib != "" {
			text += "; and " + noLib
		}
		return text + "; run er collect as root to profile it as it normally runs"
	}
	if noLib == "" {
		return "" // root: it keeps its privilege, and perf events sample it
	}
	return head + ": it runs with that privilege, but " + noLib
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username + ", " + id
	}
	return id
}

func groupName(gid uint32) string {
	id := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(id); err == nil {
		return g.Name + ", " + id
	}
	return id
}

// checkSetID warns, on stderr and in the experiment's log, when the target at path is a
// set-user-ID, set-group-ID or file-capabilities program that loses something under er, as it was
// started (s.pid: under ptrace, or waiting at the gate).
func (s *Session) checkSetID(path string) {
	f, err := statIDs(path)
	if err != nil {
		return
	}
	uses := ""
	if s.lib != "" {
		uses = libraryUses(s.spec, s.sigprof)
	}
	c := selfCreds()
	if s.gate != nil {
		c = gatedCreds(c, s.pid)
	}
	if text := setIDWarning(path, f, c, uses); text != "" {
		fmt.Fprintf(s.stderr, "er collect: %s\n", text)
		s.setIDText = text
		s.setIDGated = c.gated
	}
}
