// Package archive builds the archived description of load objects (symbols and segments) and looks addresses up in it.
package archive

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"er/internal/cachedir"
	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/regfile"
	"er/internal/safedir"
)

// Paths of the kernel's files read here; variables so tests can point them elsewhere.
var (
	kallsymsPath    = "/proc/kallsyms"
	kernelNotesPath = "/sys/kernel/notes"
	selfMapsPath    = "/proc/self/maps"
	selfMemPath     = "/proc/self/mem"
)

// Write writes the archive of the ELF load object at path into the experiment expDir, as
// experiment.WriteArchive of Build(path) does: from the cache, where it holds the object, by
// experiment.CopyArchive, which copies its symbols without decoding them.
func Write(expDir, path string) error {
	root, err := safedir.Open(expDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteTo(root, path)
}

// WriteTo is Write into the experiment directory root, opened by the caller (safedir: nothing
// beneath it is reached through a link).
func WriteTo(root *safedir.Dir, path string) error {
	o, err := openObject(path)
	if err != nil {
		return err
	}
	defer o.fh.Close()
	if copied, err := o.copyCached(root); err == nil && copied {
		return nil
	}
	a, err := o.build()
	if err != nil {
		return err
	}
	return experiment.WriteArchiveTo(root, a)
}

// Build describes the ELF load object at path: its size, modification time,
// build id, PT_LOAD segments and symbols. What it reads of an object with a build id is cached
// (see cacheDir and objectCacheFile).
func Build(path string) (*experiment.Archive, error) {
	o, err := openObject(path)
	if err != nil {
		return nil, err
	}
	defer o.fh.Close()
	return o.build()
}

// Describe describes the ELF load object at path as its archive does, without its symbols: its
// path, size, modification time, build id and segments, read from its headers (no symbol table is
// read, none is cached).
func Describe(path string) (*experiment.Archive, error) {
	o, err := openObject(path)
	if err != nil {
		return nil, err
	}
	defer o.fh.Close()
	return &experiment.Archive{Path: path, Size: o.st.Size(), Mtime: o.st.ModTime().UnixNano(), BuildID: o.id,
		Kind: "elf", Segments: o.f.Segments()}, nil
}

// object is a load object opened to be archived, with the cache file that would hold its archive.
type object struct {
	path  string
	fh    *os.File
	st    os.FileInfo
	f     *objfile.File
	id    string // its build id
	cache string // objectCacheFile's name for it; "" without a cache
}

// openObject opens the ELF load object at path; the caller closes o.fh.
func openObject(path string) (*object, error) {
	fh, st, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	f, err := objfile.NewFile(path, fh)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("archive: %w", err)
	}
	o := &object{path: path, fh: fh, st: st, f: f, id: f.BuildID()}
	var links []string
	if name, _, ok := f.DebugLink(); ok && o.id != "" {
		links = debugLinkCandidates(path, name)
	}
	o.cache = objectCacheFile(o.id, st.Size(), links...)
	return o, nil
}

// holds reports whether the cached archive h, under its object record, is that of o.
func (o *object) holds(h *experiment.Archive) bool {
	return h.Kind == "elf" && h.BuildID == o.id && h.Path == filepath.Base(o.path)
}

// copyCached copies o's cached archive into the experiment root; false where the cache does not hold it.
func (o *object) copyCached(root *safedir.Dir) (bool, error) {
	if o.cache == "" || !cachedir.Usable(o.cache) {
		return false, nil
	}
	return experiment.CopyArchiveTo(root, o.cache, o.path, o.st.Size(), o.st.ModTime().UnixNano(), func(h *experiment.Archive, nsym uint32) bool {
		return o.holds(h) && nsym > 0
	})
}

// build returns o's archive: from the cache, or read from the object and then cached.
func (o *object) build() (*experiment.Archive, error) {
	path, st := o.path, o.st
	if c := cached(o.cache, "elf"); c != nil && o.holds(c) {
		c.Path, c.Size, c.Mtime = path, st.Size(), st.ModTime().UnixNano()
		return c, nil
	}
	syms, err := functionSymbols(o.f, path, o.id)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	a := &experiment.Archive{
		Path:     path,
		Size:     st.Size(),
		Mtime:    st.ModTime().UnixNano(),
		BuildID:  o.id,
		Kind:     "elf",
		Segments: o.f.Segments(),
		Symbols:  syms,
	}
	if o.cache != "" {
		// Cached under the file's base name: SymFDE functions are named by it.
		c := *a
		c.Path = filepath.Base(path)
		store(o.cache, &c)
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
	a := &experiment.Archive{Path: "[kernel]", Kind: "kernel", BuildID: kernelBuildID()}
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

// kernelBuildID is the running kernel's build id, from /sys/kernel/notes where readable.
func kernelBuildID() string {
	if notes, err := os.ReadFile(kernelNotesPath); err == nil {
		return objfile.BuildIDFromNotes(notes, binary.NativeEndian, 4)
	}
	return ""
}

// KernelCached makes sure the kernel's symbols are cached, reading no more than the cache's first
// record when they are (it returns nil then). When they are not, it reads them with Kernel and
// returns what Kernel returns: the caller has the whole table, whether or not it could be cached.
func KernelCached() (*experiment.Archive, error) {
	cache := kernelCacheFile()
	if cache != "" && validKernelCache(cache, kernelBuildID()) {
		return nil, nil
	}
	return Kernel()
}

// validKernelCache reports whether file is a cache of the kernel's symbols for build id id.
func validKernelCache(file, id string) bool {
	_, ok := kernelCacheHead(file, id)
	return ok
}

// kernelCacheHead returns the object record of file, a cache of the kernel's symbols for build id id;
// false where file is not one.
func kernelCacheHead(file, id string) (*experiment.Archive, bool) {
	if !cachedir.Usable(file) {
		return nil, false
	}
	some := false
	h, err := experiment.ScanArchive(file, func(uint64, uint64, experiment.SymbolKind, []byte) bool {
		some = true
		return false
	})
	ok := err == nil && some && h.Path == "[kernel]" && h.Kind == "kernel" && h.BuildID == id
	return h, ok
}

// KernelAt describes the running kernel as Kernel does, with only the symbols that hold one of
// the addresses (as SymbolAt finds them: the last symbol at or before it). From the cache it scans
// the kernel's 200,000 symbols without keeping them (reading them all took some 20 ms of CPU and
// 16 MB); without a cache it reads them all with Kernel. The symbols found are kept in a second
// cache file with where each ends (the next symbol's address), and addresses that fall in them are
// not scanned for again: the scan still took 5 ms of every collection whose stacks held the kernel,
// and a program's kernel functions are much the same from one run to the next.
func KernelAt(addrs []uint64) (*experiment.Archive, error) {
	q := slices.Clone(addrs)
	slices.Sort(q)
	q = slices.Compact(q)
	if a, ok := kernelAtCached(q); ok {
		return a, nil
	}
	a, err := Kernel()
	if a != nil {
		keep := map[uint64]experiment.Symbol{}
		for _, addr := range q {
			if sym, ok := lastAtOrBefore(a.Symbols, addr); ok {
				keep[sym.Addr] = sym
			}
		}
		a.Symbols = slices.SortedFunc(maps.Values(keep), func(x, y experiment.Symbol) int { return cmp.Compare(x.Addr, y.Addr) })
	}
	return a, err
}

// kernelAtCached is KernelAt for the sorted addresses q from the cache; false where there is none.
func kernelAtCached(q []uint64) (*experiment.Archive, bool) {
	cache := kernelCacheFile()
	if cache == "" {
		return nil, false
	}
	head, ok := kernelCacheHead(cache, kernelBuildID())
	if !ok {
		return nil, false
	}
	known := readKernelHits(cache + hitsSuffix)
	keep := map[uint64]kernelHit{}
	var miss []uint64
	for _, addr := range q {
		if h, ok := known.at(addr); ok {
			keep[h.Addr] = h
		} else {
			miss = append(miss, addr)
		}
	}
	if len(miss) > 0 {
		found, err := scanKernelAt(cache, miss)
		if err != nil {
			return nil, false
		}
		for _, h := range found {
			keep[h.Addr] = h
		}
		writeKernelHits(cache+hitsSuffix, known, found)
	}
	for _, h := range slices.SortedFunc(maps.Values(keep), func(x, y kernelHit) int { return cmp.Compare(x.Addr, y.Addr) }) {
		head.Symbols = append(head.Symbols, h.Symbol)
	}
	return head, true
}

// scanKernelAt scans the cache of the kernel's symbols for the last symbol at or before each of the
// sorted addresses q, and where it ends.
func scanKernelAt(cache string, q []uint64) ([]kernelHit, error) {
	var keep []kernelHit
	var cur kernelHit // the last symbol read, its name in curName
	var curName []byte
	have := false
	i := 0 // q[:i] are placed
	_, err := experiment.ScanArchive(cache, func(addr, size uint64, kind experiment.SymbolKind, name []byte) bool {
		// The addresses before this symbol are the previous one's, if at or after it.
		used := false
		for ; i < len(q) && q[i] < addr; i++ {
			used = used || have && q[i] >= cur.Addr
		}
		if used {
			cur.Name, cur.End = string(curName), addr
			keep = append(keep, cur)
		}
		cur, curName, have = kernelHit{Symbol: experiment.Symbol{Addr: addr, Size: size, Kind: kind}}, append(curName[:0], name...), true
		return i < len(q)
	})
	if err != nil {
		return nil, err
	}
	if have && i < len(q) {
		cur.Name = string(curName) // the addresses after the last symbol read: it has no end
		keep = append(keep, cur)
	}
	return keep, nil
}

// kernelHit is a kernel symbol found for an address, and where the next symbol starts (0: none).
type kernelHit struct {
	experiment.Symbol
	End uint64
}

// kernelHits are the kernel symbols found by earlier collections, sorted by address.
type kernelHits []kernelHit

// hitsSuffix names the file of the kernel symbols found, beside the cache of them all.
const hitsSuffix = ".hits"

// maxKernelHits bounds the file of kernel symbols found; beyond it, no more are added.
const maxKernelHits = 20000

// at returns the symbol that holds addr, if it is one of hs.
func (hs kernelHits) at(addr uint64) (kernelHit, bool) {
	i := sort.Search(len(hs), func(i int) bool { return hs[i].Addr > addr }) - 1
	if i < 0 || hs[i].End != 0 && addr >= hs[i].End {
		return kernelHit{}, false
	}
	return hs[i], true
}

// readKernelHits reads the file of kernel symbols found: a line "ADDR END SIZE KIND NAME" for each, in
// hex but KIND, sorted by address. A file that is not one is ignored (nil).
func readKernelHits(file string) kernelHits {
	b, err := cachedir.ReadFile(file, maxCacheList)
	if err != nil || !strings.HasPrefix(string(b), hitsHeader) {
		return nil
	}
	var hs kernelHits
	for _, l := range strings.Split(strings.TrimPrefix(string(b), hitsHeader), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, " ", 5)
		if len(f) != 5 || f[4] == "" {
			return nil
		}
		var h kernelHit
		var kind uint64
		for j, p := range []*uint64{&h.Addr, &h.End, &h.Size, &kind} {
			base := 16
			if j == 3 {
				base = 10
			}
			v, err := strconv.ParseUint(f[j], base, 64)
			if err != nil {
				return nil
			}
			*p = v
		}
		if kind > 255 || h.End != 0 && h.End <= h.Addr || len(hs) > 0 && (hs[len(hs)-1].End == 0 || hs[len(hs)-1].End > h.Addr) {
			return nil
		}
		h.Kind, h.Name = experiment.SymbolKind(kind), f[4]
		hs = append(hs, h)
	}
	return hs
}

// hitsHeader starts a file of kernel symbols found.
const hitsHeader = "er kernel symbols found 1\n"

// writeKernelHits writes the symbols known and found to the file (best effort).
func writeKernelHits(file string, known kernelHits, found []kernelHit) {
	all := map[uint64]kernelHit{}
	for _, h := range known {
		all[h.Addr] = h
	}
	for _, h := range found {
		if len(all) >= maxKernelHits {
			break
		}
		if strings.ContainsAny(h.Name, "\n") {
			continue
		}
		all[h.Addr] = h
	}
	var b strings.Builder
	b.WriteString(hitsHeader)
	for _, h := range slices.SortedFunc(maps.Values(all), func(x, y kernelHit) int { return cmp.Compare(x.Addr, y.Addr) }) {
		fmt.Fprintf(&b, "%x %x %x %d %s\n", h.Addr, h.End, h.Size, h.Kind, h.Name)
	}
	writeCacheFile(file, ".hits-*", b.String())
}

// lastAtOrBefore is the last of the sorted symbols at or before addr, whatever its size.
func lastAtOrBefore(syms []experiment.Symbol, addr uint64) (experiment.Symbol, bool) {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr }) - 1
	if i < 0 {
		return experiment.Symbol{}, false
	}
	return syms[i], true
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
