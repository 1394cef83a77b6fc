package expfiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/regfile"
	"er/internal/safedir"
)

// IsExperiment reports whether dir is an experiment: a directory (or a link to one) whose name ends
// in .er and that holds log.xml.
func IsExperiment(dir string) bool {
	if !experimentName(dir) {
		return false
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	li, err := os.Lstat(filepath.Join(dir, experiment.LogFile))
	return err == nil && li.Mode().IsRegular()
}

// experimentName reports whether path is named like an experiment: NAME.er.
func experimentName(path string) bool {
	base := filepath.Base(filepath.Clean(path))
	return strings.HasSuffix(base, ExperimentSuffix) && base != ExperimentSuffix
}

// Founder returns the experiment that holds dir when dir is a subexperiment (a descendant process's
// experiment, such as test.1.er/_f1.er, inside its founder's directory), and "" otherwise.
func Founder(dir string) string {
	if !IsExperiment(dir) {
		return ""
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if !experimentName(parent) {
		// "_f1.er" given from inside its founder: look at the real parent.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return ""
		}
		parent = filepath.Dir(abs)
	}
	if IsExperiment(parent) {
		return parent
	}
	return ""
}

// checkExperiment checks that path is an experiment that er rm, cp or mv may take as a whole:
// it exists, is a directory named NAME.er holding log.xml, and is not a subexperiment (unless
// allowSub). A symbolic link is refused unless followLink (then the experiment it points to is checked).
func checkExperiment(path string, followLink, allowSub bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such experiment", path)
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		if !followLink {
			return fmt.Errorf("%s is a symbolic link (to %s), not an experiment: give the experiment itself, or remove the link with rm", path, target)
		}
		if fi, err = os.Stat(path); err != nil {
			return fmt.Errorf("%s: a symbolic link to %s, which cannot be read: %w", path, target, errors.Unwrap(err))
		}
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s: not an experiment: an experiment is a directory (NAME%s holding %s)", path, ExperimentSuffix, experiment.LogFile)
	case !experimentName(path):
		return fmt.Errorf("%s: not an experiment: an experiment's name ends in %s", path, ExperimentSuffix)
	case !IsExperiment(path):
		return fmt.Errorf("%s: not an experiment: it has no %s", path, experiment.LogFile)
	}
	if f := Founder(path); f != "" && !allowSub {
		return &subexperimentError{path: path, founder: f}
	}
	return nil
}

// subexperimentError says that a subexperiment was given alone.
type subexperimentError struct{ path, founder string }

func (e *subexperimentError) Error() string {
	return fmt.Sprintf("%s is a subexperiment of %s: a descendant process's data, whose load objects are archived in %s",
		e.path, e.founder, e.founder)
}

// Remove removes the experiment dir with everything in it, its subexperiments included. It never
// follows a symbolic link: links inside the experiment are removed, not what they point to, and dir
// itself must not be a link. Directories inside that the user may not write are made writable first.
// A subexperiment may be removed alone.
func Remove(dir string) error {
	dir = filepath.Clean(dir)
	if err := checkExperiment(dir, false, true); err != nil {
		return err
	}
	return removeTree(dir)
}

// removeTree removes dir and everything in it without following links.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	makeWritable(dir)
	return os.RemoveAll(dir)
}

// makeWritable gives the owner read, write and search permission on dir and every directory below
// it, so that their entries can be removed. Links are not followed: each directory is reached from
// its parent's descriptor, and a link swapped in for one is refused (safedir).
func makeWritable(dir string) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return
	}
	d, err := safedir.Open(filepath.Dir(dir))
	if err != nil {
		return
	}
	defer d.Close()
	makeWritableIn(d, filepath.Base(dir))
}

// makeWritableIn is makeWritable of the directory name in parent.
func makeWritableIn(parent *safedir.Dir, name string) {
	fi, err := parent.Lstat(name)
	if err != nil || !fi.IsDir() {
		return
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		_ = parent.ChmodDir(name, fi.Mode().Perm()|0o700)
	}
	d, err := parent.Sub(name)
	if err != nil {
		return
	}
	defer d.Close()
	f, err := d.File()
	if err != nil {
		return
	}
	entries, _ := f.ReadDir(-1)
	f.Close()
	for _, e := range entries {
		if e.IsDir() {
			makeWritableIn(d, e.Name())
		}
	}
}

// checkDestination checks that dst can become a new experiment: named NAME.er, absent, in an
// existing directory that is not inside an experiment, and not inside src.
func checkDestination(src, dst string) error {
	if !experimentName(dst) {
		return fmt.Errorf("%s: an experiment's name must end in %s", dst, ExperimentSuffix)
	}
	if _, err := os.Lstat(dst); err == nil {
		what := "a file"
		if IsExperiment(dst) {
			what = "an experiment"
		} else if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
			what = "a directory"
		}
		return fmt.Errorf("%s already exists (%s); it is not replaced: remove it first or choose another name", dst, what)
	}
	parent := filepath.Dir(dst)
	fi, err := os.Stat(parent)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: directory %s does not exist", dst, parent)
	}
	realParent, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return err
	}
	if realParent, err = filepath.Abs(realParent); err != nil {
		return err
	}
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if realSrc, err = filepath.Abs(realSrc); err != nil {
		return err
	}
	if realDst := filepath.Join(realParent, filepath.Base(dst)); realDst == realSrc || strings.HasPrefix(realDst, realSrc+"/") {
		return fmt.Errorf("%s is inside %s: an experiment cannot be put inside itself", dst, src)
	}
	if e := enclosingExperiment(realParent); e != "" {
		return fmt.Errorf("%s would be inside experiment %s, as one of its subexperiments: choose a destination outside any experiment", dst, e)
	}
	return nil
}

// enclosingExperiment returns dir or its nearest ancestor that is an experiment, or "".
func enclosingExperiment(dir string) string {
	for {
		if IsExperiment(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Copy copies the experiment src, its subexperiments included, to dst, which must not exist and
// whose name must end in .er. Files and directories keep their permissions and modification times;
// symbolic links inside the experiment are copied as links. src may be a link to an experiment; a
// subexperiment cannot be copied alone. After an error the partial copy is removed.
func Copy(src, dst string) error {
	src, dst = filepath.Clean(src), filepath.Clean(dst)
	if err := checkExperiment(src, true, false); err != nil {
		return err
	}
	if err := checkDestination(src, dst); err != nil {
		return err
	}
	return copyExperiment(src, dst)
}

// copyHook, where set (by tests), runs after each entry of a directory being copied was looked at
// and before it is copied, with the paths of the directory and of its copy: where another user
// could swap a file of the source for a link, or the copy's directory for one.
var copyHook func(srcDir, dstDir, name string)

// copyExperiment copies src to the new directory dst, removing dst again after an error.
func copyExperiment(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", dst, unwrapPath(err))
	}
	if err := copyInto(src, dst, fi); err != nil {
		if rerr := removeTree(dst); rerr != nil {
			return fmt.Errorf("copying %s to %s: %w; the partial copy could not be removed either: %v", src, dst, err, rerr)
		}
		return fmt.Errorf("copying %s to %s: %w; the partial copy was removed", src, dst, err)
	}
	return nil
}

// copyInto copies the contents of the experiment src (a link to one is followed: checked before)
// into the new directory dst, each opened once: nothing beneath either is reached through a link
// (safedir), so that a link swapped into the source makes er read no file outside it (er cp run by
// root on another user's experiment) and a link swapped in for the copy makes er write nowhere else.
func copyInto(src, dst string, fi fs.FileInfo) error {
	s, err := safedir.Open(src)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := safedir.OpenNoFollow(dst) // made just now: a link is one swapped in since
	if err != nil {
		return err
	}
	defer d.Close()
	return copyDir(s, d, fi)
}

// copyDir copies the contents of directory src into the existing directory dst, then gives dst the
// mode and times of src (fi).
func copyDir(src, dst *safedir.Dir, fi fs.FileInfo) error {
	sf, err := src.File()
	if err != nil {
		return err
	}
	entries, err := sf.ReadDir(-1)
	sf.Close()
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		name := e.Name()
		info, err := src.Lstat(name)
		if err != nil {
			return err
		}
		if copyHook != nil {
			copyHook(src.Path(), dst.Path(), name)
		}
		switch m := info.Mode(); {
		case collectionOnly(name, m):
			continue
		case m.IsDir():
			if err := dst.Mkdir(name, 0o700); err != nil {
				return err
			}
			if err := copySubdir(src, dst, name, info); err != nil {
				return err
			}
		case m.IsRegular():
			if err := copyFile(src, dst, name, info); err != nil {
				return err
			}
		case m&fs.ModeSymlink != 0:
			target, err := src.Readlink(name)
			if err != nil {
				return err
			}
			if err := dst.Symlink(target, name); err != nil {
				return err
			}
			a, mt := fileTimes(info)
			_ = dst.Lchtimes(name, a, mt) // best effort
		default:
			return fmt.Errorf("%s is a %s; an experiment holds only files, directories and symbolic links", src.Join(name), kind(m))
		}
	}
	df, err := dst.File()
	if err != nil {
		return err
	}
	defer df.Close()
	if err := df.Chmod(fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	a, mt := fileTimes(fi)
	return safedir.Chtimes(df, a, mt)
}

// copySubdir copies the directory name of src, described by fi, into the new directory name of dst.
func copySubdir(src, dst *safedir.Dir, name string, fi fs.FileInfo) error {
	s, err := src.Sub(name)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := dst.Sub(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return copyDir(s, d, fi)
}

// copyFile copies the regular file name of src to the new file name of dst with the mode and times
// of fi, what src's entry was.
func copyFile(src, dst *safedir.Dir, name string, fi fs.FileInfo) (err error) {
	// Without blocking, and only a regular file reached without a link: one swapped for a FIFO or a
	// link since fi is refused.
	in, err := src.OpenFile(name)
	if err != nil {
		return err
	}
	defer in.Close()
	ifi, err := in.Stat()
	if err != nil {
		return err
	}
	if !ifi.Mode().IsRegular() {
		return &regfile.NotRegularError{Path: src.Join(name), Mode: ifi.Mode()}
	}
	out, err := dst.Create(name, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	// The bytes the file has now: a file still being written (a live experiment) is copied as it is.
	if _, err := io.Copy(out, io.LimitReader(in, ifi.Size())); err != nil {
		return fmt.Errorf("%s: %w", src.Join(name), err)
	}
	if err := out.Chmod(fi.Mode().Perm()); err != nil { // no set-ID bits: see below
		return err
	}
	a, mt := fileTimes(fi)
	return safedir.Chtimes(out, a, mt)
}

// A copy of a file of an experiment has the file's permission bits, and not its set-user-ID,
// set-group-ID or sticky bits: a copy belongs to whoever runs er cp, so root's copy of another
// user's set-user-ID file (an experiment holds no program that needs one) would be a program of
// that user's that runs as root. A directory keeps all its mode.

// fileTimes returns the access and modification times of fi.
func fileTimes(fi fs.FileInfo) (atime, mtime time.Time) {
	mtime = fi.ModTime()
	atime = mtime
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return atime, mtime
}

// collectionOnly says whether an entry of an experiment belongs to its collection, not its data, and
// is not copied: er collect's FIFO .control and the disk space it kept in reserve, which stay in an
// experiment whose er collect was killed.
func collectionOnly(name string, m fs.FileMode) bool {
	return name == experiment.ControlName && m&fs.ModeNamedPipe != 0 || name == experiment.ReserveFile && m.IsRegular()
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// unwrapPath drops the *PathError wrapper (whose path the caller's message already names).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// rename renames without replacing an existing destination; tests replace it.
var rename = renameNoReplace

// renameNoReplace renames src to dst, failing with EEXIST if dst exists.
func renameNoReplace(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		// A file system without RENAME_NOREPLACE.
		if _, lerr := os.Lstat(dst); lerr == nil {
			return &os.LinkError{Op: "rename", Old: src, New: dst, Err: unix.EEXIST}
		}
		return os.Rename(src, dst)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: err}
	}
	return nil
}

// Move moves the experiment src, its subexperiments included, to dst, which must not exist and whose
// name must end in .er. It renames; across file systems it copies (keeping permissions and
// modification times) and then removes src. src must not be a symbolic link or a subexperiment.
func Move(src, dst string) error {
	src, dst = filepath.Clean(src), filepath.Clean(dst)
	if err := checkExperiment(src, false, false); err != nil {
		return err
	}
	if err := checkDestination(src, dst); err != nil {
		return err
	}
	return moveExperiment(src, dst)
}

// moveExperiment renames src to dst, or copies and removes across file systems.
func moveExperiment(src, dst string) error {
	err := rename(src, dst)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EXDEV) {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("cannot move %s to %s: %w", src, dst, err)
	}
	if err := copyExperiment(src, dst); err != nil {
		return err
	}
	if err := removeTree(src); err != nil {
		return fmt.Errorf("%s was copied to %s (another file system), but removing %s failed: %w; remove it with er rm %s",
			src, dst, src, err, src)
	}
	return nil
}
