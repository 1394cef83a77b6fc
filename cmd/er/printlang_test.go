package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nsFunctions runs er print -printmode csv -functions under filter ("": none) and returns each
// function's exclusive and inclusive Total CPU Time in ns, exact as the CSV prints them.
func nsFunctions(t *testing.T, exp, filter string, more ...string) map[string][2]int64 {
	t.Helper()
	args := []string{"print", "-printmode", "csv", "-metrics", "e.totalcpu:i.totalcpu", "-limit", "0"}
	if filter != "" {
		args = append(args, "-filters", filter)
	}
	args = append(append(append(args, more...), "-functions"), exp)
	r := er(t, "", nil, args...)
	if r.code != 0 {
		t.Fatalf("er %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	out := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		f := strings.SplitN(line, ",", 3)
		if len(f) != 3 {
			t.Fatalf("unexpected CSV line %q", line)
		}
		out[f[2]] = [2]int64{secondsNS(t, f[0]), secondsNS(t, f[1])}
	}
	return out
}

// secondsNS reads "1.234567890" as 1234567890.
func secondsNS(t *testing.T, s string) int64 {
	t.Helper()
	whole, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole+(frac + "000000000")[:9], 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestStackFilterSeed002: seed 002's program, where C is called by A and by B. INSTK(A) keeps
// exactly A's part of the profile: C's inclusive time under it is C's attributed time from A, the
// same to the nanosecond as callers-callees says, and within 2% of what the program measured around
// A's calls of C; with INSTK(B)'s it adds up to C's inclusive time, and a filter with its negation
// to the total.
func TestStackFilterSeed002(t *testing.T) {
	needCollect(t)
	exp, r := collectExp(t, nil, "-p", "hi", cprog(t, "seed002"))
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	all := nsFunctions(t, exp, "")
	underA := nsFunctions(t, exp, "INSTK(A)")
	underB := nsFunctions(t, exp, "INSTK(B)")
	notA := nsFunctions(t, exp, "!INSTK(A)")
	cc := printProfile(t, exp, "C")
	total, c := all["<Total>"][1], all["C"][1]
	t.Logf("total %d ns; C %d ns: from A %d, from B %d", total, c, underA["C"][1], underB["C"][1])
	if underA["<Total>"][1] != all["A"][1] || underB["<Total>"][1] != all["B"][1] {
		t.Errorf("INSTK(A) total %d, A's inclusive %d; INSTK(B) total %d, B's inclusive %d", underA["<Total>"][1], all["A"][1], underB["<Total>"][1], all["B"][1])
	}
	if underA["C"][1]+underB["C"][1] != c || c == 0 {
		t.Errorf("C under INSTK(A) %d + under INSTK(B) %d != C's inclusive %d", underA["C"][1], underB["C"][1], c)
	}
	if underA["<Total>"][1]+notA["<Total>"][1] != total {
		t.Errorf("INSTK(A) %d + !INSTK(A) %d != total %d", underA["<Total>"][1], notA["<Total>"][1], total)
	}
	if _, ok := underA["B"]; ok {
		t.Errorf("B is in the functions under INSTK(A): %v", underA["B"])
	}
	// The same as callers-callees attributes (seconds, 9 decimals).
	for _, x := range []struct {
		caller string
		got    int64
	}{{"A", underA["C"][1]}, {"B", underB["C"][1]}} {
		if want := int64(cc.callers["C"][x.caller]*1e9 + 0.5); x.got != want {
			t.Errorf("C under INSTK(%s): %d ns, callers-callees: %d ns", x.caller, x.got, want)
		}
		near(t, "C under INSTK("+x.caller+")", float64(x.got)/1e9, m["C from "+x.caller], 0.02*float64(total)/1e9)
	}
	// The Oracle manual's forms: A calling C, callers first.
	ordered := nsFunctions(t, exp, `(FNAME("A"), FNAME("C")) ORDERED IN USTACK`)
	some := nsFunctions(t, exp, `(FNAME("A") SOME IN USTACK)`)
	if ordered["<Total>"][1] != underA["C"][1] || some["<Total>"][1] != underA["<Total>"][1] {
		t.Errorf("A calling C: %d ns, want %d; FNAME(\"A\") SOME IN USTACK: %d, want %d", ordered["<Total>"][1], underA["C"][1],
			some["<Total>"][1], underA["<Total>"][1])
	}
}

// TestMapfile: er print's mapfile of a program built with -ffunction-sections lists its functions
// in the order of the function list, slow (4 units) before fast (2); gold links the program again in
// that order.
func TestMapfile(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("ld.gold"); err != nil {
		t.Skip("no gold linker (ld.gold): binutils-gold")
	}
	flags := []string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-ffunction-sections"}
	bin := cbuild(t, "twofuncs", flags...)
	exp, r := collectExp(t, nil, bin, "4")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "order.txt")
	pr := er(t, "", nil, "print", "-mapfile", filepath.Base(bin), file, exp)
	if pr.code != 0 || !strings.Contains(pr.stdout, "functions of <"+filepath.Base(bin)+"> to "+file) {
		t.Fatalf("mapfile: exit %d\n%s%s", pr.code, pr.stdout, pr.stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if name, ok := strings.CutPrefix(line, ".text."); ok && !strings.HasPrefix(name, "startup.") {
			order = append(order, name)
		} else if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, ".text.startup.") {
			t.Errorf("mapfile line %q", line)
		}
	}
	// The function list's order, of the program's functions.
	fl := er(t, "", nil, "print", "-printmode", "csv", "-limit", "0", "-functions", exp)
	var listed []string
	for _, line := range strings.Split(fl.stdout, "\n") {
		f := strings.Split(line, ",")
		if name := f[len(f)-1]; slices.Contains(order, name) {
			listed = append(listed, name)
		}
	}
	t.Logf("mapfile order %v", order)
	if !slices.Equal(order, listed) || len(order) < 3 || order[0] != "slow" || slices.Index(order, "fast") < 1 || !slices.Contains(order, "main") {
		t.Fatalf("mapfile order %v; the function list's %v; want slow first, then fast, and main", order, listed)
	}
	// Link again with the file, and the functions are in its order.
	relinked := filepath.Join(t.TempDir(), "twofuncs")
	args := append(append([]string{}, flags...), "-fuse-ld=gold", "-Wl,--section-ordering-file="+file, "-o", relinked, filepath.Join("..", "..", "testdata", "twofuncs.c"))
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	nm, err := exec.Command("nm", "-n", relinked).Output()
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, line := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(line); len(f) == 3 && strings.ContainsAny(f[1], "tT") && slices.Contains(order, f[2]) {
			linked = append(linked, f[2])
		}
	}
	// _start is crt1.o's, in its .text, not a section of its own: the linker leaves it first.
	placed := slices.DeleteFunc(slices.Clone(order), func(n string) bool { return n == "_start" })
	linked = slices.DeleteFunc(linked, func(n string) bool { return n == "_start" })
	if !slices.Equal(linked, placed) {
		t.Errorf("relinked with the mapfile, the functions are at %v, want %v", linked, placed)
	}
}
