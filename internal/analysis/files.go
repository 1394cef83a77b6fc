package analysis

import (
	"errors"
	"fmt"
	"os"

	"er/internal/debuginfo"
	"er/internal/experiment"
	"er/internal/objfile"
)

// DebugInfo is what analysis reads from a load object's debug information: inline chains and line
// rows at link-time addresses. *debuginfo.Info implements it.
type DebugInfo interface {
	// Frames returns the source frames at pc, innermost first: for code inlined into f, the inlined
	// function(s) with their file:line, then f with the line of the call. ok is false without line
	// information at pc.
	Frames(pc uint64) ([]debuginfo.Frame, bool)
	// Rows lists the line-table rows covering [lo, hi), by address.
	Rows(lo, hi uint64) []debuginfo.LineRow
	// Function describes the outermost function containing pc.
	Function(pc uint64) (debuginfo.Function, bool)
	// Files lists the source files of the line tables.
	Files() []string
}

// ObjectFile is the file of a load object, checked to be the file that was profiled.
type ObjectFile struct {
	Path  string
	Debug DebugInfo // nil when the file has no debug information
	// Code reads the bytes at link-time addresses [lo, hi). Nil when the code cannot be read.
	Code func(lo, hi uint64) ([]byte, error)
}

// OpenObjectFile is the usual Options.OpenFile: it opens the file at path when it is the file that
// archive a describes (the same GNU build id; without one, the same size and modification time),
// with its debug information (DWARF in the file, or a separate debug file found by build id or
// .gnu_debuglink). A file without DWARF gives an ObjectFile without Debug; a different, missing or
// unreadable file gives an error saying why.
func OpenObjectFile(path string, a *experiment.Archive) (*ObjectFile, error) {
	if err := SameFile(path, a); err != nil {
		return nil, err
	}
	of := &ObjectFile{Path: path, Code: segmentReader(path, a.Segments)}
	info, err := debuginfo.Open(path)
	if err != nil {
		return nil, err
	}
	if info.HasDWARF {
		of.Debug = info
	}
	return of, nil
}

// SameFile checks that the file at path is the load object that archive a describes: its GNU build
// id equals the archive's, or, when the archive has none, its size and modification time are the
// archive's.
func SameFile(path string, a *experiment.Archive) error {
	if a == nil {
		return errors.New("the experiment has no archive for it to check the file against")
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if a.BuildID != "" {
		f, err := objfile.Open(path)
		if err != nil {
			return err
		}
		id := f.BuildID()
		f.Close()
		if id != a.BuildID {
			return fmt.Errorf("%s has changed since the experiment (build id %s, was %s)", path, orNone(id), a.BuildID)
		}
		return nil
	}
	if st.Size() != a.Size || st.ModTime().UnixNano() != a.Mtime {
		return fmt.Errorf("%s has changed since the experiment (size %d, modified %d; was %d, %d)", path, st.Size(), st.ModTime().UnixNano(), a.Size, a.Mtime)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// segmentReader reads link-time addresses of the file at path through its PT_LOAD segments.
func segmentReader(path string, segs []experiment.Segment) func(lo, hi uint64) ([]byte, error) {
	return func(lo, hi uint64) ([]byte, error) {
		if hi <= lo || hi-lo > 64<<20 {
			return nil, fmt.Errorf("%s: bad code range [%#x, %#x)", path, lo, hi)
		}
		for _, s := range segs {
			if lo < s.Vaddr || hi > s.Vaddr+s.Filesz {
				continue
			}
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			buf := make([]byte, hi-lo)
			if n, err := f.ReadAt(buf, int64(s.Offset+lo-s.Vaddr)); n < len(buf) {
				return nil, fmt.Errorf("%s: reading [%#x, %#x): %w", path, lo, hi, err)
			}
			return buf, nil
		}
		return nil, fmt.Errorf("%s: no segment holds the addresses [%#x, %#x)", path, lo, hi)
	}
}
