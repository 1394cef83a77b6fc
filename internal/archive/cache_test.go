package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"er/internal/cachedir"
	"er/internal/experiment"
	"er/internal/safedir"
)

func TestMain(m *testing.M) {
	cacheDir = func() string { return "" } // each test that wants the cache gives it a directory
	os.Exit(m.Run())
}

// withCache points the cache at a new directory for the test, and the boot id at a file it can change.
func withCache(t *testing.T) (dir, bootFile string) {
	t.Helper()
	dir = t.TempDir()
	bootFile = filepath.Join(dir, "boot_id")
	if err := os.WriteFile(bootFile, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oldDir, oldBoot, oldMods := cacheDir, bootIDPath, modulesPath
	cacheDir = func() string { return filepath.Join(dir, "cache") }
	bootIDPath, modulesPath = bootFile, filepath.Join(dir, "modules")
	t.Cleanup(func() { cacheDir, bootIDPath, modulesPath = oldDir, oldBoot, oldMods })
	return dir, bootFile
}

func TestKernelCache(t *testing.T) {
	dir, boot := withCache(t)
	ks := filepath.Join(dir, "kallsyms")
	write := func(name string) {
		if err := os.WriteFile(ks, []byte("ffffffff81000000 T _stext\nffffffff81001000 T "+name+"\nffffffff81002000 T _etext\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := kallsymsPath
	kallsymsPath = ks
	defer func() { kallsymsPath = old }()
	names := func() []string {
		a, err := Kernel()
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, s := range a.Symbols {
			n = append(n, s.Name)
		}
		return n
	}
	write("first")
	if got := names(); !slices.Contains(got, "first") {
		t.Fatalf("first read: %v", got)
	}
	// Same boot, same modules: the cache answers, not kallsyms.
	write("second")
	if got := names(); !slices.Contains(got, "first") {
		t.Errorf("same boot: %v, want the cached symbols", got)
	}
	// A module loaded since, or a new boot: read again.
	if err := os.WriteFile(modulesPath, []byte("kvm 1236992 0 - Live 0xffffffffc0800000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Contains(got, "second") {
		t.Errorf("after a module was loaded: %v, want kallsyms read again", got)
	}
	write("third")
	if err := os.WriteFile(boot, []byte("boot-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Contains(got, "third") {
		t.Errorf("after a reboot: %v, want kallsyms read again", got)
	}
	// A module's use count changing keeps the cache.
	if err := os.WriteFile(modulesPath, []byte("kvm 1236992 3 - Live 0xffffffffc0800000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("fourth")
	if got := names(); !slices.Contains(got, "third") {
		t.Errorf("after a use count changed: %v, want the cached symbols", got)
	}
}

func TestObjectCache(t *testing.T) {
	withCache(t)
	exe := buildHello(t)
	a, err := Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir(), "object-*.ar"))
	if a.BuildID == "" || len(files) != 1 {
		t.Fatalf("build id %q, cache files %v: want one", a.BuildID, files)
	}
	// The second Build answers from the cache, with this file's path, size and time.
	b, err := Build(exe)
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != exe || b.Size != a.Size || b.Mtime != a.Mtime || b.BuildID != a.BuildID || !slices.Equal(b.Symbols, a.Symbols) || !slices.Equal(b.Segments, a.Segments) {
		t.Errorf("from the cache: %+v\nbuilt: %+v", b, a)
	}
	// A cache file that is not an archive is not used.
	if err := os.WriteFile(files[0], []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Build(exe); err != nil || !slices.Equal(c.Symbols, a.Symbols) {
		t.Errorf("with a damaged cache: %v, %d symbols", err, len(c.Symbols))
	}
}

// TestWriteFromCache: Write copies a cached archive into the experiment: the same archive as Build
// and WriteArchive give, with this file's path, size and time.
func TestWriteFromCache(t *testing.T) {
	withCache(t)
	exe := buildHello(t)
	want, err := Build(exe) // fills the cache
	if err != nil {
		t.Fatal(err)
	}
	exp := t.TempDir()
	o, err := openObject(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer o.fh.Close()
	root, err := safedir.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if copied, err := o.copyCached(root); !copied || err != nil {
		t.Fatalf("copyCached: %v, %v; want the cached archive copied", copied, err)
	}
	got, err := experiment.ReadArchive(filepath.Join(exp, experiment.ArchivesDir, experiment.ArchiveName(exe)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != exe || got.Size != want.Size || got.Mtime != want.Mtime || got.BuildID != want.BuildID ||
		!slices.Equal(got.Symbols, want.Symbols) || !slices.Equal(got.Segments, want.Segments) {
		t.Errorf("copied: %+v\nbuilt: %+v", got, want)
	}
	// Without a cache Write builds it.
	cacheDir = func() string { return "" }
	exp2 := t.TempDir()
	if err := Write(exp2, exe); err != nil {
		t.Fatal(err)
	}
	if got, err := experiment.ReadArchive(filepath.Join(exp2, experiment.ArchivesDir, experiment.ArchiveName(exe))); err != nil || !slices.Equal(got.Symbols, want.Symbols) {
		t.Errorf("built: %v, %d symbols", err, len(got.Symbols))
	}
}

func TestSourceFilesCache(t *testing.T) {
	withCache(t)
	calls := 0
	list := func() ([]string, error) { calls++; return []string{"/src/a.c", "/src/b.h"}, nil }
	for i := 0; i < 2; i++ {
		files, ok := SourceFiles("0123456789abcdef", list)
		if !ok || strings.Join(files, " ") != "/src/a.c /src/b.h" {
			t.Errorf("call %d: %v, %v", i, files, ok)
		}
	}
	if calls != 1 {
		t.Errorf("listed %d times, want once (then from the cache)", calls)
	}
	if _, ok := SourceFiles("", list); ok {
		t.Error("no build id: cached")
	}
}

// buildHello builds testdata/hello.c with a build id.
func buildHello(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command("gcc", "-O2", "-Wl,--build-id=0xfeedface02", "-o", exe, "testdata/hello.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return exe
}

// TestObjectCacheCopies: a stripped copy of a program keeps its build id (and its name, in another
// directory), and so does a copy with a .gnu_debugdata added: each is read for itself, not given the
// cached symbols of another copy (the stripped copy had the unstripped one's names, and a program
// whose MiniDebugInfo was added later had none of them). A debug file that its .gnu_debuglink finds
// later is read too.
func TestObjectCacheCopies(t *testing.T) {
	withCache(t)
	for _, tool := range []string{"gcc", "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "local.c")
	code := "static __attribute__((noinline)) int helper(int x) { return x * 3 + 1; }\n" +
		"int main(int argc, char **argv) { (void)argv; return helper(argc); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	full, stripped := filepath.Join(dir, "full", "local"), filepath.Join(dir, "stripped", "local")
	for _, d := range []string{filepath.Dir(full), filepath.Dir(stripped)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(wd, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(dir, "gcc", "-O1", "-g", "-o", full, src)
	run(dir, "strip", "-o", stripped, full)
	has := func(path string) bool {
		a, err := Build(path)
		if err != nil {
			t.Fatal(err)
		}
		if a.BuildID == "" {
			t.Fatalf("%s has no build id", path)
		}
		return slices.ContainsFunc(a.Symbols, func(s experiment.Symbol) bool { return s.Name == "helper" })
	}
	saved := debugDirs
	defer func() { debugDirs = saved }()
	debugDirs = []string{filepath.Join(dir, "none")}
	if !has(full) || !has(full) { // read, then from the cache
		t.Fatal("the unstripped program has no helper")
	}
	if has(stripped) {
		t.Error("the stripped copy has the cached names of the unstripped one")
	}
	// Its debug file, found later by its debug link.
	sd := filepath.Dir(stripped)
	run(sd, "objcopy", "--only-keep-debug", full, "local.debug")
	run(sd, "objcopy", "--add-gnu-debuglink=local.debug", "local")
	if !has(stripped) {
		t.Error("with a debug link to its debug file: no helper")
	}
}

// KernelAt keeps the symbols that hold the addresses, as the whole table would find them, from the
// cache (scanned) and without one (read whole).
func TestKernelAt(t *testing.T) {
	dir, _ := withCache(t)
	ks := filepath.Join(dir, "kallsyms")
	var b strings.Builder
	for i := range 3000 {
		addr := 0xffffffff81000000 + uint64(i/2)*0x40 // two symbols at each address: the second is found
		fmt.Fprintf(&b, "%x T sym%d\n", addr, i)
	}
	if err := os.WriteFile(ks, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	old := kallsymsPath
	kallsymsPath = ks
	defer func() { kallsymsPath = old }()
	full, err := Kernel()
	if err != nil {
		t.Fatal(err)
	}
	addrs := []uint64{0xffffffff80000000, 0xffffffff81000000, 0xffffffff81000001, 0xffffffff8100003f,
		0xffffffff81000040, 0xffffffff81000fff, 0xffffffff81010000, 0xffffffff81010000, 0xffffffff8105d7c0,
		0xffffffff8105d7ff, 0xffffffffff000000}
	var want []string
	for _, a := range addrs {
		if s, ok := lastAtOrBefore(full.Symbols, a); ok && !slices.Contains(want, s.Name) {
			want = append(want, s.Name)
		}
	}
	slices.Sort(want)
	check := func(what string) {
		t.Helper()
		a, err := KernelAt(addrs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range a.Symbols {
			got = append(got, s.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || a.Path != "[kernel]" || a.Kind != "kernel" {
			t.Errorf("%s: KernelAt = %v (%s, %s), want %v", what, got, a.Path, a.Kind, want)
		}
	}
	check("from the cache")
	if _, err := KernelCached(); err != nil {
		t.Fatal(err)
	}
	// The symbols found are kept with their ends, and answer the same addresses again without a scan:
	// with a damaged block after the cache's symbols (a scan to the end fails) and no kallsyms, only
	// they can.
	cache := kernelCacheFile()
	hits := readKernelHits(cache + hitsSuffix)
	if len(hits) != 5 {
		t.Errorf("%d symbols kept as found, want 5: %+v", len(hits), hits)
	}
	for _, h := range hits {
		if next, ok := lastAtOrBefore(full.Symbols, h.Addr); !ok || next.Name != h.Name {
			t.Errorf("kept %+v, the table has %+v there", h, next)
		}
		if i := sort.Search(len(full.Symbols), func(i int) bool { return full.Symbols[i].Addr > h.Addr }); i < len(full.Symbols) && h.End != full.Symbols[i].Addr || i == len(full.Symbols) && h.End != 0 {
			t.Errorf("kept %s ending at %#x, the next symbol starts at %#x", h.Name, h.End, full.Symbols[min(i, len(full.Symbols)-1)].Addr)
		}
	}
	if _, ok := hits.at(0xffffffff81000080); ok {
		t.Error("an address past a kept symbol's end was found in it")
	}
	whole, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, append(slices.Clip(whole), "damaged block"...), 0o644); err != nil {
		t.Fatal(err)
	}
	kallsymsPath = filepath.Join(dir, "no-kallsyms")
	check("from the symbols found")
	// An address none of them holds is scanned for (the scan ends before the damage), and kept.
	other := uint64(0xffffffff81000080)
	wantOther, _ := lastAtOrBefore(full.Symbols, other)
	if a, err := KernelAt([]uint64{other}); err != nil || len(a.Symbols) != 1 || a.Symbols[0] != wantOther {
		t.Errorf("KernelAt(%#x) = %+v, %v; want %+v", other, a, err, wantOther)
	}
	if n := len(readKernelHits(cache + hitsSuffix)); n != 6 {
		t.Errorf("%d symbols kept after another was found, want 6", n)
	}
	kallsymsPath = ks
	if err := os.WriteFile(cache, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "er kernel symbols found 1\nffffffff81000000 ffffffff80000000 0 0 x\n",
		"er kernel symbols found 1\nffffffff81000000 0 0 0 a\nffffffff81000040 0 0 0 b\n",
		"er kernel symbols found 1\nzz 0 0 0 a\n", "er kernel symbols found 1\n1 2 0 0\n"} {
		if err := os.WriteFile(cache+hitsSuffix, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if hs := readKernelHits(cache + hitsSuffix); hs != nil {
			t.Errorf("%q read as %+v", bad, hs)
		}
	}
	cacheDir = func() string { return "" }
	check("without a cache")
	if len(want) != 5 {
		t.Errorf("want %v: the test's addresses should find 5 symbols", want)
	}
}

// BenchmarkKernelAt: the few symbols a profile needs from a cache of 200,000 kernel symbols
// (KernelAt), against reading the cache whole (Kernel): the ratio is what the scan saves; and the
// same addresses again (again-ms), from the symbols the first call found.
func BenchmarkKernelAt(b *testing.B) {
	dir := b.TempDir()
	boot := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(boot, []byte("boot-1\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	oldDir, oldBoot, oldMods, oldKs := cacheDir, bootIDPath, modulesPath, kallsymsPath
	cacheDir = func() string { return filepath.Join(dir, "cache") }
	bootIDPath, modulesPath, kallsymsPath = boot, filepath.Join(dir, "modules"), filepath.Join(dir, "kallsyms")
	defer func() { cacheDir, bootIDPath, modulesPath, kallsymsPath = oldDir, oldBoot, oldMods, oldKs }()
	var ks strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&ks, "%x T kernel_function_%d\n", 0xffffffff81000000+uint64(i)*0x80, i)
	}
	if err := os.WriteFile(kallsymsPath, []byte(ks.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := KernelCached(); err != nil {
		b.Fatal(err)
	}
	var addrs []uint64
	for i := range 500 {
		addrs = append(addrs, 0xffffffff81000000+uint64(i)*0x80*397+0x13)
	}
	hits := kernelCacheFile() + hitsSuffix
	var whole, at, again time.Duration
	for b.Loop() {
		t0 := time.Now()
		if a, err := Kernel(); err != nil || len(a.Symbols) != 200_000 {
			b.Fatalf("Kernel: %v", err)
		}
		os.Remove(hits)
		t1 := time.Now()
		if a, err := KernelAt(addrs); err != nil || len(a.Symbols) != 500 {
			b.Fatalf("KernelAt: %d symbols, %v", len(a.Symbols), err)
		}
		t2 := time.Now()
		if a, err := KernelAt(addrs); err != nil || len(a.Symbols) != 500 {
			b.Fatalf("KernelAt again: %d symbols, %v", len(a.Symbols), err)
		}
		whole, at, again = whole+t1.Sub(t0), at+t2.Sub(t1), again+time.Since(t2)
	}
	b.ReportMetric(float64(whole)/float64(b.N)/1e6, "whole-ms")
	b.ReportMetric(float64(at)/float64(b.N)/1e6, "at-ms")
	b.ReportMetric(float64(again)/float64(b.N)/1e6, "again-ms")
}

// TestSumCache: a file copied again, unchanged, takes its SHA-256 from the cache; one changed in
// place, even to the same size and modification time, is hashed again (its change time moved).
func TestSumCache(t *testing.T) {
	dir, _ := withCache(t)
	src := filepath.Join(dir, "lib.so")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil { // after an ELF file's magic, as a load object
			t.Fatal(err)
		}
		mt := time.Unix(1700000000, 0)
		if err := os.Chtimes(src, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	sumOf := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	add := func() Copy {
		t.Helper()
		ix := &Index{Dir: filepath.Join(t.TempDir(), "archives")}
		c, added, err := ix.Add(KindObject, src, "", false)
		if err != nil || !added {
			t.Fatalf("Add: %v, %v", added, err)
		}
		if b, err := os.ReadFile(ix.FilePath(c)); err != nil || string(b) != readFile(t, src) {
			t.Fatalf("copy %q, %v; want %q", b, err, readFile(t, src))
		}
		return c
	}
	write("\x7fELF version one")
	if c := add(); c.SHA256 != sumOf("\x7fELF version one") {
		t.Errorf("first copy: sha256 %s, want %s", c.SHA256, sumOf("\x7fELF version one"))
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	key := sumCacheFile(src, fi)
	if got := cachedSum(key); got != sumOf("\x7fELF version one") {
		t.Fatalf("cached sum %q, want %s", got, sumOf("\x7fELF version one"))
	}
	// The cache is used: a (made up) sum kept for the same file's key is what the copy records.
	fake := strings.Repeat("ab", 32)
	storeSum(key, fake)
	if c := add(); c.SHA256 != fake {
		t.Errorf("second copy: sha256 %s, want the cached %s", c.SHA256, fake)
	}
	storeSum(key, sumOf("\x7fELF version one"))
	// Changed in place, same size and modification time: hashed again.
	time.Sleep(10 * time.Millisecond) // a change time that differs
	write("\x7fELF version two")
	if c := add(); c.SHA256 != sumOf("\x7fELF version two") {
		t.Errorf("after a change: sha256 %s, want %s", c.SHA256, sumOf("\x7fELF version two"))
	}
	// A damaged cache file is not used.
	fi, err = os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sumCacheFile(src, fi), []byte("not a sum\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := add(); c.SHA256 != sumOf("\x7fELF version two") {
		t.Errorf("damaged cache: sha256 %s, want %s", c.SHA256, sumOf("\x7fELF version two"))
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCachePlanted: what another user (or anyone) plants in the cache is not followed, read or
// waited on: a FIFO under the name of a file's cached SHA-256 (a read of it waited for a writer
// forever), a link there to a file holding a made-up sum (the copy recorded it), and a cache
// directory of another user's holding one (root's er, run with that user's HOME). The copy gets the
// file's own SHA-256, and what is refused is said.
func TestCachePlanted(t *testing.T) {
	var mu sync.Mutex
	var said []string
	old := cachedir.Warn
	cachedir.Warn = func(m string) { mu.Lock(); said = append(said, m); mu.Unlock() }
	defer func() { cachedir.Warn = old }()
	dir, _ := withCache(t)
	src := filepath.Join(dir, "lib.so")
	content := "\x7fELF a load object"
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(sumCacheFile(src, fi)) // the same in any cache directory
	h := sha256.Sum256([]byte(content))
	sum := hex.EncodeToString(h[:])
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte(strings.Repeat("ab", 32)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		plant func(cache string) // in the new cache directory cache
		want  string             // what is said
	}{
		{"fifo", func(cache string) {
			if err := syscall.Mkfifo(filepath.Join(cache, name), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the cache file %s is not read: it is a named pipe (FIFO), and er keeps only regular files of its own there (remove it)"},
		{"link", func(cache string) {
			if err := os.Symlink(fake, filepath.Join(cache, name)); err != nil {
				t.Fatal(err)
			}
		}, "the cache file %s is not read: it is a symbolic link, and er keeps only regular files of its own there (remove it)"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			plant func(string)
			want  string
		}{"another user's directory", func(cache string) {
			b, _ := os.ReadFile(fake)
			if err := os.WriteFile(filepath.Join(cache, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Join(cache, name), cache} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
		}, "the cache directory %s is not used: it belongs to uid 65534, not to uid 0 who runs er, and that user could put files in it for er to read; use a directory of your own (set ER_CACHE_DIR, or HOME)"})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := filepath.Join(dir, fmt.Sprintf("cache%d", i))
			if err := os.Mkdir(cache, 0o700); err != nil {
				t.Fatal(err)
			}
			c.plant(cache)
			oldDir := cacheDir
			cacheDir = func() string { return cache }
			defer func() { cacheDir = oldDir }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan Copy, 1)
			go func() {
				ix := &Index{Dir: filepath.Join(t.TempDir(), "archives")}
				cp, _, err := ix.Add(KindObject, src, "", false)
				if err != nil {
					t.Error(err)
				}
				done <- cp
			}()
			var cp Copy
			select {
			case cp = <-done:
			case <-ctx.Done():
				if w, err := os.OpenFile(filepath.Join(cache, name), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close() // let the reader go
				}
				cp = <-done
				t.Errorf("Add waited on the cache until the test's deadline")
			}
			if cp.SHA256 != sum {
				t.Errorf("the copy's sha256 %s, want the file's %s", cp.SHA256, sum)
			}
			where := filepath.Join(cache, name)
			if c.name == "another user's directory" {
				where = cache
			}
			mu.Lock()
			got := said
			said = nil
			mu.Unlock()
			if want := fmt.Sprintf(c.want, where); !slices.Contains(got, want) {
				t.Errorf("said %q, want %q", got, want)
			}
		})
	}
}
