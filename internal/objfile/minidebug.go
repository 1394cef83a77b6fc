package objfile

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// maxDebugData bounds what a .gnu_debugdata section may decompress to: a symbol table of 64 MiB
// names a million functions, and a crafted section must not make er allocate more.
const maxDebugData = 64 << 20

// MiniDebugInfo returns the ELF image that the file's .gnu_debugdata section holds (MiniDebugInfo,
// as Fedora and RHEL ship their stripped objects): an xz-compressed file whose .symtab names the
// local functions that stripping removed. It returns nil, nil when the file has no such section,
// and an error naming the file when the section cannot be decompressed or is not ELF.
func (f *File) MiniDebugInfo() (mf *File, err error) {
	defer func() {
		if p := recover(); p != nil {
			mf, err = nil, fmt.Errorf("objfile: %s: malformed .gnu_debugdata: %v", f.name, p)
		}
	}()
	s := f.elf.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Size > maxDebugData {
		return nil, fmt.Errorf("objfile: %s: .gnu_debugdata of %d bytes: more than the %d allowed", f.name, s.Size, maxDebugData)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: reading .gnu_debugdata: %w", f.name, err)
	}
	img, err := unxz(data, maxDebugData)
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: .gnu_debugdata: %w", f.name, err)
	}
	return NewFile(f.name+"[.gnu_debugdata]", bytes.NewReader(img))
}
