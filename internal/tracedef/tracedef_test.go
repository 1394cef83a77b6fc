package tracedef

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"er/internal/contracttest"
)

// TestGeneratedFresh: the generated C header and Go constants are what the definition gives now; a
// change to one of the three alone fails here.
func TestGeneratedFresh(t *testing.T) {
	for _, d := range Defs {
		c, err := d.C()
		if err != nil {
			t.Fatal(err)
		}
		g, err := d.Go()
		if err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string][]byte{d.CFile: c, d.GoFile: g} {
			got, err := os.ReadFile(filepath.Join("..", "..", file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: it is not what internal/tracedef/def.go gives; run go generate ./internal/tracedef (and edit def.go, not the file)", file)
			}
		}
	}
}

// TestCompilerAgrees: the C compiler lays each generated header out as its definition's Layout
// says (the Go constants' values): every struct's size, every field's offset and size, every
// constant and string.
func TestCompilerAgrees(t *testing.T) {
	for _, d := range Defs {
		compilerAgrees(t, d)
	}
}

func compilerAgrees(t *testing.T, d *Def) {
	header, err := filepath.Abs(filepath.Join("..", "..", d.CFile))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "layout.c")
	if err := os.WriteFile(src, d.Program(header), 0o644); err != nil {
		t.Fatal(err)
	}
	out := contracttest.Run(t, src)
	l, err := d.Layout()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range d.Structs {
		if out.Structs[s.C] != l.Sizes[s.C] {
			t.Errorf("struct %s: the compiler makes %d bytes, the definition %d", s.C, out.Structs[s.C], l.Sizes[s.C])
		}
		for _, f := range s.Fields {
			size, _, _ := l.typeSize(f.Type)
			name := s.C + "." + f.C
			if got, want := out.Fields[name], (contracttest.Field{Off: l.Offsets[name], Size: size}); got != want {
				t.Errorf("%s: the compiler puts it at %d (%d bytes), the definition at %d (%d bytes)", name, got.Off, got.Size, want.Off, want.Size)
			}
			n++
		}
	}
	for _, e := range d.Enums {
		for _, m := range e.Members {
			if out.Consts[m.C] != uint64(m.Value) {
				t.Errorf("%s: the compiler says %d, the definition %d", m.C, out.Consts[m.C], m.Value)
			}
		}
	}
	for _, def := range d.Defines {
		v := def.GoValue
		if v == "" {
			v = def.Value
		}
		if n, err := strconv.ParseUint(v, 0, 64); err == nil && out.Consts[def.C] != n {
			t.Errorf("%s: the compiler says %d, the definition %s", def.C, out.Consts[def.C], v)
		} else if err != nil && def.Go != "" {
			t.Errorf("%s: Go has %s = %s, which is not a number the compiler's can be compared with", def.C, def.Go, v)
		}
	}
	for _, s := range d.Strings {
		if out.Strings[s.C] != s.Value {
			t.Errorf("%s: the compiler says %q, the definition %q", s.C, out.Strings[s.C], s.Value)
		}
	}
	t.Logf("%s: %d structs, %d fields, %d constants", d.CFile, len(out.Structs), n, len(out.Consts))
}

// TestOneFieldChangesBoth: a field's type changed in the definition changes the C struct, the C
// compiler's checks and the Go reader's offsets of the fields after it.
func TestOneFieldChangesBoth(t *testing.T) {
	d := *Trace
	d.Structs = append([]Struct{}, Trace.Structs...)
	for i := range d.Structs {
		if d.Structs[i].C == "er_rec_heap" {
			fs := append([]Field{}, d.Structs[i].Fields...)
			for j := range fs {
				if fs[j].C == "stack" {
					fs[j].Type = "u64"
				}
			}
			d.Structs[i].Fields = fs
		}
	}
	c0, _ := Trace.C()
	g0, _ := Trace.Go()
	c1, err := d.C()
	if err != nil {
		t.Fatal(err)
	}
	g1, err := d.Go()
	if err != nil {
		t.Fatal(err)
	}
	heap := regexp.MustCompile(`(?s)struct er_rec_heap \{.*?\};`)
	if h0, h1 := heap.Find(c0), heap.Find(c1); !bytes.Contains(h0, []byte("uint32_t stack;")) || !bytes.Contains(h1, []byte("uint64_t stack;")) {
		t.Errorf("C: struct er_rec_heap\n%s\nbecame\n%s", h0, h1)
	}
	for _, want := range []string{`offsetof(struct er_rec_heap, addr) == 32`, `sizeof(struct er_rec_heap) == 56`} {
		if !bytes.Contains(c1, []byte(want)) {
			t.Errorf("C: no %s", want)
		}
	}
	goConst := func(g []byte, name string) string {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*(\d+)`).FindSubmatch(g)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
	for name, want := range map[string][2]string{"recHeapStack": {"16", "16"}, "recHeapAddr": {"24", "32"}, "recHeapOld": {"40", "48"}, "sizeofRecHeap": {"48", "56"}} {
		if got := [2]string{goConst(g0, name), goConst(g1, name)}; got != want {
			t.Errorf("Go %s: %v, want %v", name, got, want)
		}
	}
	if strings.Count(string(c0), "\n") == 0 || bytes.Equal(c0, c1) || bytes.Equal(g0, g1) {
		t.Error("the change changed nothing")
	}
}

func TestLayoutErrors(t *testing.T) {
	for typ, want := range map[string]string{"u128": "want u8", "char[0]": "N > 0", "struct nosuch": "no such struct"} {
		d := &Def{Structs: []Struct{{C: "s", Fields: []Field{{C: "f", Type: typ}}}}}
		if _, err := d.Layout(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "s.f") {
			t.Errorf("%s: %v; want an error of s.f with %q", typ, err, want)
		}
	}
}
