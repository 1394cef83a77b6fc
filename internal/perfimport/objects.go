package perfimport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/regfile"
)

// found is what object found for a load object: the file on this machine that holds it, or why none;
// and the size of the file found.
type found struct {
	file, why string
	size      int64
}

// object returns the file on this machine that is the load object at path with the given build id,
// mapped from file offset off: path itself when it is an ELF file of that build id (or either is
// unknown) and larger than off, else perf's copy in its build-id cache (perf record copies the
// objects that samples hit into ~/.debug), else "" and why not. The path is the file's: what it
// names is read only as lookObject says.
func (c *converter) object(path, buildID string, off uint64) (file, why string) {
	if path == "[vdso]" {
		if c.sameMachine() {
			return path, ""
		}
		return "", "recorded under another kernel"
	}
	if !strings.HasPrefix(path, "/") {
		return "", "not a file"
	}
	key := path + "\x00" + buildID
	if c.objects == nil {
		c.objects = map[string]found{}
	}
	f, ok := c.objects[key]
	if !ok {
		f = lookObject(path, buildID)
		c.objects[key] = f
	}
	if f.file != "" && f.size >= 0 && off >= uint64(f.size) {
		return "", fmt.Sprintf("the file on this machine has %d bytes, and the profiled one was mapped from offset %#x: another file", f.size, off)
	}
	return f.file, f.why
}

// minELF is the size of the smallest ELF file: its 64-bit header.
const minELF = 64

// lookObject finds the load object at path, a name that a perf.data file gave, so that a crafted file
// cannot make er read (or say anything of) a file that is not the object profiled: path is opened
// without following a symbolic link in its last part, without blocking and only where it is a
// regular file of at least an ELF header's size outside /proc and /sys; only its ELF header and
// notes are read to compare build ids, and an error never quotes the file's bytes. Where path is not
// the object, perf's build-id cache may hold a copy.
func lookObject(path, buildID string) found {
	f, why := checkObject(path, buildID)
	if f.file != "" {
		return f
	}
	if buildID != "" && len(buildID) > 2 {
		if cached := filepath.Join(buildIDDir(), ".build-id", buildID[:2], buildID[2:], "elf"); fileExists(cached) {
			return found{file: cached, size: -1}
		}
		why += " (and perf's build-id cache has no copy)"
	}
	return found{why: why}
}

// checkObject says whether path is the load object of the build id (either may be unknown), as lookObject.
func checkObject(path, buildID string) (found, string) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return found{}, "it is not on this machine"
	case err != nil:
		return found{}, fmt.Sprintf("it cannot be examined (%v)", errors.Unwrap(err))
	case st.Mode()&fs.ModeSymlink != 0:
		return found{}, "on this machine it is a symbolic link, which is not followed (perf.data names the file itself)"
	case !st.Mode().IsRegular():
		return found{}, fmt.Sprintf("on this machine it is %s, not a load object", regfile.Kind(st.Mode()))
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return found{}, fmt.Sprintf("it cannot be opened (%v)", err)
	}
	fh := os.NewFile(uintptr(fd), path)
	defer fh.Close()
	if st, err = fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return found{}, "it changed while it was examined"
	}
	pseudo := (*regfile.PseudoFileError)(nil)
	switch err := regfile.CheckPseudo(path, fh); {
	case errors.As(err, &pseudo): // the file systems whose files are not load objects, and whose reading can say things about the machine
		return found{}, "on this machine it is a file of /proc or /sys, not a load object"
	case err != nil:
		return found{}, "it changed while it was examined"
	case st.Size() < minELF:
		return found{}, fmt.Sprintf("on this machine it has %d bytes, too few for an ELF file", st.Size())
	}
	o, err := objfile.NewFile(path, fh)
	if err != nil {
		return found{}, "on this machine it is not an ELF file that can be read"
	}
	id := o.BuildID()
	if buildID == "" || id == "" || id == buildID {
		return found{file: path, size: st.Size()}, ""
	}
	return found{}, fmt.Sprintf("the file on this machine has build id %s, the profiled one %s", id, buildID)
}

// buildIDDir is perf's build-id cache: $PERF_BUILDID_DIR, or ~/.debug.
func buildIDDir() string {
	if d := os.Getenv("PERF_BUILDID_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".debug")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// writeArchives writes the symbol archives of the load objects mapped into the experiments, and of
// the kernel's functions the stacks hold, and returns warnings for those it could not write.
func (c *converter) writeArchives() []string {
	var warns []string
	paths := make([]string, 0, len(c.used))
	for p := range c.used {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if !strings.HasPrefix(path, "/") && path != "[vdso]" {
			continue
		}
		id := c.buildIDs[path]
		if id == "" {
			id = c.f.BuildIDOf(path)
		}
		file, why := c.object(path, id, c.offsets[path])
		var err error
		switch {
		case file == "":
			err = fmt.Errorf("%s", why)
		case path == "[vdso]":
			var a *experiment.Archive
			if a, err = archive.VDSO(); err == nil {
				err = experiment.WriteArchive(c.dir, a)
			}
		case file == path:
			err = archive.Write(c.dir, path)
		default:
			var a *experiment.Archive
			if a, err = archive.Build(file); err == nil {
				a.Path = path
				err = experiment.WriteArchive(c.dir, a)
			}
		}
		if err != nil {
			warns = append(warns, fmt.Sprintf("%q is not archived: %v; its functions are not named", path, err))
		}
	}
	if len(c.kernelPCs) == 0 {
		return warns
	}
	if !c.sameMachine() {
		return append(warns, fmt.Sprintf("kernel functions are not named: the profile was recorded on %q (Linux %q), not this machine's kernel",
			c.f.Hostname, c.f.OSRelease))
	}
	addrs := make([]uint64, 0, 2*len(c.kernelPCs))
	for pc := range c.kernelPCs {
		addrs = append(addrs, pc, pc-1) // a return address can be just past its call
	}
	a, err := archive.KernelAt(addrs)
	if a != nil {
		a.Symbols = archive.UsedSymbols(a, addrs)
		if werr := experiment.WriteArchive(c.dir, a); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		warns = append(warns, "kernel symbols: "+err.Error())
	}
	return warns
}
