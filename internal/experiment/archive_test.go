package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func testArchive() *Archive {
	a := &Archive{
		Path:    "/usr/lib/x86_64-linux-gnu/libc.so.6",
		Size:    1922136,
		Mtime:   1690000000123456789,
		BuildID: "a1b2c3d4e5f6",
		Kind:    "elf",
		Segments: []Segment{
			{Vaddr: 0, Offset: 0, Filesz: 0x26000, Memsz: 0x26000},
			{Vaddr: 0x26000, Offset: 0x26000, Filesz: 0x155000, Memsz: 0x155000},
		},
	}
	for i := range 5000 { // several blocks
		a.Symbols = append(a.Symbols, Symbol{Name: fmt.Sprintf("function_number_%d", i), Addr: 0x26000 + uint64(i)*16, Size: uint64(i % 17), Kind: SymbolKind(i % 3)})
	}
	a.Symbols = append(a.Symbols, Symbol{Name: "", Addr: 1 << 40}, Symbol{Name: "odd\x00name\xff", Addr: 1 << 40})
	return a
}

func TestArchiveRoundTrip(t *testing.T) {
	for _, want := range []*Archive{testArchive(), {}, {Path: "[kernel]", Kind: "kernel", Symbols: []Symbol{{Name: "start_kernel", Addr: KernelBase, Kind: SymKernel}}}} {
		b := encodeArchive(want)
		got, err := decodeArchive("x.ar", b)
		if err != nil {
			t.Fatalf("%s: %v", want.Path, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip differs:\n%+v\n%+v", want.Path, got, want)
		}
	}
	if n := bytes.Count(encodeArchive(testArchive()), []byte(blockMagic)); n < 3 {
		t.Errorf("5000 symbols in %d blocks; want an object block and several symbol blocks", n)
	}
}

func TestArchiveName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_+-][A-Za-z0-9._+-]*\.[0-9a-f]{8}\.ar$`)
	names := map[string]string{}
	for _, p := range []string{"/usr/lib/libc.so.6", "/opt/libc.so.6", "[vdso]", "[kernel]", "", "/", "/a b/c d", "/x/.hidden", "/x/" + strings.Repeat("n", 300), "/x/\xff\n"} {
		n := ArchiveName(p)
		if !re.MatchString(n) || len(n) > 80 {
			t.Errorf("ArchiveName(%q) = %q, not a safe file name", p, n)
		}
		if q, dup := names[n]; dup {
			t.Errorf("%q and %q both give %q", p, q, n)
		}
		names[n] = p
	}
	if got := ArchiveName("/usr/lib/libc.so.6"); !strings.HasPrefix(got, "libc.so.6.") || got != ArchiveName("/usr/lib/libc.so.6") {
		t.Errorf("ArchiveName = %q, want libc.so.6.HASH.ar, the same each time", got)
	}
	if got := ArchiveName("[vdso]"); !strings.HasPrefix(got, "_vdso_.") {
		t.Errorf("ArchiveName([vdso]) = %q", got)
	}
}

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	a := testArchive()
	// Unsorted input is stored sorted, without changing the caller's slice.
	a.Symbols[0], a.Symbols[1] = a.Symbols[1], a.Symbols[0]
	if err := WriteArchive(dir, a); err != nil {
		t.Fatal(err)
	}
	if a.Symbols[0].Name != "function_number_1" {
		t.Error("WriteArchive changed its argument")
	}
	got, err := ReadArchive(filepath.Join(dir, ArchivesDir, ArchiveName(a.Path)))
	if err != nil {
		t.Fatal(err)
	}
	if want := testArchive(); !reflect.DeepEqual(got, want) {
		t.Error("archive read back differs")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ArchivesDir))
	if len(entries) != 1 {
		t.Errorf("archives/ holds %d files, want 1 (no temporary file left)", len(entries))
	}
}

// TestCopyArchive: a cached archive copied into an experiment with another path, size and time is
// the file WriteArchive writes for it, byte for byte; a damaged or refused one writes nothing.
func TestCopyArchive(t *testing.T) {
	dir := t.TempDir()
	cached := testArchive()
	cached.Path, cached.Size, cached.Mtime = "libc.so.6", 1, 2
	src := filepath.Join(dir, "cache.ar")
	if err := WriteArchiveFile(src, cached); err != nil {
		t.Fatal(err)
	}
	want := testArchive()
	exp := filepath.Join(dir, "exp")
	var seen *Archive
	var nsym uint32
	ok, err := CopyArchive(exp, src, want.Path, want.Size, want.Mtime, func(h *Archive, n uint32) bool { seen, nsym = h, n; return true })
	if !ok || err != nil {
		t.Fatalf("CopyArchive: %v, %v", ok, err)
	}
	if seen.Path != "libc.so.6" || seen.BuildID != want.BuildID || len(seen.Segments) != 2 || nsym != uint32(len(want.Symbols)) {
		t.Errorf("accept saw %+v with %d symbols", seen, nsym)
	}
	got, err := os.ReadFile(filepath.Join(exp, ArchivesDir, ArchiveName(want.Path)))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := prepareArchive(want); !bytes.Equal(got, encodeArchive(b)) {
		t.Error("the copy differs from what WriteArchive writes")
	}
	// Refused: nothing written.
	other := filepath.Join(dir, "other")
	if ok, err := CopyArchive(other, src, "/x/libc.so.6", 1, 2, func(*Archive, uint32) bool { return false }); ok || err != nil {
		t.Errorf("refused: %v, %v", ok, err)
	}
	// Damaged in a block of symbols: an error naming the file, nothing written.
	data, _ := os.ReadFile(src)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := CopyArchive(other, src, "/x/libc.so.6", 1, 2, func(*Archive, uint32) bool { return true }); ok || err == nil || !strings.Contains(err.Error(), "cache.ar") || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged: %v, %v", ok, err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a refused or damaged copy made %s: %v", other, err)
	}
}

func TestArchiveErrors(t *testing.T) {
	good := encodeArchive(&Archive{Path: "/x", Segments: []Segment{{1, 2, 3, 4}}, Symbols: []Symbol{{Name: "a", Addr: 1}, {Name: "b", Addr: 2}}})
	// object block: 24 + 24 + 24 fixed + 4+2 path + 4 + 4 + 32 segment = 118; symbol block payload at 142.
	reseal := func(b []byte, block int, count uint32) []byte {
		sealBlock(b[block:block+blockHeaderSize+int(le.Uint32(b[block+8:]))], count)
		return b
	}
	tests := []struct {
		name   string
		change func([]byte) []byte
		off    int64
		msg    string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, 118, "last block is incomplete (" + fmt.Sprint(len(good)-3-118) + " of " + fmt.Sprint(len(good)-118) + " bytes)"},
		{"payload", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, 118, "block payload checksum mismatch"},
		{"no object", func(b []byte) []byte { return b[:fileHeaderSize] }, 24, "no object record"},
		{"symbol count", func(b []byte) []byte { le.PutUint32(b[68:], 3); return reseal(b, 24, 1) }, int64(len(good)), "2 symbol records, the object record says 3"},
		{"segments", func(b []byte) []byte { le.PutUint32(b[64:], 9); return reseal(b, 24, 1) }, 86, "9 segments do not fit in the 32 bytes left in the block"},
		{"unsorted", func(b []byte) []byte { b[142] = 9; return reseal(b, 118, 2) }, len64(good), `symbol "b" at 0x2 follows "a" at 0x9: symbols must be sorted by address`},
		{"kind", func(b []byte) []byte { return append(appendFileHeader(nil, kindClock), b[fileHeaderSize:]...) }, 12, "holds clock records, want archive records"},
	}
	for _, tt := range tests {
		_, err := decodeArchive("a.ar", tt.change(bytes.Clone(good)))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		fe := asFormatError(t, err)
		if fe.File != "a.ar" || fe.Offset != tt.off || !strings.Contains(fe.Msg, tt.msg) {
			t.Errorf("%s: got %+v, want offset %d and %q", tt.name, fe, tt.off, tt.msg)
		}
	}
}

func len64(b []byte) int64 { return int64(len(b)) }

func FuzzReadArchive(f *testing.F) {
	small := &Archive{Path: "/bin/x", BuildID: "ab", Kind: "elf", Segments: []Segment{{1, 2, 3, 4}},
		Symbols: []Symbol{{Name: "main", Addr: 0x1000, Size: 10}, {Name: "f@plt", Addr: 0x2000, Kind: SymPLT}}}
	// An object record that claims 2^32-1 segments, and a string of 2^32-1 bytes.
	claims := encodeArchive(&Archive{Path: "/p"})
	obj := fileHeaderSize + blockHeaderSize
	manySegs := bytes.Clone(claims)
	le.PutUint32(manySegs[obj+16:], 0xffffffff)
	sealBlock(manySegs[fileHeaderSize:], 1)
	longPath := bytes.Clone(claims)
	le.PutUint32(longPath[obj+24:], 0xffffffff)
	sealBlock(longPath[fileHeaderSize:], 1)
	fuzzSeeds(f, encodeArchive(small), encodeArchive(&Archive{}), manySegs, longPath, claimBlock(kindArchive, 0xffffff00))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeArchive("a.ar", b)
		if err != nil {
			asFormatError(t, err)
			return
		}
		a2, err := decodeArchive("a.ar", encodeArchive(a))
		if err != nil || !reflect.DeepEqual(a, a2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, a, a2)
		}
	})
}

// The examples in docs/experiment-format.md.
func TestArchiveNameDocumented(t *testing.T) {
	for path, want := range map[string]string{
		"/usr/lib/x86_64-linux-gnu/libc.so.6": "libc.so.6.482931a7.ar",
		"[vdso]":                              "_vdso_.7d5b7f70.ar",
	} {
		if got := ArchiveName(path); got != want {
			t.Errorf("ArchiveName(%q) = %q, want %q", path, got, want)
		}
	}
}

// BenchmarkReadArchive reads an archive of 200,000 symbols, a kernel's (the cached kernel symbols
// are read by every collection that records kernel stacks).
func BenchmarkReadArchive(b *testing.B) {
	a := &Archive{Path: "[kernel]", Kind: "kernel"}
	for i := range 200_000 {
		a.Symbols = append(a.Symbols, Symbol{Addr: 0xffffffff81000000 + uint64(i)*64, Size: 64, Kind: SymFunc,
			Name: fmt.Sprintf("kernel_function_%d", i)})
	}
	file := filepath.Join(b.TempDir(), "kernel.ar")
	if err := WriteArchiveFile(file, a); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := ReadArchive(file)
		if err != nil || len(got.Symbols) != len(a.Symbols) {
			b.Fatalf("%d symbols, %v", len(got.Symbols), err)
		}
	}
}

// ScanArchive gives the symbols ReadArchive reads, in order, and stops when asked.
func TestScanArchive(t *testing.T) {
	a := &Archive{Path: "[kernel]", Kind: "kernel", BuildID: "ab12"}
	for i := range 5000 {
		a.Symbols = append(a.Symbols, Symbol{Addr: 0x1000 + uint64(i)*16, Size: uint64(i % 3), Kind: SymFunc, Name: fmt.Sprintf("f%d", i)})
	}
	file := filepath.Join(t.TempDir(), "k.ar")
	if err := WriteArchiveFile(file, a); err != nil {
		t.Fatal(err)
	}
	var got []Symbol
	h, err := ScanArchive(file, func(addr, size uint64, kind SymbolKind, name []byte) bool {
		got = append(got, Symbol{Addr: addr, Size: size, Kind: kind, Name: string(name)})
		return true
	})
	if err != nil || h.Path != "[kernel]" || h.BuildID != "ab12" || len(h.Symbols) != 0 {
		t.Fatalf("header %+v, %v", h, err)
	}
	full, err := ReadArchive(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, full.Symbols) || len(got) != 5000 {
		t.Errorf("scanned %d symbols, read %d; equal %v", len(got), len(full.Symbols), reflect.DeepEqual(got, full.Symbols))
	}
	n := 0
	if _, err := ScanArchive(file, func(uint64, uint64, SymbolKind, []byte) bool { n++; return n < 10 }); err != nil || n != 10 {
		t.Errorf("stopped after %d symbols, %v", n, err)
	}
}
