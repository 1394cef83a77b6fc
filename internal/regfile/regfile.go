// Package regfile opens files that an experiment holds or names (its XML, data and trace files,
// archives, copies, load objects, source files) so that a crafted or damaged experiment cannot hang
// or exhaust er: a file is opened without blocking (O_NONBLOCK, so a FIFO or a device does not wait
// for a writer), it must be a regular file (checked with fstat on the opened file, so a link swapped
// in between cannot change it), and it is read with a size limit that comes from its format.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
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
// *NotRegularError. A missing file gives an error for which errors.Is(err, fs.ErrNotExist) holds.
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
	return f, fi, nil
}

// ReadFile reads the regular file at path (opened as Open does). A file larger than limit bytes
// gives a *TooLargeError that names it as what; nothing is read then. Bytes appended while it is
// read are not read: the file's size when opened bounds the read.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Limit: limit, What: what}
	}
	b := make([]byte, fi.Size())
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) { // cut short while reading: what is there
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
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
