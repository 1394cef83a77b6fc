package analysis

import (
	"encoding/binary"
	"testing"

	"er/internal/experiment"
)

const (
	ldsoPath = "/lib64/ld-linux-x86-64.so.2"
	ldsoBase = 0x7f5000000000
)

// TestPLTLeaf: a leaf PC in a PLT stub is dropped, its time going to the caller's call
// instruction (seed 004); a stub in a library's PLT is dropped as well.
func TestPLTLeaf(t *testing.T) {
	fk := newFake("main", "puts@plt")
	fk.addObject("/lib/libc.so.6", 0x7f0000000000, 0x2000, "qsort", "memcpy@plt")
	fk.rawSample(3, at{"main", 0x20}, at{"puts@plt", 0x4})
	fk.rawSample(2, at{"main", 0x40}, at{"qsort", 0x30}, at{"memcpy@plt", 0x6})
	code := make([]byte, 0x1100)
	for i := range code {
		code[i] = 0x90 // nop
	}
	copy(code[0x1020-5:], []byte{0xe8, 0, 0, 0, 0})
	opt := withFiles(nil, map[string][]byte{"/bin/prog": code})
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := rawNames(p, 0) + " / " + rawNames(p, 1); got != "main / main qsort" {
		t.Errorf("stacks %s", got)
	}
	main := fn(t, p, "main")
	if p.Exclusive(main)[0] != 3 || p.Exclusive(fn(t, p, "qsort"))[0] != 2 {
		t.Errorf("main %v qsort %v", p.Exclusive(main), p.Exclusive(fn(t, p, "qsort")))
	}
	if fs := p.FindFunctions("puts@plt"); len(fs) != 0 || len(p.ObjectFunctions(p.Functions[main].Object)) != 1 {
		t.Errorf("puts@plt, only in dropped frames, is listed: %v", fs)
	}
	pt := p.PCs()
	if i := pt.Find(p.Functions[main].Object, main, 0x101b); i < 0 || pt.Exclusive(i)[0] != 3 {
		t.Errorf("the call instruction of main has index %d", i)
	}
	checkLinesPCs(t, p)
}

// TestPLTResolver: time in the dynamic linker's lazy binding goes to the "@plt" pseudo-function of
// the calling object, whether the resolver has a symbol or (a stripped ld.so) is found by the
// caller's call to its PLT.
func TestPLTResolver(t *testing.T) {
	fk := newFake("main", "puts@plt", "other")
	fk.addObject("/lib/libc.so.6", 0x7f0000000000, 0x2000, "fputs", "strlen@plt")
	fk.addObject(ldsoPath, ldsoBase, 0x1000, "_dl_runtime_resolve_xsavec", "_dl_fixup", "_dl_lookup_symbol_x", "__tls_get_addr")
	const stripped = "/lib/ld-linux-x86-64.so.2"
	fk.addObject(stripped, ldsoBase+0x100000, 0x1000)
	fk.d.Archives[stripped].Symbols = []experiment.Symbol{{Name: "_dl_catch_exception", Addr: 0x5000, Size: 0x10}}
	fk.addr["resolver"] = ldsoBase + 0x100000 + 0x1010 // in no symbol

	// main's code: a call to puts@plt returning to 0x1020, and a call to other returning to 0x1040.
	code := make([]byte, 0x1400)
	call := func(ra, target uint64) {
		code[ra-5] = 0xe8
		binary.LittleEndian.PutUint32(code[ra-4:], uint32(int32(int64(target)-int64(ra))))
	}
	call(0x1020, 0x1100) // puts@plt
	call(0x1040, 0x1200) // other
	opt := withFiles(nil, map[string][]byte{"/bin/prog": code})

	fk.rawSample(1, at{"main", 0x20}, at{"_dl_runtime_resolve_xsavec", 0x10}, at{"_dl_fixup", 0x20}, at{"_dl_lookup_symbol_x", 0x8})
	fk.rawSample(2, at{"main", 0x20}, at{"_dl_runtime_resolve_xsavec", 0x10})
	fk.rawSample(4, at{"main", 0x40}, at{"fputs", 0x20}, at{"_dl_runtime_resolve_xsavec", 0x10}, at{"_dl_fixup", 0x8})
	fk.rawSample(8, at{"main", 0x20}, at{"resolver", 0x0})                       // stripped ld.so, called through puts@plt
	fk.rawSample(16, at{"main", 0x40}, at{"resolver", 0x0})                      // stripped ld.so, not through the PLT
	fk.rawSample(32, at{"main", 0x20}, at{"__tls_get_addr", 0x4})                // a named ld.so function
	fk.rawSample(64, at{"_dl_runtime_resolve_xsavec", 0x10}, at{"_dl_fixup", 8}) // nothing called it
	p, err := Analyze([]*experiment.Data{fk.d}, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"main @plt", "main @plt", "main fputs @plt", "main @plt", "main <static>@0x0 (<ld-linux-x86-64.so.2>)",
		"main __tls_get_addr", "@plt"}
	for i, w := range want {
		if got := rawNames(p, i); got != w {
			t.Errorf("stack %d: %s, want %s", i, got, w)
		}
	}
	fs := p.FindFunctions(PLTBindName)
	if len(fs) != 3 {
		t.Fatalf("%d @plt functions, want 3 (prog, libc, ld.so)", len(fs))
	}
	byObj := map[string]int64{}
	for _, f := range fs {
		if p.Functions[f].Kind != FuncPLTBind {
			t.Errorf("@plt kind %v", p.Functions[f].Kind)
		}
		byObj[p.Objects[p.Functions[f].Object].Name] = p.Exclusive(f)[0]
	}
	if byObj["<prog>"] != 11 || byObj["<libc.so.6>"] != 4 || byObj["<ld-linux-x86-64.so.2>"] != 64 {
		t.Errorf("@plt by object: %v", byObj)
	}
	for _, name := range []string{"_dl_fixup", "_dl_lookup_symbol_x", "_dl_runtime_resolve_xsavec"} {
		if fs := p.FindFunctions(name); len(fs) != 0 {
			t.Errorf("%s is listed", name)
		}
	}
	checkIdentities(t, p)
	checkLinesPCs(t, p)
	// Without the caller's code, the stripped resolver cannot be recognized.
	p, err = Analyze([]*experiment.Data{fk.d}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rawNames(p, 3); got != "main <static>@0x0 (<ld-linux-x86-64.so.2>)" {
		t.Errorf("without code: %s", got)
	}
}

func TestIsDynamicLinker(t *testing.T) {
	for p, want := range map[string]bool{
		"/lib64/ld-linux-x86-64.so.2": true, "/usr/lib/ld-musl-x86_64.so.1": true, "/lib/ld.so.1": true,
		"/lib/libc.so.6": false, "/usr/bin/ld": false, "[vdso]": false,
	} {
		if got := isDynamicLinker(p); got != want {
			t.Errorf("isDynamicLinker(%s) = %v", p, got)
		}
	}
}

// rawNames names the functions of the stack of the r-th distinct raw stack (in the order of the
// samples that first use them).
func rawNames(p *Profile, r int) string { return stackNames(p, int(p.raw[r].stack)) }
