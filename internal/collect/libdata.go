package collect

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// The collector library's data while er collect runs: each instance's directory in .proc/, or, for
// a process whose privileges were dropped, in the directory the library prepared for that user,
// .proc/u<uid>/ (docs/trace-format.md, "Instances"). At the end er moves the files into the
// experiment of the image each instance ran in.

// libDir is one instance's directory.
type libDir struct {
	parent string // .proc or .proc/u<uid>
	name   string // <pid>.<start_ns>
	pid    uint32
	start  int64 // CLOCK_MONOTONIC ns
	uid    int   // -1: in .proc itself; else the user who owns .proc/u<uid>
}

// parseInstanceName parses <pid>.<start_ns>.
func parseInstanceName(name string) (pid uint32, start int64, ok bool) {
	pidStr, startStr, ok := strings.Cut(name, ".")
	p, err1 := strconv.ParseUint(pidStr, 10, 32)
	st, err2 := strconv.ParseInt(startStr, 10, 64)
	if !ok || err1 != nil || err2 != nil || st < 0 {
		return 0, 0, false
	}
	return uint32(p), st, true
}

// userDirUID is the user of a directory .proc/u<uid>, or -1 when name is not one.
func userDirUID(name string) int {
	rest, ok := strings.CutPrefix(name, "u")
	if !ok {
		return -1
	}
	uid, err := strconv.ParseUint(rest, 10, 31)
	if err != nil || rest == "" || rest[0] == '+' {
		return -1
	}
	return int(uid)
}

// libraryDirs lists the instance directories under pd (.proc): real directories only, those in a
// user's directory only where the directory belongs to that user.
func libraryDirs(pd string) []libDir {
	out := instanceDirs(pd, -1)
	ents, _ := os.ReadDir(pd)
	for _, e := range ents {
		u := userDirUID(e.Name())
		var st unix.Stat_t
		if u < 0 || !e.IsDir() || unix.Lstat(filepath.Join(pd, e.Name()), &st) != nil || int(st.Uid) != u {
			continue
		}
		out = append(out, instanceDirs(filepath.Join(pd, e.Name()), u)...)
	}
	return out
}

// instanceDirs lists the instance directories in parent (DirEntry's type is lstat's: a symbolic
// link is not a directory).
func instanceDirs(parent string, uid int) []libDir {
	ents, _ := os.ReadDir(parent)
	var out []libDir
	for _, e := range ents {
		if pid, start, ok := parseInstanceName(e.Name()); ok && e.IsDir() {
			out = append(out, libDir{parent: parent, name: e.Name(), pid: pid, start: start, uid: uid})
		}
	}
	return out
}

// instanceBytes is the size of the files of instance d.
func instanceBytes(d libDir) int64 {
	var n int64
	ents, _ := os.ReadDir(filepath.Join(d.parent, d.name))
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// libraryBytes is the size of the files of every collector-library instance in .proc/ (-L counts
// them). The size of an instance whose image has ended is kept: its files no longer grow.
func (s *Session) libraryBytes() int64 {
	var n int64
	for _, d := range libraryDirs(filepath.Join(s.dir, procDirName)) {
		key := filepath.Join(d.parent, d.name)
		if b, ok := s.endedBytes[key]; ok {
			n += b
			continue
		}
		b := instanceBytes(d)
		if p := s.imageAt(d.pid, d.start-s.startNS); p != nil && p.exited {
			if s.endedBytes == nil {
				s.endedBytes = map[string]int64{}
			}
			s.endedBytes[key] = b
		}
		n += b
	}
	return n
}

// moveInstance moves the data files of instance d into the experiment directory dst: every regular
// file but info, by descriptors (a user's directory cannot make er follow a symbolic link); a file
// that dst already has is left (keep says so). The files of a user's directory become er's own,
// 0644: a file there that was not a file of its own (a link to another one) is removed. It returns
// the files it could not move, with why.
func moveInstance(d libDir, dst string, keep func(name string)) []string {
	var problems []string
	fail := func(name string, err error) { problems = append(problems, fmt.Sprintf("%s/%s: %v", d.name, name, err)) }
	pfd, err := unix.Open(d.parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", d.parent, err)}
	}
	defer unix.Close(pfd)
	sfd, err := unix.Openat(pfd, d.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", d.name, err)}
	}
	src := os.NewFile(uintptr(sfd), d.name)
	defer src.Close()
	names, err := src.Readdirnames(-1)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", d.name, err)}
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", dst, err)}
	}
	defer unix.Close(dfd)
	for _, name := range names {
		var st unix.Stat_t
		if name == "info" || name == "seccomp" || unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			fail(name, fmt.Errorf("not a regular file"))
			continue
		}
		var there unix.Stat_t
		if unix.Fstatat(dfd, name, &there, unix.AT_SYMLINK_NOFOLLOW) == nil {
			keep(name)
			continue
		}
		if err := unix.Renameat(sfd, name, dfd, name); err != nil {
			fail(name, err)
			continue
		}
		if d.uid >= 0 {
			if err := ownFile(dfd, name, st.Ino); err != nil {
				_ = unix.Unlinkat(dfd, name, 0)
				fail(name, err)
			}
		}
	}
	return problems
}

// ownFile makes the file name of directory dfd, moved there from a user's directory, er's own and
// 0644, after checking that it is the regular file of inode ino with no other link.
func ownFile(dfd int, name string, ino uint64) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != ino || st.Nlink != 1 {
		return fmt.Errorf("not a file of its own (%d links): removed", st.Nlink)
	}
	if err := unix.Fchown(fd, os.Getuid(), os.Getgid()); err != nil {
		return err
	}
	return unix.Fchmod(fd, 0o644)
}

// relocateLibraryData moves the files each collector-library instance wrote under .proc/ into the
// experiment of the image it ran in, and removes .proc/ and the FIFO. Data of images that are not
// followed is removed. Data that cannot be moved stays in .proc/ (the reader finds it there).
func (s *Session) relocateLibraryData() {
	pd := filepath.Join(s.dir, procDirName)
	if _, err := os.Lstat(pd); err != nil {
		return
	}
	var dropped, kept int
	for _, d := range libraryDirs(pd) {
		src := filepath.Join(d.parent, d.name)
		p := s.imageAt(d.pid, d.start-s.startNS)
		if p == nil || p.w == nil {
			dropped++
			_ = os.RemoveAll(src)
			continue
		}
		problems := moveInstance(d, p.w.Dir(), func(name string) {
			// A second instance in one image (a library loaded twice): keep the first.
			s.founder.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: fmt.Sprintf("collector library data %s/%s: the experiment %s already has that file; ignored", d.name, name, filepath.Base(p.w.Dir()))})
		})
		for _, pr := range problems {
			s.founder.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: "moving the collector library's data: " + pr})
		}
		if len(problems) == 0 {
			_ = os.RemoveAll(src)
		} else {
			kept++
		}
	}
	if dropped > 0 {
		s.founder.w.Event(experiment.Event{Kind: "comment", Text: fmt.Sprintf("%d processes traced by the collector library were not followed (-F %s); their data was discarded", dropped, s.spec.Follow)})
	}
	_ = os.Remove(filepath.Join(s.dir, controlName))
	if kept > 0 {
		s.founder.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("the collector library's data of %d process images could not be moved into their experiments: it stays in %s", kept, procDirName)})
		return
	}
	_ = os.RemoveAll(pd)
}
