// Package regfile opens files that an experiment holds or names (its XML, data and trace files,
// archives, copies, load objects, source files) so that a crafted or damaged experiment cannot hang
// or exhaust er: a file is opened without blocking (O_NONBLOCK, so a FIFO or a device does not wait
// for a writer), it must be a regular file (checked with fstat on the opened file, so a link swapped
// in between cannot change it), not a file of /proc, /sys or another of the kernel's file systems
// (fstatfs: /proc/kcore is a regular file of 128 TiB), and it is read with a size limit that comes
// from its format.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// NotRegularError says that a file is not a regular file: a FIFO, a device, a socket or a directory.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Error implements error.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file but %s; an experiment holds and names only regular files (replace it with the file it stands for, or remove it)",
		e.Path, Kind(e.Mode))
}

// TooLargeError says that a file is larger than its format allows.
type TooLargeError struct {
	Path        string
	Size, Limit int64
	What        string // what the file is, for the message: "log.xml", "a source file"
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, more than %s may hold (%d bytes); it is not read (it was damaged or replaced: restore it, or remove it)",
		e.Path, e.Size, e.What, e.Limit)
}

// PseudoFileError says that a file is one of the kernel's (procfs, sysfs, debugfs and the like):
// regular by its mode, but made up as it is read, of any size (/proc/kcore: 128 TiB), and saying
// things about the machine and its processes; no experiment holds or names one.
type PseudoFileError struct {
	Path string
	FS   string // the file system's name: "procfs"
}

// Error implements error.
func (e *PseudoFileError) Error() string {
	return fmt.Sprintf("%s: a file of the kernel's %s (such as /proc or /sys), not one that an experiment holds or names; it is not read", e.Path, e.FS)
}

// pseudoFS names the kernel's file systems whose files er never reads as files an experiment holds
// or names, by statfs magic.
var pseudoFS = map[int64]string{unix.PROC_SUPER_MAGIC: "procfs", unix.SYSFS_MAGIC: "sysfs", unix.DEBUGFS_MAGIC: "debugfs",
	unix.TRACEFS_MAGIC: "tracefs", unix.SECURITYFS_MAGIC: "securityfs", unix.EFIVARFS_MAGIC: "efivarfs",
	unix.CGROUP_SUPER_MAGIC: "cgroupfs", unix.CGROUP2_SUPER_MAGIC: "cgroup2fs", unix.BPF_FS_MAGIC: "bpffs",
	configfsMagic: "configfs", unix.PSTOREFS_MAGIC: "pstorefs", unix.DEVPTS_SUPER_MAGIC: "devpts",
	unix.SELINUX_MAGIC: "selinuxfs", unix.SMACK_MAGIC: "smackfs", unix.BINFMTFS_MAGIC: "binfmt_misc"}

// configfsMagic is configfs's statfs magic, which golang.org/x/sys/unix lacks.
const configfsMagic = 0x62656570

// CheckPseudo says whether the open file f (named path) is a file of one of the kernel's file
// systems: a *PseudoFileError, or nil.
func CheckPseudo(path string, f *os.File) error {
	var sfs unix.Statfs_t
	rc, err := f.SyscallConn() // not f.Fd(), which would make the file blocking
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = unix.Fstatfs(int(fd), &sfs) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		return &fs.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if name, ok := pseudoFS[int64(sfs.Type)]; ok {
		return &PseudoFileError{Path: path, FS: name}
	}
	return nil
}

// Kind names the kind of file that mode m describes, in words.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// Open opens the regular file at path for reading. It never blocks: the open is non-blocking, and
// a file that is not regular (after following symbolic links) is closed again and gives a
// *NotRegularError, and a file of /proc, /sys or another of the kernel's file systems (links
// followed) a *PseudoFileError. A missing file gives an error for which errors.Is(err,
// fs.ErrNotExist) holds.
//
// A file that stat already shows is not regular is not opened at all (opening some devices has
// effects of its own); the opened file is checked again with fstat, so that a file swapped in after
// the stat is refused too.
func Open(path string) (*os.File, fs.FileInfo, error) {
	if err := Check(path); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if err := CheckPseudo(path, f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadFile reads the regular file at path (opened as Open does). A file larger than limit bytes
// gives a *TooLargeError that names it as what; nothing is read then. Bytes appended while it is
// read are not read: the file's size when opened bounds the read.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpened(f, limit, what)
}

// ReadOpened is ReadFile of a file the caller opened (without blocking): it checks with fstat that
// f is a regular file of at most limit bytes, and reads it. The caller closes f.
func ReadOpened(f *os.File, limit int64, what string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: f.Name(), Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: f.Name(), Size: fi.Size(), Limit: limit, What: what}
	}
	b := make([]byte, fi.Size())
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) { // cut short while reading: what is there
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return b[:n], nil
}

// Check says whether path is a regular file (following symbolic links) without opening it: nil, or
// the error of stat, or a *NotRegularError.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return nil
}
