// Package archive builds the archived description of load objects (symbols and segments) and looks addresses up in it.
package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/regfile"
)

// Paths of the kernel's files read here; variables so tests can point them elsewhere.
var (
	kallsymsPath    = "/proc/kallsyms"
	kernelNotesPath = "/sys/kernel/notes"
	selfMapsPath    = "/proc/self/maps"
	selfMemPath     = "/proc/self/mem"
)

// Build describes the ELF load object at path: its size, modification time,
// build id, PT_LOAD segments and symbols. What it reads of an object with a build id is cached
// (see cacheDir and objectCacheFile).
func Build(path string) (*experiment.Archive, error) {
	fh, st, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer fh.Close()
	f, err := objfile.NewFile(path, fh)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	id := f.BuildID()
	var links []string
	if name, _, ok := f.DebugLink(); ok && id != "" {
		links = debugLinkCandidates(path, name)
	}
	cache := objectCacheFile(id, st.Size(), links...)
	if c := cached(cache, "elf"); c != nil && c.BuildID == id && c.Path == filepath.Base(path) {
		c.Path, c.Size, c.Mtime = path, st.Size(), st.ModTime().UnixNano()
		return c, nil
	}
	syms, err := functionSymbols(f, path, id)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	a := &experiment.Archive{
		Path:     path,
		Size:     st.Size(),
		Mtime:    st.ModTime().UnixNano(),
		BuildID:  id,
		Kind:     "elf",
		Segments: f.Segments(),
		Symbols:  syms,
	}
	if cache != "" {
		// Cached under the file's base name: SymFDE functions are named by it.
		c := *a
		c.Path = filepath.Base(path)
		store(cache, &c)
	}
	return a, nil
}

// Kernel describes the running kernel: its text symbols from /proc/kallsyms
// (absolute addresses, no segments) and its build id from
// /sys/kernel/notes when readable. When the kernel hides its addresses the
// archive has no symbols and the error (wrapping
// objfile.ErrNoKernelAddresses) says why; the archive is still usable.
//
// The symbols are cached per boot, set of loaded modules and user (see kernelCacheFile), so that
// only the first collection after a boot reads /proc/kallsyms.
func Kernel() (*experiment.Archive, error) {
	a := &experiment.Archive{Path: "[kernel]", Kind: "kernel"}
	if notes, err := os.ReadFile(kernelNotesPath); err == nil {
		a.BuildID = objfile.BuildIDFromNotes(notes, binary.NativeEndian, 4)
	}
	cache := kernelCacheFile()
	if c := cached(cache, "kernel"); c != nil && c.Path == "[kernel]" && c.BuildID == a.BuildID {
		return c, nil
	}
	syms, err := objfile.Kallsyms(kallsymsPath)
	if err != nil {
		return a, fmt.Errorf("archive: no kernel symbols: %w", err)
	}
	a.Symbols = syms
	store(cache, a)
	return a, nil
}

// VDSO describes the vdso, which is the same image in every process of this
// kernel: it reads this process's [vdso] mapping from /proc/self/mem.
func VDSO() (*experiment.Archive, error) {
	img, err := VDSOImage()
	if err != nil {
		return nil, err
	}
	f, err := objfile.NewFile("[vdso]", bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &experiment.Archive{
		Path:     "[vdso]",
		Size:     int64(len(img)),
		BuildID:  f.BuildID(),
		Kind:     "vdso",
		Segments: f.Segments(),
		Symbols:  syms,
	}, nil
}

// VDSOImage returns the bytes of the vdso, an ELF image, as mapped in this process.
func VDSOImage() ([]byte, error) {
	start, end, err := vdsoRange(selfMapsPath)
	if err != nil {
		return nil, err
	}
	mem, err := os.Open(selfMemPath)
	if err != nil {
		return nil, fmt.Errorf("archive: reading the vdso: %w", err)
	}
	defer mem.Close()
	img := make([]byte, end-start)
	if _, err := mem.ReadAt(img, int64(start)); err != nil {
		return nil, fmt.Errorf("archive: reading the vdso at %#x from %s: %w", start, selfMemPath, err)
	}
	return img, nil
}

// errNoVDSO says that the process has no [vdso] mapping.
var errNoVDSO = errors.New("no [vdso] mapping")

// vdsoRange finds the address range of the [vdso] mapping in a
// /proc/PID/maps file.
func vdsoRange(maps string) (start, end uint64, err error) {
	fh, err := os.Open(maps)
	if err != nil {
		return 0, 0, fmt.Errorf("archive: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != "[vdso]" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start || end-start > 1<<24 {
			return 0, 0, fmt.Errorf("archive: %s:%d: bad address range %q", maps, line, f[0])
		}
		return start, end, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("archive: reading %s: %w", maps, err)
	}
	return 0, 0, fmt.Errorf("archive: %s: %w", maps, errNoVDSO)
}
