package debuginfo

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sameAnswers checks that ex answers as in for every address of the ranges, and, outside them,
// as in or not at all.
func sameAnswers(t *testing.T, in, ex *Info, ranges [][2]uint64, lo, hi uint64) {
	t.Helper()
	inside := func(pc uint64) bool {
		for _, r := range ranges {
			if r[0] <= pc && pc < r[1] {
				return true
			}
		}
		return false
	}
	checked, outsideSame := 0, 0
	for pc := lo; pc < hi; pc++ {
		wf, wok := in.Frames(pc)
		gf, gok := ex.Frames(pc)
		wfn, wfok := in.Function(pc)
		gfn, gfok := ex.Function(pc)
		wfile, wline, wlok := in.Line(pc)
		gfile, gline, glok := ex.Line(pc)
		same := wok == gok && reflect.DeepEqual(wf, gf) && wfok == gfok && reflect.DeepEqual(wfn, gfn) &&
			wlok == glok && wfile == gfile && wline == gline
		if inside(pc) {
			checked++
			if !same {
				t.Fatalf("%#x (kept): Frames %v %v, Function %+v %v, Line %s:%d %v; want %v %v, %+v %v, %s:%d %v",
					pc, gf, gok, gfn, gfok, gfile, gline, glok, wf, wok, wfn, wfok, wfile, wline, wlok)
			}
			continue
		}
		if same {
			outsideSame++
			continue
		}
		if gok && !reflect.DeepEqual(wf, gf) || gfok && !reflect.DeepEqual(wfn, gfn) || glok && (gfile != wfile || gline != wline) {
			t.Fatalf("%#x (not kept): a wrong answer: Frames %v, Function %+v, Line %s:%d; the original says %v, %+v, %s:%d",
				pc, gf, gfn, gfile, gline, wf, wfn, wfile, wline)
		}
	}
	for _, r := range ranges {
		for a := r[0]; a < r[1]; a += 7 {
			for b := a + 1; b <= r[1]; b += 11 {
				if w, g := in.Rows(a, b), ex.Rows(a, b); !reflect.DeepEqual(w, g) {
					t.Fatalf("Rows(%#x, %#x) = %v, want %v", a, b, g, w)
				}
			}
		}
	}
	t.Logf("%d addresses kept and answered the same; %d of the others answered the same, the rest not at all", checked, outsideSame)
}

// funcRange is the [lo, hi) of the function symbol name of the file at exe.
func funcRange(t *testing.T, exe, name string) [2]uint64 {
	t.Helper()
	s, ok := symbols(t, exe)[name]
	if !ok {
		t.Fatalf("no symbol %s in %s", name, exe)
	}
	return [2]uint64{s.Value, s.Value + s.Size}
}

func TestExtractAnswersAsTheOriginal(t *testing.T) {
	exe := build(t, "", "inline", "gcc", "inline.c", "-O2", "-g")
	in, err := Open(exe)
	if err != nil || !in.HasDWARF {
		t.Fatalf("Open: %v, DWARF %v", err, in != nil && in.HasDWARF)
	}
	a, c := funcRange(t, exe, "caller_a"), funcRange(t, exe, "caller_c")
	ranges := [][2]uint64{c, a, {a[0] + 1, a[0] + 3}} // unsorted, overlapping
	b, err := in.Extract(ranges, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := FromExtract("/x/inline.compact", b)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extract of caller_a and caller_c: %d bytes", len(b))
	if !slices.Equal(ex.Files(), in.Files()) {
		t.Errorf("Files %q, want %q", ex.Files(), in.Files())
	}
	wv, _ := in.Variables()
	gv, _ := ex.Variables()
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("Variables %+v, want %+v", gv, wv)
	}
	// The inlined chain of caller_c (twice_scaled, scale) is there.
	var inlined bool
	for pc := c[0]; pc < c[1]; pc++ {
		if fr, ok := ex.Frames(pc); ok && len(fr) == 3 && fr[0].Func == "scale" && fr[1].Func == "twice_scaled" {
			inlined = true
		}
	}
	if !inlined {
		t.Error("no address of caller_c has the inline chain scale <- twice_scaled <- caller_c")
	}
	lo, hi := min(a[0], c[0])-64, max(a[1], c[1])+64
	sameAnswers(t, in, ex, MergeRanges(ranges), lo, hi)
	// Without variables, none.
	b, _ = in.Extract(ranges, []string{"/a.c"}, false)
	ex, err = FromExtract("x", b)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ex.Variables(); len(v) != 0 || !slices.Equal(ex.Files(), []string{"/a.c"}) {
		t.Errorf("without variables: %d variables, files %q", len(v), ex.Files())
	}
}

func TestExtractDamaged(t *testing.T) {
	exe := build(t, "", "inline", "gcc", "inline.c", "-O2", "-g")
	in, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.Extract([][2]uint64{funcRange(t, exe, "caller_c")}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "not an extract"},
		{"magic", append([]byte("XXXX"), b[4:]...), "not an extract"},
		{"version", append([]byte("ERDI\x09"), b[5:]...), "version 9"},
		{"cut", b[:len(b)-1], "byte "},
		{"trailing", append(slices.Clone(b), 0), "1 bytes after the end"},
		{"huge count", append([]byte("ERDI\x01"), 0xff, 0xff, 0xff, 0xff, 0x0f), "more than the"},
	} {
		if _, err := FromExtract("/x/e", c.b); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/x/e") {
			t.Errorf("%s: %v, want an error with %q naming the file", c.name, err, c.want)
		}
	}
}

func FuzzFromExtract(f *testing.F) {
	f.Add([]byte("ERDI\x01\x00\x00\x00\x00"))
	f.Add([]byte("ERDI\x01\x01\x02/a\x01\x02/b\x01\x01\x00\x02\x10\x01\x00\x02\x01\x00\x00\x01\x01f\x10\x01\x00\x00\x00\x00\x00\x01\x00\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := FromExtract("fuzz", b)
		if err != nil {
			return
		}
		for _, pc := range []uint64{0, 1, 0x10, 0x11, 0x20, 1 << 40} {
			in.Frames(pc)
			in.Function(pc)
			in.Line(pc)
			in.Rows(pc, pc+64)
		}
		in.Files()
		in.Variables()
	})
}
