package debuginfo

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"er/internal/objfile"
	"er/internal/regfile"
)

// findSeparate looks for a separate debug file of ef (the file in.Path):
// by build id, then by .gnu_debuglink, and loads the first that fits.
func (in *Info) findSeparate(ef *elf.File, debugDirs []string) {
	var looked []string
	var problems []string
	if id := in.BuildID; len(id) >= 4 {
		for _, dir := range debugDirs {
			p := filepath.Join(dir, ".build-id", id[:2], id[2:]+".debug")
			looked = append(looked, p)
			ok, why := in.tryDebugFile(p, "build-id", func(dbg *elf.File) string {
				if got := buildID(dbg); got != id {
					return fmt.Sprintf("its build id is %q, not %q", got, id)
				}
				return ""
			})
			if ok {
				return
			}
			if why != "" {
				problems = append(problems, why)
			}
		}
	}
	if name, crc, ok := debugLink(ef); ok {
		paths := debugLinkPaths(in.Path, name, debugDirs)
		for _, p := range paths {
			if st, err := os.Stat(p); err != nil || sameFile(st, in.Path) {
				continue
			}
			ok, why := in.tryDebugFile(p, "debuglink", func(*elf.File) string {
				got, err := fileCRC(p)
				if err != nil {
					return err.Error()
				}
				if got != crc {
					return fmt.Sprintf("CRC %08x does not match the %08x in .gnu_debuglink of %s", got, crc, in.Path)
				}
				return ""
			})
			if ok {
				return
			}
			if why != "" {
				problems = append(problems, why)
			}
		}
		looked = append(looked, paths...)
	}
	in.Note = "no DWARF: " + in.Path + " has no .debug_info"
	if len(looked) > 0 {
		in.Note += "; looked for " + strings.Join(looked, ", ")
	}
	if len(problems) > 0 {
		in.Note += "; " + strings.Join(problems, "; ")
		in.err = fmt.Errorf("debuginfo: %s", strings.Join(problems, "; "))
	}
}

// tryDebugFile loads the debug file p when it exists, is ELF with DWARF, and
// check (given the parsed file) returns "". It returns why not otherwise
// ("" when p does not exist).
func (in *Info) tryDebugFile(p, via string, check func(*elf.File) string) (bool, string) {
	f, _, err := regfile.Open(p) // a .gnu_debuglink may name a FIFO or a device: never wait for it
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, ""
		}
		return false, err.Error()
	}
	defer f.Close()
	dbg, err := newELF(p, f)
	if err != nil {
		return false, err.Error()
	}
	if !hasDWARF(dbg) {
		return false, p + ": no .debug_info"
	}
	if why := check(dbg); why != "" {
		return false, p + ": " + why
	}
	if err := in.load(p, dbg, f); err != nil {
		return false, err.Error()
	}
	in.Source, in.Via = p, via
	in.Note = fmt.Sprintf("DWARF from %s (found by %s)", p, via)
	return true, ""
}

// buildID returns the GNU build id of ef in hex, or "".
func buildID(ef *elf.File) (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if data, err := s.Data(); err == nil {
			if id := objfile.BuildIDFromNotes(data, ef.ByteOrder, s.Addralign); id != "" {
				return id
			}
		}
	}
	return ""
}

// The .gnu_debuglink route is objfile's, shared with the symbol archives (archive.Build), which
// take the local functions from the same debug file.
var (
	debugLink      = objfile.ReadDebugLink
	debugLinkPaths = objfile.DebugLinkPaths
	fileCRC        = objfile.FileCRC
)

// sameFile reports whether st is the file at path.
func sameFile(st os.FileInfo, path string) bool {
	st2, err := os.Stat(path)
	return err == nil && os.SameFile(st, st2)
}
