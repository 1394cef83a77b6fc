package analysis

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"er/internal/archive"
	"er/internal/compact"
	"er/internal/debuginfo"
	"er/internal/experiment"
	"er/internal/regfile"
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
	// Code reads the bytes at link-time addresses [lo, hi). Nil when the code cannot be read. It is
	// called from several goroutines at once (instructionStartsAhead).
	Code func(lo, hi uint64) ([]byte, error)
	// Note, when not empty, is a warning to show once: that Path is an archived copy, and why.
	Note string
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
	} else if err := info.Err(); err != nil {
		// A separate debug file found and not used: another build's (its CRC or build id differs),
		// unreadable, or without DWARF. Its symbols were not used either (archive.Build).
		of.Note = fmt.Sprintf("no source lines or inlined functions for %s: %s", path, strings.TrimPrefix(err.Error(), "debuginfo: "))
	}
	return of, nil
}

// SameFile checks that the file at path is the load object that archive a describes: its GNU build
// id equals the archive's, or, when the archive has none, its size and modification time are the
// archive's.
func SameFile(path string, a *experiment.Archive) error { return archive.SameFile(path, a) }

// WithArchivedCopies wraps open, an Options.OpenFile, for the experiments in dirs: when the file of
// a load object is missing or is no longer the file that was profiled, and `er archive` kept a copy
// of it in the archives of one of the experiments (or of their founders), it opens that copy
// instead, and the ObjectFile's Note says so. Without a copy, open's error stands.
func WithArchivedCopies(open func(path string, a *experiment.Archive) (*ObjectFile, error), dirs []string) func(path string, a *experiment.Archive) (*ObjectFile, error) {
	return func(path string, a *experiment.Archive) (*ObjectFile, error) {
		of, err := open(path, a)
		if err == nil {
			return of, nil
		}
		cp, compact, ferr := archive.FindObject(dirs, a)
		if ferr != nil {
			return nil, fmt.Errorf("%w; no archived copy either: %v", err, ferr)
		}
		if cp == "" {
			return nil, err
		}
		reopen := open
		if compact {
			reopen = OpenCompact
		}
		of, cerr := reopen(cp, a)
		if cerr != nil {
			return nil, fmt.Errorf("%w; the archived copy %s cannot be used either: %v", err, cp, cerr)
		}
		why := "the original changed"
		if errors.Is(err, fs.ErrNotExist) {
			why = "the original is missing"
		}
		of.Note = fmt.Sprintf("using the archived copy of %s: %s", path, why)
		return of, nil
	}
}

// OpenCompact opens the compact archive at file (package compact) of the load object that archive a
// describes: the code of the functions that were used, an extract of its debug information.
func OpenCompact(file string, a *experiment.Archive) (*ObjectFile, error) {
	o, err := compact.Read(file)
	if err != nil {
		return nil, err
	}
	if a == nil || o.Path != a.Path || (a.BuildID != "" && o.BuildID != a.BuildID) || (a.BuildID == "" && (o.Size != a.Size || o.Mtime != a.Mtime)) {
		return nil, fmt.Errorf("%s is the compact archive of another file than the one profiled (%s, build id %s)", file, o.Path, orNone(o.BuildID))
	}
	of := &ObjectFile{Path: file, Code: o.Code}
	if o.Debug != nil {
		info, err := debuginfo.FromExtract(file, o.Debug)
		if err != nil {
			return nil, err
		}
		info.BuildID = o.BuildID
		of.Debug = info
	}
	return of, nil
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
			f, _, err := regfile.Open(path) // not a FIFO: that would block
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
