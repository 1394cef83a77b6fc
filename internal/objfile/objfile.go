// Package objfile reads load objects (ELF executables, shared libraries, the vdso and the kernel's symbol table) for symbolization.
package objfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"er/internal/experiment"
	"er/internal/regfile"
	"er/internal/unwind"
)

// File is an open ELF load object.
type File struct {
	name   string
	elf    *elf.File
	closer io.Closer
}

// Open opens the ELF file at path. A file that is not ELF, or is truncated
// or malformed, gives an error naming the file and what is wrong.
func Open(path string) (*File, error) {
	fh, _, err := regfile.Open(path) // a FIFO or a device named as an object never hangs er
	if err != nil {
		return nil, fmt.Errorf("objfile: %w", err)
	}
	f, err := NewFile(path, fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// NewFile reads an ELF image from r; name is used in errors only (for
// example "[vdso]" for an image read from memory). The File does not close r.
func NewFile(name string, r io.ReaderAt) (f *File, err error) {
	var magic [4]byte
	n, err := r.ReadAt(magic[:], 0)
	if n < len(magic) {
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("objfile: %s: file too short (%d bytes) to be ELF", name, n)
		}
		return nil, fmt.Errorf("objfile: %s: %w", name, err)
	}
	if string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("objfile: %s: not an ELF file (it does not start with ELF's magic number; what it holds is not shown)", name)
	}
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("objfile: %s: malformed ELF: %v", name, p)
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("objfile: %s: truncated ELF file: %w", name, err)
		}
		return nil, fmt.Errorf("objfile: %s: malformed ELF: %w", name, err)
	}
	return &File{name: name, elf: ef}, nil
}

// Name is the name the File was opened with.
func (f *File) Name() string { return f.name }

// Close releases the underlying file, if Open opened it.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// Segments returns the PT_LOAD segments, in program-header order.
func (f *File) Segments() []experiment.Segment {
	var segs []experiment.Segment
	for _, p := range f.elf.Progs {
		if p.Type == elf.PT_LOAD {
			segs = append(segs, experiment.Segment{Vaddr: p.Vaddr, Offset: p.Off, Filesz: p.Filesz, Memsz: p.Memsz})
		}
	}
	return segs
}

// BuildID returns the GNU build id (NT_GNU_BUILD_ID) in hex, or "" when the
// file has none or its notes cannot be read.
func (f *File) BuildID() (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	found := false
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		found = true
		if data, err := s.Data(); err == nil {
			if id := BuildIDFromNotes(data, f.elf.ByteOrder, s.Addralign); id != "" {
				return id
			}
		}
	}
	if found {
		return ""
	}
	// No section headers (or no note sections): try the PT_NOTE segments.
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		if id := BuildIDFromNotes(data, f.elf.ByteOrder, p.Align); id != "" {
			return id
		}
	}
	return ""
}

// ntGNUBuildID is the note type of a GNU build id.
const ntGNUBuildID = 3

// BuildIDFromNotes scans ELF notes (as in a SHT_NOTE section, a PT_NOTE
// segment or /sys/kernel/notes) for a GNU build id and returns it in hex, or
// "" when there is none. align is the notes' alignment (4 or 8; other values
// mean 4). Malformed notes end the scan.
func BuildIDFromNotes(data []byte, order binary.ByteOrder, align uint64) string {
	if align != 8 {
		align = 4
	}
	pad := func(n uint64) uint64 { return (n + align - 1) &^ (align - 1) }
	for len(data) >= 12 {
		namesz := uint64(order.Uint32(data[0:]))
		descsz := uint64(order.Uint32(data[4:]))
		typ := order.Uint32(data[8:])
		rest := uint64(len(data) - 12)
		if pad(namesz) > rest || descsz > rest-pad(namesz) {
			return ""
		}
		name := data[12 : 12+namesz]
		desc := data[12+pad(namesz) : 12+pad(namesz)+descsz]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" && len(desc) > 0 {
			return hex.EncodeToString(desc)
		}
		next := 12 + pad(namesz) + pad(descsz)
		if next > uint64(len(data)) {
			return ""
		}
		data = data[next:]
	}
	return ""
}

// FDERanges returns the link-time address ranges [lo, hi) of the file's call frame entries
// (.eh_frame and .debug_frame), sorted by start, one per start: the bounds of its functions, named
// or not. A file without call frame information gives none.
func (f *File) FDERanges() (rs [][2]uint64, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("objfile: %s: malformed call frame information: %v", f.name, p)
		}
	}()
	t, err := unwind.ParseELF(f.elf)
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: %w", f.name, err)
	}
	return t.FunctionRanges()
}
