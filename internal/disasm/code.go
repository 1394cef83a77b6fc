package disasm

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"

	"er/internal/regfile"
)

// MaxCode is the most bytes Code reads at once.
const MaxCode = 64 << 20

// Code reads the bytes at link-time addresses [lo,hi) of the ELF file at
// path, from the PT_LOAD segment that holds them in the file, or else from
// the section (not NOBITS) that does.
func Code(path string, lo, hi uint64) ([]byte, error) {
	if hi <= lo || hi-lo > MaxCode {
		return nil, fmt.Errorf("disasm: %s: bad address range [%#x,%#x)", path, lo, hi)
	}
	f, _, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("disasm: %w", err)
	}
	defer f.Close()
	return readCode(path, f, lo, hi)
}

// readCode is Code for the ELF image r of the file named path.
func readCode(path string, r io.ReaderAt, lo, hi uint64) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("disasm: %s: malformed ELF: %v", path, p)
		}
	}()
	var magic [4]byte
	if n, _ := r.ReadAt(magic[:], 0); n < 4 || string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("disasm: %s: not an ELF file (it does not start with ELF's magic number; what it holds is not shown)", path)
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("disasm: %s: %w", path, err)
	}
	off, ok := fileOffset(ef, lo, hi)
	if !ok {
		for _, s := range ef.Sections {
			if s.Type == elf.SHT_NOBITS && s.Flags&elf.SHF_EXECINSTR != 0 && lo < s.Addr+s.Size && hi > s.Addr {
				return nil, fmt.Errorf("disasm: %s: [%#x,%#x) lies in %s, which has no bytes in this file (a file from objcopy --only-keep-debug?)", path, lo, hi, s.Name)
			}
		}
		return nil, fmt.Errorf("disasm: %s: no segment or section holds the bytes of [%#x,%#x)", path, lo, hi)
	}
	b = make([]byte, hi-lo)
	n, err := r.ReadAt(b, int64(off))
	if n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("disasm: %s: reading %d bytes at file offset %#x: %w", path, len(b), off, err)
	}
	return b, nil
}

// fileOffset finds where the bytes of [lo,hi) lie in the file.
func fileOffset(ef *elf.File, lo, hi uint64) (uint64, bool) {
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && lo >= p.Vaddr && hi-p.Vaddr <= p.Filesz && hi > p.Vaddr {
			return p.Off + (lo - p.Vaddr), true
		}
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 && lo >= s.Addr && hi > s.Addr && hi-s.Addr <= s.Size {
			return s.Offset + (lo - s.Addr), true
		}
	}
	return 0, false
}
