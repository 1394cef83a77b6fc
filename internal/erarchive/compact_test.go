package erarchive

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/experiment"
)

// TestCompactObject: the default mode keeps a compact archive of the used load object that answers
// for its used function (work) as the object does, code and lines, and cuts its symbol archive to
// the symbols er print looks up, among them work's; a second run keeps it, -F makes it again.
func TestCompactObject(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	full, err := archive.Build(f.prog)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Archive(exp, Options{})
	if err != nil || res.Objects != 1 || res.Total == 0 {
		t.Fatalf("Archive: %+v, %v; want the program archived", res, err)
	}
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := ix.Lookup(archive.KindCompact, f.prog, nil)
	if !ok {
		t.Fatalf("no compact archive of %s in %+v", f.prog, ix.Copies)
	}
	d, err := experiment.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	a := d.Archives[f.prog]
	if len(a.Symbols) >= len(full.Symbols) || !slices.ContainsFunc(a.Symbols, func(s experiment.Symbol) bool { return s.Name == "work" }) {
		t.Errorf("the symbol archive holds %d of the program's %d symbols; want fewer, work among them", len(a.Symbols), len(full.Symbols))
	}
	of, err := analysis.OpenCompact(ix.FilePath(c), a)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := analysis.OpenObjectFile(f.prog, full)
	if err != nil {
		t.Fatal(err)
	}
	var work experiment.Symbol
	for _, s := range full.Symbols {
		if s.Name == "work" {
			work = s
		}
	}
	want, _ := orig.Code(work.Addr, work.Addr+work.Size)
	if got, err := of.Code(work.Addr, work.Addr+work.Size); err != nil || !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("work's code: %d bytes, %v; want the program's %d", len(got), err, len(want))
	}
	for pc := work.Addr; pc < work.Addr+work.Size; pc++ {
		wf, wok := orig.Debug.Frames(pc)
		gf, gok := of.Debug.Frames(pc)
		if wok != gok || !reflect.DeepEqual(wf, gf) {
			t.Fatalf("Frames(%#x) = %v %v, want %v %v", pc, gf, gok, wf, wok)
		}
	}
	t.Logf("compact archive: %d bytes for a %d-byte program; symbol archive %d of %d symbols", c.Length, c.Size, len(a.Symbols), len(full.Symbols))
	// libcold.so is mapped, without events: no symbol of it is looked up.
	if lib := d.Archives[f.lib]; lib == nil || len(lib.Symbols) != 0 || lib.BuildID == "" {
		t.Errorf("the archive of %s, which has no events: %+v; want its object record without symbols", f.lib, lib)
	}
	if res, err := Archive(exp, Options{}); err != nil || res.Objects != 0 || res.Kept < 1 {
		t.Errorf("again: %+v, %v; want it kept", res, err)
	}
	if res, err := Archive(exp, Options{Force: true}); err != nil || res.Objects != 1 {
		t.Errorf("-F: %+v, %v; want it made again", res, err)
	}
}

func TestKeptSymbolsOfUsage(t *testing.T) {
	a := &experiment.Archive{Symbols: []experiment.Symbol{
		{Addr: 0x100, Size: 0x10, Name: "f"}, {Addr: 0x110, Size: 0x10, Name: "g"}, {Addr: 0x200, Size: 0x10, Name: "h"},
		{Addr: 0x300, Size: 0x10, Name: "i"}, {Addr: 0x400, Size: 0x10, Name: "inl"},
	}}
	// f calls h (e8 rel32 to 0x200) and returns.
	code := map[uint64][]byte{0x100: {0xe8, 0xfb, 0x00, 0x00, 0x00, 0xc3}}
	read := func(lo, hi uint64) ([]byte, error) {
		if c, ok := code[lo]; ok && hi-lo <= uint64(len(c)) {
			return c[:hi-lo], nil
		}
		return make([]byte, hi-lo), nil
	}
	u := &usage{funcs: [][2]uint64{{0x100, 0x106}}, pcs: []uint64{0x100}, names: []string{"inl"}}
	var names []string
	for _, s := range keptSymbols(a, u, read) {
		names = append(names, s.Name)
	}
	// f: at the event; g: after the event's instruction; h: the call's target; inl: by name; i: not used.
	if want := []string{"f", "g", "h", "inl"}; !slices.Equal(names, want) {
		t.Errorf("kept %q, want %q", names, want)
	}
}

// TestCompactSeveral: with events in two load objects, both compact archives are made at once
// (precompact), and each is the one made alone: the same bytes.
func TestCompactSeveral(t *testing.T) {
	f := build(t)
	both := func(w *experiment.Writer, i int, id uint32) error {
		if i%2 == 1 { // cold in libcold.so, called from work in prog
			var err error
			if id, err = w.Stack(experiment.Stack{symbolPC(t, f.lib, libBase, "cold"), symbolPC(t, f.prog, progBase, "work")}); err != nil {
				return err
			}
		}
		return w.Clock(experiment.ClockSample{Time: int64(i+1) * 1e7, Pid: 100, Tid: 100, Mode: experiment.ModeUser, Period: 1e7, Stack: id})
	}
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experimentOf(t, exp, false, both)
	res, err := Archive(exp, Options{})
	if err != nil || res.Objects != 2 {
		t.Fatalf("Archive: %+v, %v; want the program and the library archived", res, err)
	}
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{f.prog, f.lib} {
		c, ok := ix.Lookup(archive.KindCompact, path, nil)
		if !ok {
			t.Fatalf("no compact archive of %s in %+v", path, ix.Copies)
		}
		// The same object made alone, as compactObject makes it without precompact.
		alone := filepath.Join(t.TempDir(), "test.1.er")
		f.experimentOf(t, alone, false, both)
		ar := &archiver{opt: Options{Warn: func(string) {}}, target: alone, objSeen: map[string]bool{}, compact: true}
		if err := ar.open(alone); err != nil {
			t.Fatal(err)
		}
		p, err := analyzeEvents(ar.exps, analysis.OpenObjectFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := ar.treeUsage(alone, p, analysis.OpenObjectFile); err != nil {
			t.Fatal(err)
		}
		o := ar.objIndex[path]
		m := ar.makeCompact(path, o, ar.p.ObjectFile(o), ar.exps[0].Archives[path])
		if got := mustRead(t, ix.FilePath(c)); m.data == nil || !bytes.Equal(got, m.data) {
			t.Errorf("%s: the compact archive made beside the other (%d bytes) is not the one made alone (%d bytes)", path, len(got), len(m.data))
		}
	}
}

// TestFunctionReferences: the call targets of 300 functions decoded on several goroutines are
// those of each function decoded alone, every one of them.
func TestFunctionReferences(t *testing.T) {
	const base, n = 0x401000, 300
	var code []byte
	var funcs [][2]uint64
	want := map[uint64]bool{}
	for i := range n {
		at := uint64(base + len(code))
		rel := int32(0x1000 + 16*i)
		code = append(code, 0xe8, byte(rel), byte(rel>>8), byte(rel>>16), byte(rel>>24), 0xc3) // call rel32; ret
		funcs = append(funcs, [2]uint64{at, at + 6})
		want[at+5+uint64(rel)] = true
	}
	read := func(lo, hi uint64) ([]byte, error) { return code[lo-base : hi-base], nil }
	got := map[uint64]bool{}
	for _, a := range functionReferences(funcs, read) {
		got[a] = true
	}
	for a := range want {
		if !got[a] {
			t.Errorf("no reference to %#x (the call target of a function)", a)
		}
	}
	alone := map[uint64]bool{}
	for _, f := range funcs {
		for _, a := range functionReferences([][2]uint64{f}, read) {
			alone[a] = true
		}
	}
	if len(got) != len(alone) {
		t.Errorf("%d addresses named decoding the functions together, %d decoding each alone", len(got), len(alone))
	}
}

// An unfinished experiment (er collect still records it, or was killed) gets whole copies: what it
// will use is not known yet.
func TestCompactUnfinished(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	if err := os.WriteFile(filepath.Join(exp, "log.xml"), bytes.Replace(mustRead(t, filepath.Join(exp, "log.xml")), []byte(`<end time="200000000"`), []byte(`<end time="0"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	if _, err := Archive(exp, Options{Warn: func(w string) { warnings = append(warnings, w) }}); err != nil {
		t.Fatal(err)
	}
	ix, _ := archive.ReadIndex(exp)
	if _, ok := ix.Lookup(archive.KindObject, f.prog, nil); !ok || len(warnings) != 1 || !strings.Contains(warnings[0], "is not finished") {
		t.Errorf("index %+v, warnings %q; want a whole copy of the program and why", ix.Copies, warnings)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
