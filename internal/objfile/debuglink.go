package objfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"er/internal/regfile"
)

// DebugDirs are the global debug directories, searched for separate debug files by build id
// (DIR/.build-id/xx/yyyy.debug) and by .gnu_debuglink (DIR/<the object's directory>/NAME):
// $ER_DEBUG_DIR, a colon-separated list as GDB's debug-file-directory, which replaces the default,
// /usr/lib/debug.
func DebugDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("ER_DEBUG_DIR")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{"/usr/lib/debug"}
	}
	return dirs
}

// DebugLink returns the name of the separate debug file and its CRC-32 that the file's
// .gnu_debuglink section holds; ok is false without one (or a malformed one).
func (f *File) DebugLink() (name string, crc uint32, ok bool) { return ReadDebugLink(f.elf) }

// ReadDebugLink reads the .gnu_debuglink section of ef: a file name, NUL, padding to 4 bytes, and
// the CRC-32 of the debug file. A name with a '/' is refused, as GDB refuses it.
func ReadDebugLink(ef *elf.File) (name string, crc uint32, ok bool) {
	defer func() {
		if recover() != nil {
			name, crc, ok = "", 0, false
		}
	}()
	s := ef.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size > 4096 {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0, false
	}
	off := (i + 4) &^ 3
	if off+4 > len(data) {
		return "", 0, false
	}
	name = string(data[:i])
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return "", 0, false
	}
	order := ef.ByteOrder
	if order == nil {
		order = binary.LittleEndian
	}
	return name, order.Uint32(data[off:]), true
}

// DebugLinkPaths lists where a debug file named name for the file at path may be, in the order
// GDB looks: next to the file, in its .debug/ subdirectory, and under each global debug directory
// followed by the file's directory; both for the directory as given and with symbolic links
// resolved.
func DebugLinkPaths(path, name string, debugDirs []string) []string {
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Join(d, name), filepath.Join(d, ".debug", name))
	}
	for _, g := range debugDirs {
		for _, d := range dirs {
			if abs, err := filepath.Abs(d); err == nil {
				out = append(out, filepath.Join(g, abs, name))
			}
		}
	}
	return out
}

// FileCRC is the CRC-32 (IEEE, as in .gnu_debuglink) of the file at p, which must be a regular
// file (a FIFO or a device is refused, never waited for).
func FileCRC(p string) (uint32, error) {
	f, _, err := regfile.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return h.Sum32(), nil
}
