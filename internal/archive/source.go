package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"er/internal/regfile"
)

// Which source files er archive copies. The debug information of a binary can name any file (a
// #line directive or a crafted line table can name /etc/shadow), and archives/ may be read by
// others, so a file named there is copied only when it is plausibly a source file that its
// user could show anyway (docs/experiment-format.md, "What is copied"): CheckSource.

// MaxSourceSize is the largest source file copied.
const MaxSourceSize = 64 << 20

// sourceSuffixes are the file name endings of source files: C, C++, assembler, Fortran, Go, Rust,
// Objective-C, D, Ada, CUDA, OpenCL, lex and yacc, and the fragments they include.
var sourceSuffixes = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`.c .h .i .cc .cp .cpp .cxx .c++ .C .CC .CPP .H .hh .hp .hpp .hxx .h++ .HPP .ii
		.inl .inc .ipp .ixx .tcc .tpp .txx .def .ino .s .S .sx .asm .f .for .ftn .fpp .f77 .f90 .f95 .f03 .f08
		.F .FOR .FPP .FTN .F77 .F90 .F95 .F03 .F08 .go .rs .m .mm .M .d .di .ads .adb .cu .cuh .cl .y .yy .l .ll
		.ypp .lpp .pyx .pxd .java .swift .zig .nim .pas .pp .hs .ml`) {
		sourceSuffixes[s] = true
	}
}

// systemDirs hold no source files, and things that must not be copied.
var systemDirs = []string{"/etc", "/proc", "/sys", "/dev", "/run", "/boot"}

// headerDirs hold headers whose names have no suffix (the C++ library's <vector>).
var headerDirs = []string{"/usr/include/", "/usr/local/include/"}

// isSourceName reports whether the file at path is named as a source file is.
func isSourceName(path string) bool {
	base := filepath.Base(path)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return sourceSuffixes[base[i:]]
	}
	for _, d := range headerDirs {
		if strings.HasPrefix(path, d) {
			return true
		}
	}
	return false
}

// CheckSource says why the file that debug information names path (absolute) must not be copied
// into an archive, or nil when it may: the file it is (links followed) must not be in a system
// directory (/etc, /proc, /sys, /dev, /run, /boot), must have a source file's name (a suffix of
// sourceSuffixes; a header without one under /usr/include or /usr/local/include), must be a
// regular file of at most MaxSourceSize bytes, and must be the user's own, or readable by the
// user's group or by everyone.
func CheckSource(path string) error {
	real, lead, err := checkPlace(path, systemDirs, "source files")
	if err != nil {
		return err
	}
	if !isSourceName(real) {
		return fmt.Errorf("%sits name is not a source file's (see docs/experiment-format.md, \"What is copied\")", lead)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &regfile.NotRegularError{Path: real, Mode: fi.Mode()}
	}
	if fi.Size() > MaxSourceSize {
		return &regfile.TooLargeError{Path: real, Size: fi.Size(), Limit: MaxSourceSize, What: "a source file that is copied"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o004 != 0, int(st.Uid) == os.Getuid():
		return nil
	case perm&0o040 != 0 && inGroup(int(st.Gid)):
		return nil
	}
	return fmt.Errorf("%sit belongs to user %d and others may not read it (mode %04o)", lead, st.Uid, perm)
}

// objectSystemDirs hold no load objects that er archive copies: their files are the kernel's (a
// regular file of /proc can be endless, /proc/PID/exe is another process's program) or devices.
var objectSystemDirs = []string{"/proc", "/sys", "/dev"}

// CheckObject says why the file at path (absolute), named as a load object, must not be copied into
// an archive, or nil when it may: the file it is (links followed) must not be in /proc, /sys or
// /dev. (That it is a regular ELF file is checked on the file opened to copy it.)
func CheckObject(path string) error {
	_, _, err := checkPlace(path, objectSystemDirs, "load objects")
	return err
}

// checkPlace says, as an error, when path (absolute) or the file it leads to, its links resolved
// (real), is in one of dirs, where there are no files of the kind what names (a name in /proc is
// checked as it is: /proc/self/exe leads to a program by a link that readlink shows as a path, and
// /proc/PID/root to another mount namespace's root); lead starts a message about real ("it leads to
// REAL, and ") where real is not path.
func checkPlace(path string, dirs []string, what string) (real, lead string, err error) {
	in := func(p string) string {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				return d
			}
		}
		return ""
	}
	if d := in(filepath.Clean(path)); d != "" {
		return "", "", fmt.Errorf("it is in %s, where no %s are", d, what)
	}
	if real, err = filepath.EvalSymlinks(path); err != nil {
		return "", "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", "", err
	}
	if real != filepath.Clean(path) {
		lead = "it leads to " + real + ", and "
	}
	if d := in(real); d != "" {
		return "", "", fmt.Errorf("%sit is in %s, where no %s are", lead, d, what)
	}
	return real, lead, nil
}

// inGroup reports whether the user is in group gid.
func inGroup(gid int) bool {
	if os.Getgid() == gid {
		return true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if g == gid {
			return true
		}
	}
	return false
}
