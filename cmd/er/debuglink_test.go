package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// strippedFuncs are the static functions of testdata/stripped.c.
var strippedFuncs = []string{"five", "three", "two"}

// needTools skips the test when one of the programs is not installed.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (binutils, xz-utils)", tool)
		}
	}
}

// run runs a command in dir, failing the test when it fails, and returns its output.
func runIn(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, msg)
	}
	return string(out)
}

// copyExe copies the program at src to dir/name.
func copyExe(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// symbolAddrs are the addresses of the .symtab functions of the program at path.
func symbolAddrs(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	return addr
}

// checkSections fails the test unless the program at path has exactly the named sections of
// interest: which of .symtab, .debug_info, .gnu_debuglink, .gnu_debugdata and the build id note.
func checkSections(t *testing.T, path string, want ...string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for _, s := range f.Sections {
		switch s.Name {
		case ".symtab", ".debug_info", ".gnu_debuglink", ".gnu_debugdata", ".note.gnu.build-id":
			got = append(got, s.Name)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s has the sections %v, want %v", path, got, want)
	}
}

// collectStripped collects the stripped program bin and checks that er print -functions shows each
// function of strippedFuncs under name(fn), with the CPU time the program measured itself (5%),
// and no <static> function. It returns the experiment and what er print -functions wrote (its
// standard output, then its standard error).
func collectStripped(t *testing.T, bin string, name func(fn string) string) (string, string) {
	t.Helper()
	exp, r := collectExp(t, []string{"ER_TEST_UNIT=0.025"}, "-p", "hi", bin)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	m := measured(t, r.stdout)
	// Inclusive: the program's thread CPU clock counts the kernel's work done while each function
	// ran (its clock_gettime calls, and being preempted on a busy machine).
	excl, incl := functionTimes(t, exp)
	for _, fn := range strippedFuncs {
		n := name(fn)
		got, want := incl[n], m[fn]
		t.Logf("%s: %.4f s, measured %.4f s (%.1f%%)", n, got, want, 100*got/want)
		if want < 0.1 || abs(got-want) > 0.05*want {
			t.Errorf("%s: %.4f s inclusive, the program measured %.4f s", n, got, want)
		}
	}
	for n := range excl {
		// The program's own: libc's code without symbols or call frame entries is another matter
		// (with $ER_DEBUG_DIR elsewhere, its separate debug file is not found).
		if strings.HasPrefix(n, "<static>") && !strings.Contains(n, "(<libc") && !strings.Contains(n, "(<ld-linux") {
			t.Errorf("a <static> function remains: %s", n)
		}
	}
	p := er(t, "", nil, "print", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	return exp, p.stdout + p.stderr
}

// TestStrippedDebugLink: a program without a build id, stripped of every symbol, whose debug file
// only its .gnu_debuglink names (objcopy --only-keep-debug, --add-gnu-debuglink), shows its static
// functions by their names with the CPU time each measured itself: with the debug file next to it,
// in its .debug/ directory, and under a global debug directory ($ER_DEBUG_DIR) followed by the
// program's directory, as GDB looks for it; the names are archived, so er print shows them also
// when the debug file is gone; -disasm shows their instructions. A debug file whose
// CRC-32 is not the one the link records is another build's: it is not used (the functions are
// named by their call frame entries, as without it) and er print says why (issue 12).
func TestStrippedDebugLink(t *testing.T) {
	needCollect(t)
	needTools(t, "objcopy", "strip")
	full := cbuild(t, "stripped", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline",
		"-fno-optimize-sibling-calls", "-pthread", "-Wl,--build-id=none")
	addr := symbolAddrs(t, full)
	dir := t.TempDir()
	bin := copyExe(t, full, dir, "stripped")
	runIn(t, dir, "objcopy", "--only-keep-debug", "stripped", "stripped.debug")
	runIn(t, dir, "strip", "--strip-all", "stripped")
	runIn(t, dir, "objcopy", "--add-gnu-debuglink=stripped.debug", "stripped")
	checkSections(t, bin, ".gnu_debuglink")
	debug := filepath.Join(dir, "stripped.debug")
	global := t.TempDir()
	t.Setenv("ER_DEBUG_DIR", global) // for er collect and er print: /usr/lib/debug is not looked in
	byName := func(fn string) string { return fn }

	t.Run("beside", func(t *testing.T) {
		exp, _ := collectStripped(t, bin, byName)
		// The names are in the experiment's archive: er print does not need the debug file (before,
		// they came from its DWARF at print time, and without it were stripped+0x1276...).
		moveFile(t, debug, debug+".away")
		excl, _ := functionTimes(t, exp)
		moveFile(t, debug+".away", debug)
		for _, fn := range strippedFuncs {
			if excl[fn] < 0.1 {
				t.Errorf("without the debug file at print time: %s has %.4f s", fn, excl[fn])
			}
		}
		d := er(t, "", nil, "print", "-disasm", "five", exp)
		if d.code != 0 || !strings.Contains(d.stdout, "five") || !strings.Contains(d.stdout, "ret") {
			t.Errorf("er print -disasm five: exit %d\n%s%s", d.code, d.stdout, d.stderr)
		}
	})
	t.Run("dot-debug", func(t *testing.T) {
		moveFile(t, debug, filepath.Join(dir, ".debug", "stripped.debug"))
		defer moveFile(t, filepath.Join(dir, ".debug", "stripped.debug"), debug)
		_, _ = collectStripped(t, bin, byName)
	})
	t.Run("global", func(t *testing.T) {
		in := filepath.Join(global, dir, "stripped.debug")
		moveFile(t, debug, in)
		defer moveFile(t, in, debug)
		_, _ = collectStripped(t, bin, byName)
	})
	t.Run("wrong-crc", func(t *testing.T) {
		// Another build's debug file: the same program built with -O2.
		other := cbuild(t, "stripped", "-O2", "-g", "-Wl,--build-id=none")
		odir := t.TempDir()
		copyExe(t, other, odir, "stripped")
		runIn(t, odir, "objcopy", "--only-keep-debug", "stripped", "stripped.debug")
		moveFile(t, debug, debug+".right")
		defer moveFile(t, debug+".right", debug)
		moveFile(t, filepath.Join(odir, "stripped.debug"), debug)
		defer os.Remove(debug)
		_, out := collectStripped(t, bin, func(fn string) string { return fmt.Sprintf("stripped+0x%x", addr[fn]) })
		if !strings.Contains(out, debug+": CRC") || !strings.Contains(out, "does not match") {
			t.Errorf("er print does not say why %s is not used:\n%s", debug, out)
		}
	})
}

// TestStrippedMiniDebugInfo: a program stripped of every symbol whose only names are its
// MiniDebugInfo, made as Fedora's find-debuginfo makes it (the .symtab of the functions that are
// not dynamic symbols, xz-compressed into .gnu_debugdata), shows its static functions by their
// names with the CPU time each measured itself (issue 12).
func TestStrippedMiniDebugInfo(t *testing.T) {
	needCollect(t)
	needTools(t, "objcopy", "strip", "nm", "xz")
	full := cprog(t, "stripped")
	dir := t.TempDir()
	bin := copyExe(t, full, dir, "stripped")
	nmNames := func(args ...string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(runIn(t, dir, "nm", append([]string{"--format=posix", "--defined-only"}, args...)...), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && (len(args) > 1 || f[1] == "T" || f[1] == "t") {
				m[f[0]] = true
			}
		}
		return m
	}
	dyn := nmNames("-D", "stripped")
	var keep []string
	for n := range nmNames("stripped") {
		if !dyn[n] {
			keep = append(keep, n)
		}
	}
	sort.Strings(keep)
	if err := os.WriteFile(filepath.Join(dir, "keep_symbols"), []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runIn(t, dir, "objcopy", "--only-keep-debug", "stripped", "mini")
	runIn(t, dir, "objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
		"--keep-symbols=keep_symbols", "mini", "mini.debug")
	runIn(t, dir, "xz", "-T1", "mini.debug")
	runIn(t, dir, "strip", "--strip-all", "stripped")
	runIn(t, dir, "objcopy", "--add-section", ".gnu_debugdata=mini.debug.xz", "stripped")
	checkSections(t, bin, ".gnu_debugdata", ".note.gnu.build-id")
	t.Setenv("ER_DEBUG_DIR", t.TempDir()) // no debug file by build id
	_, _ = collectStripped(t, bin, func(fn string) string { return fn })
}

// moveFile renames from to to, making to's directory.
func moveFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
