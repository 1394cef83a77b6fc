package archive

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"er/internal/cachedir"
	"er/internal/experiment"
)

// Paths that identify the kernel's symbol addresses; variables so tests can point them elsewhere.
var (
	bootIDPath      = "/proc/sys/kernel/random/boot_id"
	modulesPath     = "/proc/modules"
	kptrRestrictPth = "/proc/sys/kernel/kptr_restrict"
)

// cacheDir is where Kernel and Build keep what they read between collections ($ER_CACHE_DIR, else
// er/ in the user's cache directory): reading /proc/kallsyms (over 100,000 lines, formatted by the
// kernel for each read) cost each collection some 80 ms of CPU, most of the fixed cost of
// `er collect /bin/true`, and libc's symbols with its debug file's and call frame entries 11 ms.
// "" disables the cache. It is used through cacheRoot.
var cacheDir = func() string {
	if d := os.Getenv("ER_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "er")
}

// cacheRoot is the path through which the cache directory is used (cachedir.Root: a directory of
// the user's own, no one else's to enter, opened once), "" where there is none or it is refused.
func cacheRoot() string { return cachedir.Root(cacheDir()) }

// maxCacheList bounds a cached list's file (of source files, of declared functions) and the file of
// kernel symbols found.
const maxCacheList = 64 << 20

// kernelCacheFile names the cache file of the running kernel's symbols as this user sees them: the
// addresses hold for one boot (KASLR) and one set of loaded modules, and what a user may see of
// them depends on kernel.kptr_restrict and privilege. "" when the boot cannot be told.
func kernelCacheFile() string {
	dir := cacheRoot()
	if dir == "" {
		return ""
	}
	boot, err := os.ReadFile(bootIDPath)
	if err != nil || len(strings.TrimSpace(string(boot))) == 0 {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "boot %s\neuid %d\n", strings.TrimSpace(string(boot)), os.Geteuid())
	if b, err := os.ReadFile(kptrRestrictPth); err == nil {
		fmt.Fprintf(h, "kptr_restrict %s\n", strings.TrimSpace(string(b)))
	}
	if b, err := os.ReadFile(modulesPath); err == nil {
		// Each module's name, size and address; not its use count, which changes all the time.
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 6 {
				fmt.Fprintf(h, "module %s %s %s\n", f[0], f[1], f[5])
			}
		}
	}
	return filepath.Join(dir, fmt.Sprintf("kernel-%x.ar", h.Sum(nil)[:12]))
}

// cached reads the cached archive file of kind kind, or returns nil.
func cached(file, kind string) *experiment.Archive {
	if file == "" || !cachedir.Usable(file) {
		return nil
	}
	a, err := experiment.ReadArchive(file)
	if err != nil || a.Kind != kind || len(a.Symbols) == 0 {
		return nil
	}
	return a
}

// objectCacheFile names the cache file of the symbols and segments of the load object with build id
// id and size bytes: a build id names the build, the size which of its copies it is (a stripped copy
// keeps the build id, and so does one with a .gnu_debugdata added; size < 0 leaves it out), and the
// separate debug file found for it (its size and modification time, or that there is none) decides
// what Build adds to them: by build id under debugDirs, or at links, where its .gnu_debuglink may
// find one. "" without a build id.
func objectCacheFile(id string, size int64, links ...string) string {
	dir := cacheRoot()
	if dir == "" || len(id) < 4 {
		return ""
	}
	h := sha256.New()
	// Version 2: symbols from .gnu_debuglink files and MiniDebugInfo, which version 1 lacked.
	fmt.Fprintf(h, "object %s\nsymbols 2\n", id)
	if size >= 0 {
		fmt.Fprintf(h, "size %d\n", size)
	}
	for _, d := range debugDirs {
		p := filepath.Join(d, ".build-id", id[:2], id[2:]+".debug")
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "debug %s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	for _, p := range links {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "link %s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	return filepath.Join(dir, fmt.Sprintf("object-%x.ar", h.Sum(nil)[:12]))
}

// SourceFiles returns the source files named by the debug information of the load object with build
// id id, from the cache or else from list (whose answer is cached); ok is false without a build id
// or where list fails. Archiving sources reads an object's whole debug information only to learn
// which of its files to copy: for a distribution's libraries, whose sources are not on the machine,
// none, at a cost of some 100 ms per collection for libc's separate DWARF.
func SourceFiles(id string, list func() ([]string, error)) (files []string, ok bool) {
	return cachedList(id, ".sources", sourcesHeader, list)
}

// DeclaredFunctions returns what list says of the functions of the load object with build id id
// that its debug information declares in a source file (one line each: "ADDR LO HI FILE", hex
// numbers), from the cache or else from list (whose answer is cached); ok is false without a build
// id or where list fails. Finding them looks up every symbol in the debug information: for libc's
// separate DWARF, a third of a second of each collection.
func DeclaredFunctions(id string, list func() ([]string, error)) (lines []string, ok bool) {
	return cachedList(id, ".declared", declaredHeader, list)
}

// declaredHeader starts a cached list of declared functions.
const declaredHeader = "er declared functions 1\n"

// cachedList returns the list of strings (none holding a newline) cached for build id id in the
// file with suffix and header, or else list's, cached when it can be.
func cachedList(id, suffix, header string, list func() ([]string, error)) ([]string, bool) {
	file := objectCacheFile(id, -1)
	if file == "" {
		return nil, false
	}
	file = strings.TrimSuffix(file, ".ar") + suffix
	if b, err := cachedir.ReadFile(file, maxCacheList); err == nil && strings.HasPrefix(string(b), header) {
		rest := strings.TrimPrefix(string(b), header)
		if rest == "" {
			return []string{}, true
		}
		return strings.Split(strings.TrimSuffix(rest, "\n"), "\n"), true
	}
	items, err := list()
	if err != nil {
		return nil, false
	}
	var b strings.Builder
	b.WriteString(header)
	for _, f := range items {
		if f == "" || strings.ContainsAny(f, "\n\r") {
			return items, true // not storable in this format: not cached
		}
		b.WriteString(f)
		b.WriteByte('\n')
	}
	writeCacheFile(file, ".list-*", b.String())
	return items, true
}

// writeCacheFile replaces the cache file with text, through a new temporary file (named by pattern)
// renamed over it: what was there, a link included, is replaced, never written through. Best
// effort: a cache that cannot be written is not one.
func writeCacheFile(file, pattern, text string) {
	tmp, err := os.CreateTemp(filepath.Dir(file), pattern)
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(text)
	if cerr := tmp.Close(); werr == nil && cerr == nil {
		_ = os.Rename(tmp.Name(), file)
	}
	os.Remove(tmp.Name())
}

// sourcesHeader starts a cached list of source files.
const sourcesHeader = "er source files 1\n"

// store writes a to the cache file (best effort: a cache that cannot be written is not one).
func store(file string, a *experiment.Archive) {
	if file == "" {
		return
	}
	_ = experiment.WriteArchiveFile(file, a)
}

// sumCacheFile names the cache file of the SHA-256 of the file at path whose status is fi: its device,
// inode, size and modification and change times (any write to a file changes its change time). ""
// without a cache, or where fi does not come from stat(2).
func sumCacheFile(path string, fi os.FileInfo) string {
	dir := cacheRoot()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if dir == "" || !ok {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "sha256 of %s\ndev %d ino %d size %d mtime %d.%09d ctime %d.%09d\n", path, st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	return filepath.Join(dir, fmt.Sprintf("sum-%x", h.Sum(nil)[:12]))
}

// cachedSum returns the SHA-256 kept in the cache file, "" when there is none.
func cachedSum(file string) string {
	if file == "" {
		return ""
	}
	b, err := cachedir.ReadFile(file, 65)
	if err != nil || len(b) != 65 || b[64] != '\n' || strings.Trim(string(b[:64]), "0123456789abcdef") != "" {
		return ""
	}
	return string(b[:64])
}

// storeSum keeps sum in the cache file (best effort).
func storeSum(file, sum string) {
	if file != "" {
		writeCacheFile(file, ".sum-*", sum+"\n")
	}
}
