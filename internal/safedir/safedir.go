// Package safedir opens, creates and renames files beneath a directory without following symbolic links.
//
// An experiment can belong to another user, who can put a symbolic link where er expects a
// directory or a file (archives/ -> /etc, archives/objects -> /root/.ssh) and so make er, run by
// root, write where that user points. Everything er writes into an experiment therefore goes through
// a Dir: a directory opened once, by the path its caller names, and every name beneath it resolved
// from that descriptor with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) (where the kernel lacks
// openat2, one component at a time with O_NOFOLLOW), files created with O_EXCL|O_NOFOLLOW and
// written, moded and timed through their descriptors, renamed with renameat between directory
// descriptors. A link anywhere beneath the directory is an error that names it (*LinkError).
package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dir is a directory opened to work beneath it.
type Dir struct {
	fd   int
	name string // its path, for messages
}

// LinkError says that a name beneath a directory is a symbolic link, which safedir does not follow.
type LinkError struct {
	Path string // the link (or the name that passes through one)
}

// Error implements error.
func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link or passes through one: er does not follow links inside an experiment, which another user may have put there (remove the link, or put the directory or file itself there)", e.Path)
}

// Open opens the directory at p. Links in p itself are followed: p is the caller's choice.
func Open(p string) (*Dir, error) { return open(p, 0) }

// OpenNoFollow opens the directory at p, which must not itself be a symbolic link (a directory that
// er created, where a link can only have been swapped in).
func OpenNoFollow(p string) (*Dir, error) { return open(p, unix.O_NOFOLLOW) }

func open(p string, flags int) (*Dir, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		if flags&unix.O_NOFOLLOW != 0 && (err == unix.ELOOP || err == unix.ENOTDIR) {
			if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, &LinkError{Path: p}
			}
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return &Dir{fd: fd, name: p}, nil
}

// OpenExperiment opens the experiment directory at p (links in p followed, as Open) and checks that
// it holds log.xml or map.xml as a regular file, not a link: a directory that is not an experiment
// is not written into, whatever p was made to point at. nofollow refuses p itself being a link.
func OpenExperiment(p string, nofollow bool) (*Dir, error) {
	open := Open
	if nofollow {
		open = OpenNoFollow
	}
	d, err := open(p)
	if err != nil {
		return nil, err
	}
	for _, n := range []string{"log.xml", "map.xml"} {
		if fi, err := d.Lstat(n); err == nil && fi.Mode().IsRegular() {
			return d, nil
		}
	}
	d.Close()
	return nil, fmt.Errorf("%s: not an experiment: it has no log.xml or map.xml (as a regular file); nothing is written into it", p)
}

// Close closes d.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Path is the directory's path, as opened.
func (d *Dir) Path() string { return d.name }

// Join is the path of name beneath d, for messages and for readers that open by path.
func (d *Dir) Join(name string) string { return path.Join(d.name, name) }

// useOpenat2 is false once the kernel has said it has no openat2 (or a filter forbids it); tests
// clear it to run the fallback.
var useOpenat2 atomic.Bool

func init() { useOpenat2.Store(true) }

// checkName checks that name is relative and goes down only: no "..", no empty or "." components.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") {
		return fmt.Errorf("safedir: %q is not a relative name", name)
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("safedir: %q: a name beneath a directory has no empty, . or .. components", name)
		}
	}
	return nil
}

// openat opens name beneath d with flags (O_CLOEXEC and O_NOFOLLOW added) and mode, following no
// link on the way or at the end.
func (d *Dir) openat(name string, flags int, mode uint32) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if useOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for {
			fd, err := unix.Openat2(d.fd, name, &how)
			switch err {
			case nil:
				return fd, nil
			case unix.EINTR, unix.EAGAIN: // EAGAIN: a concurrent rename; try again
				continue
			case unix.ENOSYS, unix.EPERM, unix.E2BIG:
				// No openat2 (before Linux 5.6), or a filter forbids it: component by component,
				// which is as safe.
				useOpenat2.Store(false)
			default:
				return -1, d.pathErr("open", name, err)
			}
			break
		}
	}
	parent, last, err := d.walk(name)
	if err != nil {
		return -1, err
	}
	if parent != d.fd {
		defer unix.Close(parent)
	}
	fd, err := unix.Openat(parent, last, flags, mode)
	if err != nil {
		return -1, d.pathErr("open", name, err)
	}
	return fd, nil
}

// walk opens the directories of name but its last component, one at a time without following
// links, and returns the last one's descriptor (d's own when name has one component) and the last
// component.
func (d *Dir) walk(name string) (parent int, last string, err error) {
	comps := strings.Split(name, "/")
	parent = d.fd
	for i, c := range comps[:len(comps)-1] {
		fd, err := unix.Openat(parent, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if parent != d.fd {
			unix.Close(parent)
		}
		if err != nil {
			return -1, "", d.pathErr("open", strings.Join(comps[:i+1], "/"), err)
		}
		parent = fd
	}
	return parent, comps[len(comps)-1], nil
}

// pathErr wraps err of an operation on name: a link met gives a *LinkError that names it.
func (d *Dir) pathErr(op, name string, err error) error {
	switch err {
	case unix.ELOOP, unix.EXDEV, unix.ENOTDIR:
		if l := d.firstLink(name); l != "" {
			return &LinkError{Path: d.Join(l)}
		}
		if err != unix.ENOTDIR {
			return &LinkError{Path: d.Join(name)}
		}
	}
	return &fs.PathError{Op: op, Path: d.Join(name), Err: err}
}

// firstLink returns the first leading part of name that is a symbolic link, or "".
func (d *Dir) firstLink(name string) string {
	comps := strings.Split(name, "/")
	for i := range comps {
		p := strings.Join(comps[:i+1], "/")
		var st unix.Stat_t
		if unix.Fstatat(d.fd, p, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return ""
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return p
		}
	}
	return ""
}

// Sub opens the directory name beneath d.
func (d *Dir) Sub(name string) (*Dir, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{fd: fd, name: d.Join(name)}, nil
}

// MkdirAll opens the directory name beneath d, creating it and the directories above it that are
// missing with mode perm (less the umask).
func (d *Dir) MkdirAll(name string, perm fs.FileMode) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	cur := d
	comps := strings.Split(name, "/")
	for i, c := range comps {
		next, err := cur.Sub(c)
		if errors.Is(err, fs.ErrNotExist) {
			if err := unix.Mkdirat(cur.fd, c, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
				err = cur.pathErr("mkdir", c, err)
				if cur != d {
					cur.Close()
				}
				return nil, err
			}
			next, err = cur.Sub(c)
		}
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		next.name = d.Join(strings.Join(comps[:i+1], "/"))
		cur = next
	}
	return cur, nil
}

// OpenFile opens the file name beneath d for reading, without blocking (a FIFO does not wait for
// a writer). The caller checks what it opened (regfile.Check of the *os.File's Stat).
func (d *Dir) OpenFile(name string) (*os.File, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// Lstat describes name beneath d, not following a link at its end (nor on the way).
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	dir, last, err := d.parentOf(name)
	if err != nil {
		return nil, err
	}
	defer dir.closeUnlessOf(d)
	var st unix.Stat_t
	if err := unix.Fstatat(dir.fd, last, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return newStatInfo(last, &st), nil
}

// parentOf opens the directory that holds name (d itself for a single component).
func (d *Dir) parentOf(name string) (*Dir, string, error) {
	if err := checkName(name); err != nil {
		return nil, "", err
	}
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return d, name, nil
	}
	p, err := d.Sub(name[:i])
	if err != nil {
		return nil, "", err
	}
	return p, name[i+1:], nil
}

func (d *Dir) closeUnlessOf(root *Dir) {
	if d != root {
		d.Close()
	}
}

// tempSeq makes the names of temporary files unique within the process.
var tempSeq atomic.Uint64

// CreateTemp creates a new file in d (not beneath: prefix has no '/') named prefix, a unique part
// and suffix, with mode perm (less the umask), O_EXCL and O_NOFOLLOW: nothing that was there is
// opened. It returns the file, open for writing, and its name in d.
func (d *Dir) CreateTemp(prefix, suffix string, perm fs.FileMode) (*os.File, string, error) {
	if strings.Contains(prefix+suffix, "/") {
		return nil, "", fmt.Errorf("safedir: a temporary file's name %q has no '/'", prefix+suffix)
	}
	for try := 0; ; try++ {
		name := prefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tempSeq.Add(1), 10) +
			"-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + suffix
		fd, err := d.openat(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return os.NewFile(uintptr(fd), d.Join(name)), name, nil
	}
}

// WriteFile replaces the file name in d (one component) with data, atomically: data goes to a new
// temporary file in d (named ".NAME.*.tmp", which readers of experiments ignore) of mode perm less
// the umask, then renamed over name (renameat does not follow a link at name: it replaces the link).
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return d.WriteFileWith(name, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFileWith is WriteFile with the content written by write, into the temporary file.
func (d *Dir) WriteFileWith(name string, perm fs.FileMode, write func(*os.File) error) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("safedir: WriteFile of %q: one component only", name)
	}
	f, tmp, err := d.CreateTemp("."+name+".", ".tmp", perm)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, d, name)
	}
	if err != nil {
		_ = d.Remove(tmp)
	}
	return err
}

// Rename renames the entry old of d (one component) to new in nd (one component), replacing what
// new was: a link there is replaced, not followed.
func (d *Dir) Rename(old string, nd *Dir, new string) error {
	if strings.Contains(old, "/") || strings.Contains(new, "/") {
		return fmt.Errorf("safedir: rename %q to %q: one component each", old, new)
	}
	if err := checkName(old); err != nil {
		return err
	}
	if err := checkName(new); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, old, nd.fd, new); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(old), New: nd.Join(new), Err: err}
	}
	return nil
}

// Remove removes the file (not a directory) name of d, one component; a link is removed, not what
// it points to.
func (d *Dir) Remove(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("safedir: remove %q: one component only", name)
	}
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// Create creates the new file name beneath d (O_EXCL: nothing that is there is opened) with mode
// perm (less the umask), open for writing.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	fd, err := d.openat(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// Mkdir creates the new directory name in d (one component) with mode perm (less the umask).
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("safedir: mkdir %q: one component only", name)
	}
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	return nil
}

// Symlink creates the symbolic link name in d (one component) to target.
func (d *Dir) Symlink(target, name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("safedir: symlink %q: one component only", name)
	}
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: d.Join(name), Err: err}
	}
	return nil
}

// Lchtimes sets the times of the entry name of d (one component), a link's own when it is one.
func (d *Dir) Lchtimes(name string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(d.fd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "utimensat", Path: d.Join(name), Err: err}
	}
	return nil
}

// File returns the directory as an *os.File of its own (a duplicate descriptor: closing it does not
// close d), to read its entries, or to change its mode or times.
func (d *Dir) File() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "dup", Path: d.name, Err: err}
	}
	return os.NewFile(uintptr(fd), d.name), nil
}

// Readlink returns the target of the symbolic link name of d (one component).
func (d *Dir) Readlink(name string) (string, error) {
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("safedir: readlink %q: one component only", name)
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: d.Join(name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// ChmodDir changes the mode of the directory name beneath d, which must be a directory reached
// without a link, whatever its own permissions (a directory of mode 0 cannot be opened to read, but
// can be given a mode).
func (d *Dir) ChmodDir(name string, perm fs.FileMode) error {
	fd, err := d.openat(name, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &fs.PathError{Op: "chmod", Path: d.Join(name), Err: unix.ENOTDIR}
	}
	// An O_PATH descriptor has no fchmod; its /proc link names exactly the directory opened.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: d.Join(name), Err: err}
	}
	return nil
}

// Stat describes the directory itself (fstat).
func (d *Dir) Stat() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: d.name, Err: err}
	}
	return newStatInfo(path.Base(d.name), &st), nil
}

// Chtimes sets the access and modification times of the open file f (futimens).
func Chtimes(f *os.File, atime, mtime time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return &fs.PathError{Op: "futimens", Path: f.Name(), Err: errno}
	}
	return nil
}

// statInfo is an fs.FileInfo from fstatat; its Sys is a *syscall.Stat_t, as os.Lstat's.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func newStatInfo(name string, u *unix.Stat_t) statInfo {
	return statInfo{name: name, st: syscall.Stat_t{Dev: u.Dev, Ino: u.Ino, Nlink: u.Nlink, Mode: u.Mode, Uid: u.Uid, Gid: u.Gid,
		Rdev: u.Rdev, Size: u.Size, Blksize: u.Blksize, Blocks: u.Blocks,
		Atim: syscall.Timespec(u.Atim), Mtim: syscall.Timespec(u.Mtim), Ctim: syscall.Timespec(u.Ctim)}}
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Sec, s.st.Mtim.Nsec) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
