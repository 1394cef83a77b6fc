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

// creds is what er runs with, as far as exec under ptrace cares.
type creds struct {
	euid, egid uint32
	ptrace     bool // CAP_SYS_PTRACE: the kernel grants a traced program its privileges
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
	c := creds{euid: uint32(os.Geteuid()), egid: uint32(os.Getegid())}
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			if bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil {
				c.ptrace = bits&(1<<capSysPtrace) != 0
			}
		}
	}
	return c
}

// setIDWarning says what a set-user-ID, set-group-ID or file-capabilities program loses under er
// collect, or "" when it loses nothing. Started under ptrace by a tracer without CAP_SYS_PTRACE, the
// kernel runs it without the privilege; either way the dynamic loader runs it in secure mode, which
// ignores LD_PRELOAD, so the collector library (libUses: what it was loaded for) is not loaded.
func setIDWarning(path string, f fileIDs, c creds, libUses string) string {
	if f.nosuid {
		return "" // exec ignores the bits there, with or without er
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
// set-user-ID, set-group-ID or file-capabilities program that loses something under er.
func (s *Session) checkSetID(path string) {
	f, err := statIDs(path)
	if err != nil {
		return
	}
	uses := ""
	if s.lib != "" {
		uses = libraryUses(s.spec, s.sigprof)
	}
	if text := setIDWarning(path, f, selfCreds(), uses); text != "" {
		fmt.Fprintf(s.stderr, "er collect: %s\n", text)
		s.setIDText = text
	}
}
