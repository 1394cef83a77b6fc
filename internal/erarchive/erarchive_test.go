package erarchive

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"er/internal/archive"
	"er/internal/events"
	"er/internal/experiment"
	"er/internal/kindtest"
)

// fixture is a program built from testdata into a temporary directory: prog (prog.c and cold.c)
// and libcold.so (cold.c), with copies of the sources.
type fixture struct {
	dir, prog, lib, progSrc, coldSrc string
}

func build(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("gcc not installed: %v", err)
	}
	dir := t.TempDir()
	f := &fixture{dir: dir, prog: filepath.Join(dir, "prog"), lib: filepath.Join(dir, "libcold.so"),
		progSrc: filepath.Join(dir, "prog.c"), coldSrc: filepath.Join(dir, "cold.c")}
	for _, s := range []string{"prog.c", "cold.c"} {
		b, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-o", f.prog, f.progSrc, f.coldSrc)
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-shared", "-fPIC", "-o", f.lib, f.coldSrc)
	return f
}

func (f *fixture) gcc(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

const (
	progBase = 0x555500000000
	libBase  = 0x7f0000000000
)

// experiment writes an experiment at dir in which prog and libcold.so are mapped, with their
// symbol archives, and samples in work() of prog, or with inLib in cold() of libcold.so; and the
// files extra, mapped without symbol archives.
func (f *fixture) experiment(t *testing.T, dir string, inLib bool, extra ...string) {
	t.Helper()
	f.experimentOf(t, dir, inLib, func(w *experiment.Writer, i int, id uint32) error {
		return w.Clock(experiment.ClockSample{Time: int64(i+1) * 1e7, Pid: 100, Tid: 100, Mode: experiment.ModeUser, Period: 1e7, Stack: id})
	}, extra...)
}

// experimentOf is experiment with the events that record writes: the i-th of 10 at stack id.
func (f *fixture) experimentOf(t *testing.T, dir string, inLib bool, record func(w *experiment.Writer, i int, id uint32) error, extra ...string) {
	t.Helper()
	log := experiment.Log{FormatVersion: experiment.FormatVersion, Pid: 100, StartTime: time.Now().UnixNano(),
		Settings: []experiment.Setting{{Name: "clock", Value: "on"}}}
	w, err := experiment.Create(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	hot, base, fn := f.prog, uint64(progBase), "work"
	if inLib {
		hot, base, fn = f.lib, libBase, "cold"
	}
	for _, m := range []struct {
		path string
		base uint64
	}{{f.prog, progBase}, {f.lib, libBase}} {
		a, err := archive.Build(m.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := experiment.WriteArchive(dir, a); err != nil {
			t.Fatal(err)
		}
		w.AddMapping(experiment.Mapping{Pid: 100, Start: m.base, End: m.base + 0x10000, Path: m.path, BuildID: a.BuildID, UnloadTime: -1})
	}
	w.AddMapping(experiment.Mapping{Pid: 100, Start: 0x7fff0000000, End: 0x7fff0002000, Path: "[vdso]", UnloadTime: -1})
	for i, p := range extra {
		start := uint64(0x7e0000000000 + i*0x100000)
		w.AddMapping(experiment.Mapping{Pid: 100, Start: start, End: start + 0x1000, Path: p, UnloadTime: -1})
	}
	id, err := w.Stack(experiment.Stack{symbolPC(t, hot, base, fn)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := record(w, i, id); err != nil {
			t.Fatal(err)
		}
	}
	w.UpdateLog(func(l *experiment.Log) { l.EndTime = 2e8 }) // finished, as er collect leaves it
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// symbolPC is an address in function fn of the object at path mapped at base, 2 bytes past its start.
func symbolPC(t *testing.T, path string, base uint64, fn string) uint64 {
	t.Helper()
	a, err := archive.Build(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range a.Symbols {
		if s.Name == fn {
			for _, seg := range a.Segments {
				if s.Addr >= seg.Vaddr && s.Addr < seg.Vaddr+seg.Filesz {
					return base + s.Addr - seg.Vaddr + seg.Offset + 2
				}
			}
		}
	}
	t.Fatalf("no %s in %s", fn, path)
	return 0
}

// archived lists the paths the index of exp holds, by kind: load objects (copied whole or kept
// in compact archives) and sources.
func archived(t *testing.T, exp string) (objects, sources []string) {
	t.Helper()
	ix, err := archive.ReadIndex(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ix.Copies {
		if c.Kind == archive.KindObject || c.Kind == archive.KindCompact {
			objects = append(objects, c.Path)
		} else {
			sources = append(sources, c.Path)
		}
	}
	slices.Sort(objects)
	slices.Sort(sources)
	return objects, sources
}

// TestReadsObjectFiles: the modes that make compact archives (the default among them) read the
// objects' files; the others, and off, do not.
func TestReadsObjectFiles(t *testing.T) {
	for mode, want := range map[string]bool{"": true, "usedsrc": true, "usedldobjects": true, "copy": false,
		"on": false, "src": false, "ldobjects": false, "off": false, "nonsense": false} {
		if got := ReadsObjectFiles(mode); got != want {
			t.Errorf("ReadsObjectFiles(%q) = %v, want %v", mode, got, want)
		}
	}
}

func TestModes(t *testing.T) {
	f := build(t)
	for _, c := range []struct {
		mode             string
		objects, sources []string
	}{
		{"off", nil, nil},
		{"usedldobjects", []string{f.prog}, nil},
		{"ldobjects", []string{f.lib, f.prog}, nil},
		{"usedsrc", []string{f.prog}, []string{f.progSrc}},
		{"copy", []string{f.prog}, []string{f.progSrc}},
		{"src", []string{f.lib, f.prog}, []string{f.coldSrc, f.progSrc}},
		{"on", []string{f.lib, f.prog}, []string{f.coldSrc, f.progSrc}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			exp := filepath.Join(t.TempDir(), "test.1.er")
			f.experiment(t, exp, false)
			var warnings []string
			res, err := Archive(exp, Options{Mode: c.mode, Warn: func(w string) { warnings = append(warnings, w) }})
			if err != nil {
				t.Fatal(err)
			}
			objects, sources := archived(t, exp)
			if !slices.Equal(objects, c.objects) || !slices.Equal(sources, c.sources) {
				t.Errorf("archived objects %q, sources %q; want %q, %q", objects, sources, c.objects, c.sources)
			}
			// usedsrc and usedldobjects keep compact archives of the load objects; the others, copies.
			wantKind := archive.KindObject
			if c.mode == "usedsrc" || c.mode == "usedldobjects" {
				wantKind = archive.KindCompact
			}
			ix, _ := archive.ReadIndex(exp)
			for _, cp := range ix.Copies {
				if cp.Kind != archive.KindSource && cp.Kind != wantKind {
					t.Errorf("%s is archived as %s, want %s", cp.Path, cp.Kind, wantKind)
				}
			}
			if res.Objects != len(c.objects) || res.Sources != len(c.sources) || res.Kept != 0 || res.Skipped != 0 || len(warnings) != 0 {
				t.Errorf("result %+v, warnings %q; want %d objects, %d sources copied, nothing else", res, warnings, len(c.objects), len(c.sources))
			}
			if c.mode == "off" {
				if _, err := os.Stat(filepath.Join(exp, "archives", archive.IndexFile)); !os.IsNotExist(err) {
					t.Errorf("mode off wrote an index: %v", err)
				}
				return
			}
			// Idempotent.
			res, err = Archive(exp, Options{Mode: c.mode})
			if n := len(c.objects) + len(c.sources); err != nil || res.Objects+res.Sources != 0 || res.Kept != n {
				t.Errorf("again: %+v, %v; want nothing copied, %d kept", res, err, n)
			}
		})
	}
}

func TestChangedFiles(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	// Rebuilt library (another build id), a source edited after the experiment started, a symbol
	// archive missing (written again from the unchanged program).
	f.gcc(t, "-O2", "-g", "-Wl,--build-id", "-shared", "-fPIC", "-DEXTRA", "-o", f.lib, f.coldSrc, "-Wl,--build-id=0x1234")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f.progSrc, later, later); err != nil {
		t.Fatal(err)
	}
	arName := filepath.Join(exp, "archives", experiment.ArchiveName(f.prog))
	if err := os.Remove(arName); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	res, err := Archive(exp, Options{Mode: "src", Warn: func(w string) { warnings = append(warnings, w) }})
	if err != nil {
		t.Fatal(err)
	}
	objects, sources := archived(t, exp)
	if !slices.Equal(objects, []string{f.prog}) || !slices.Equal(sources, []string{f.coldSrc}) || res.Skipped != 2 {
		t.Errorf("archived objects %q, sources %q, %+v; want prog and cold.c only, 2 skipped", objects, sources, res)
	}
	want := []string{
		f.lib + ": not archived: " + f.lib + " has changed since the experiment (build id 1234, was ",
		f.progSrc + ": not archived: it was modified after the experiment started (er archive -F archives it anyway)",
	}
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], want[0]) || warnings[1] != want[1] {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	if _, err := experiment.ReadArchive(arName); err != nil {
		t.Errorf("the missing symbol archive was not written again: %v", err)
	}
	// -F archives the edited source.
	if _, err := Archive(exp, Options{Mode: "src", Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, sources := archived(t, exp); !slices.Equal(sources, []string{f.coldSrc, f.progSrc}) {
		t.Errorf("with Force: sources %q", sources)
	}
	// Deleted: already archived, so kept, no warning.
	os.Remove(f.prog)
	warnings = nil
	res, err = Archive(exp, Options{Mode: "usedsrc", Warn: func(w string) { warnings = append(warnings, w) }})
	if err != nil || res.Kept != 2 || res.Skipped != 0 || len(warnings) != 0 {
		t.Errorf("after the program was deleted: %+v, %v, %q; want 2 kept and no warning", res, err, warnings)
	}
}

func TestMissingSources(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	os.Remove(f.progSrc)
	var warnings []string
	res, err := Archive(exp, Options{Mode: "usedsrc", Warn: func(w string) { warnings = append(warnings, w) }})
	if err != nil {
		t.Fatal(err)
	}
	want := "1 source files of the debug information are not on this machine, so not archived: " + f.progSrc
	if res.Objects != 1 || res.Sources != 0 || res.Skipped != 1 || len(warnings) != 1 || warnings[0] != want {
		t.Errorf("%+v, warnings %q; want 1 object, the warning %q", res, warnings, want)
	}
}

func TestSubexperiments(t *testing.T) {
	f := build(t)
	founder := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, founder, false)
	sub := filepath.Join(founder, "_f1.er")
	f.experiment(t, sub, true) // its samples are in libcold.so
	// A subexperiment has no archives of its own: it reads its founder's.
	if err := os.RemoveAll(filepath.Join(sub, "archives")); err != nil {
		t.Fatal(err)
	}
	if _, err := Archive(founder, Options{Mode: "usedldobjects"}); err != nil {
		t.Fatal(err)
	}
	if objects, _ := archived(t, founder); !slices.Equal(objects, []string{f.prog}) {
		t.Errorf("without descendants: %q, want prog only", objects)
	}
	res, err := Archive(founder, Options{Mode: "usedldobjects", Descendants: true})
	if err != nil || res.Objects != 1 || res.Kept != 1 {
		t.Fatalf("with descendants: %+v, %v; want libcold.so copied, prog kept", res, err)
	}
	if objects, _ := archived(t, founder); !slices.Equal(objects, []string{f.lib, f.prog}) {
		t.Errorf("with descendants: %q, want both", objects)
	}
	if _, err := os.Stat(filepath.Join(sub, "archives")); !os.IsNotExist(err) {
		t.Errorf("the subexperiment got archives of its own: %v", err)
	}
	// Archiving the subexperiment itself also fills its founder's archives.
	res, err = Archive(sub, Options{Mode: "usedsrc"})
	if _, sources := archived(t, founder); err != nil || res.Sources != 1 || !slices.Equal(sources, []string{f.coldSrc}) {
		t.Errorf("archiving the subexperiment: %+v, %v, sources %q; want cold.c in the founder", res, err, sources)
	}
}

func TestMatch(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	if _, err := Archive(exp, Options{Mode: "src", Match: regexp.MustCompile(`\.so$|cold\.c$`)}); err != nil {
		t.Fatal(err)
	}
	if objects, sources := archived(t, exp); !slices.Equal(objects, []string{f.lib}) || !slices.Equal(sources, []string{f.coldSrc}) {
		t.Errorf("-m: objects %q, sources %q; want libcold.so and cold.c", objects, sources)
	}
}

func TestMainCommand(t *testing.T) {
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	os.Remove(f.lib)
	var out, errb bytes.Buffer
	code := Main([]string{"-a", "ldobjects", exp}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), exp+": archived 1 load object and 0 source files (") ||
		!strings.Contains(out.String(), "; 1 file not archived (see the warnings)") ||
		errb.String() != "er archive: warning: "+f.lib+": not archived: it no longer exists\n" {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = Main([]string{"-q", exp, filepath.Join(exp, "none.er"), "-a", "ldobjects"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "1 already archived") || errb.String() != "er archive: "+filepath.Join(exp, "none.er")+": no such experiment\n" {
		t.Errorf("-q with a missing experiment: exit %d\n%s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := Main([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "Usage: er archive") || !strings.Contains(errb.String(), "the default\nis usedsrc") {
		t.Errorf("-h: exit %d\n%s", code, errb.String())
	}
	if code := Main([]string{"-x"}, &out, &errb); code != 2 {
		t.Errorf("-x: exit %d", code)
	}
}

// Only files that are plausibly sources are copied from the debug information's line tables: a
// binary's DWARF can name any file (#line "/etc/shadow"), and er archive must not copy the
// user's, or another user's, secrets into an experiment that others may read. Before, every
// regular file that the line tables named and er could read was copied.
func TestSourceRule(t *testing.T) {
	f := build(t)
	dir := f.dir
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := write("secret.key", "-----BEGIN KEY-----\n", 0o644)
	good := write("good.h", "int good;\n", 0o644)
	private := write("private.h", "int private;\n", 0o600)
	link := filepath.Join(dir, "link.c")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	names := []string{"/etc/passwd", secret, good, link}
	root := os.Geteuid() == 0
	if root {
		// A file of another user that only root can read.
		if err := os.Chown(private, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		names = append(names, private)
	}
	var src strings.Builder
	for i, n := range names {
		fmt.Fprintf(&src, "#line 1 %q\nint f%d(int x) { return x + %d; }\n", n, i, i)
	}
	namesC := write("names.c", src.String(), 0o644)
	f.gcc(t, "-O1", "-g", "-Wl,--build-id", "-o", f.prog, f.progSrc, f.coldSrc, namesC)

	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experiment(t, exp, false)
	var warnings []string
	if _, err := Archive(exp, Options{Mode: "src", Warn: func(w string) { warnings = append(warnings, w) }}); err != nil {
		t.Fatal(err)
	}
	_, sources := archived(t, exp)
	want := []string{f.coldSrc, good, namesC, f.progSrc}
	slices.Sort(want)
	if !slices.Equal(sources, want) {
		t.Errorf("archived sources\n%q\nwant\n%q", sources, want)
	}
	wantWarn := []string{
		"/etc/passwd: not archived: it is in /etc, where no source files are",
		secret + ": not archived: its name is not a source file's (see docs/experiment-format.md, \"What is copied\")",
		link + ": not archived: it leads to " + secret + ", and its name is not a source file's (see docs/experiment-format.md, \"What is copied\")",
	}
	if root {
		wantWarn = append(wantWarn, private+": not archived: it belongs to user 65534 and others may not read it (mode 0600)")
	}
	slices.Sort(wantWarn)
	slices.Sort(warnings)
	if !slices.Equal(warnings, wantWarn) {
		t.Errorf("warnings\n%q\nwant\n%q", warnings, wantWarn)
	}
}

func TestOwnSourcePresent(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "src", "prog.c")
	if err := os.Mkdir(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := sourceChecker{dirs: map[string]bool{}}
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{filepath.Join(dir, "gone", "a.c"), false}, // a missing directory, remembered
		{filepath.Join(dir, "gone", "b", "c.c"), false},
		{own + ".missing", false},
		{own, true},
		{filepath.Join(dir, "src", "prog.c", "x.c"), false}, // below a file, not a directory
		{"/usr/include/stdio.h", false},                     // a system header says nothing of the object's own sources
		{"/usr/lib/gcc/x/12/include", false},
	} {
		if got := c.ownSourcePresent(tc.p); got != tc.want {
			t.Errorf("ownSourcePresent(%s) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !c.dirs[filepath.Join(dir, "src")] || c.dirs[filepath.Join(dir, "gone")] {
		t.Errorf("directories remembered: %v", c.dirs)
	}
	if _, seen := c.dirs[filepath.Join(dir, "gone", "b")]; !seen || c.dirs[filepath.Join(dir, "gone", "b")] {
		t.Errorf("%s not ruled out by its missing parent: %v", filepath.Join(dir, "gone", "b"), c.dirs)
	}
	for _, tc := range []struct {
		files []string
		want  bool
	}{
		{[]string{"/usr/include/stdio.h", filepath.Join(dir, "gone", "a.c"), own}, true},
		{[]string{"/usr/include/stdio.h", filepath.Join(dir, "gone", "a.c")}, false},
		{nil, false},
	} {
		if got := anyOwnSourcePresent(tc.files); got != tc.want {
			t.Errorf("anyOwnSourcePresent(%q) = %v, want %v", tc.files, got, tc.want)
		}
	}
}

// TestEventStacks: each distinct stack of a process's events, of every kind, becomes one clock sample
// at the time of one of its events, and the experiment given is not changed.
func TestEventStacks(t *testing.T) {
	t.Parallel()
	d := &experiment.Data{
		Stacks: []experiment.Stack{{}, {0x10}, {0x20}, {0x30}, {0x40}, {0x50}},
	}
	d.AddClock([]experiment.ClockSample{{Time: 50, Pid: 1, Tid: 1, Mode: experiment.ModeKernel, Period: 10, Stack: 1}, {Time: 60, Pid: 1, Tid: 1, Stack: 1}})
	d.AddHeap([]experiment.HeapEvent{{Time: 5, Pid: 1, Tid: 2, Stack: 2}, {Time: 7, Pid: 1, Tid: 2, Stack: 2}, {Time: 9, Pid: 2, Tid: 3, Stack: 2}})
	d.AddIO([]experiment.IOEvent{{Time: 40, Pid: 1, Tid: 4, Stack: 4}})
	// A counter's samples (-h) have stacks too: er archive missed them before.
	d.AddCounters([]experiment.CounterSample{{Time: 45, Pid: 1, Tid: 1, Stack: 5, Mode: experiment.ModeKernel}, {Time: 46, Pid: 1, Tid: 1, Stack: 4}})
	d.AddSync([]experiment.SyncEvent{{Time: 30, Pid: 1, Tid: 1, Stack: 3}, {Time: 20, Pid: 1, Tid: 1, Stack: 1}})
	got := eventStacks(d)
	want := []experiment.ClockSample{
		{Time: 5, Pid: 1, Tid: 2, Mode: experiment.ModeUser, Period: 1, Stack: 2},
		{Time: 9, Pid: 2, Tid: 3, Mode: experiment.ModeUser, Period: 1, Stack: 2},
		{Time: 30, Pid: 1, Tid: 1, Mode: experiment.ModeUser, Period: 1, Stack: 3},
		{Time: 40, Pid: 1, Tid: 4, Mode: experiment.ModeUser, Period: 1, Stack: 4},
		{Time: 45, Pid: 1, Tid: 1, Mode: experiment.ModeUser, Period: 1, Stack: 5},
		{Time: 50, Pid: 1, Tid: 1, Mode: experiment.ModeKernel, Period: 1, Stack: 1},
	}
	if !slices.Equal(got.ClockSamples(), want) || len(got.Tables) != 1 {
		t.Errorf("clock %+v, tables %v\nwant clock %+v and no other events", got.ClockSamples(), got.Tables, want)
	}
	if d.CounterTable().Len() != 2 || d.ClockTable().Len() != 2 || d.HeapTable().Len() != 3 || d.SyncTable().Len() != 2 || d.IOTable().Len() != 1 || experiment.ClockAt(d.ClockTable(), 0).Period != 10 {
		t.Errorf("the experiment given was changed: %+v", d)
	}
}

// TestLinksNotFollowed: er archive, run by root on an experiment that another user prepared, writes
// nothing through a symbolic link the user put in it: not through archives/, archives/objects,
// archives/sources or archives/objects/HASH linked to another directory (an error that names the
// link), nor through a link planted under the name of a temporary file (er writes a new file of
// its own). Before, it followed every one of them and wrote where the links pointed.
func TestLinksNotFollowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the links are followed or not alike for every user; run as root for the attack itself")
	}
	f := build(t)
	sum, err := archive.FileSHA256(f.prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, link string // link: the path under the experiment made a link to elsewhere (or to its victim)
		victim     bool   // link to a file in elsewhere rather than to elsewhere itself
		wantErr    string // "": er archive succeeds
	}{
		{"archives", "archives", false, "archives is a symbolic link"},
		{"objects", "archives/objects", false, "archives/objects is a symbolic link"},
		{"sources", "archives/sources", false, "archives/sources is a symbolic link"},
		{"hash", "archives/objects/" + sum[:32], false, "archives/objects/" + sum[:32] + " is a symbolic link"},
		{"index-temp", "archives/.files.xml.tmp", true, ""},
		{"archive-temp", "archives/." + experiment.ArchiveName(f.lib) + ".tmp", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := filepath.Join(t.TempDir(), "test.1.er")
			f.experiment(t, exp, false)
			// The library's symbol archive is missing: er archive writes it (case archive-temp).
			if err := os.Remove(filepath.Join(exp, "archives", experiment.ArchiveName(f.lib))); err != nil {
				t.Fatal(err)
			}
			elsewhere := t.TempDir()
			victim := filepath.Join(elsewhere, "victim")
			if err := os.WriteFile(victim, []byte("untouched\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(exp, c.link)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.link == "archives" { // what it held goes where the link points, as the user would
				if err := os.Rename(link, filepath.Join(elsewhere, "held")); err != nil {
					t.Fatal(err)
				}
			}
			target := elsewhere
			if c.victim {
				target = victim
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			before := tree(t, elsewhere)
			var out, errb bytes.Buffer
			code := Main([]string{"-a", "src", exp}, &out, &errb)
			t.Logf("er archive: exit %d\n%s%s", code, out.String(), errb.String())
			if after := tree(t, elsewhere); after != before {
				t.Errorf("er archive wrote where the link %s points:\n%s\nwas\n%s", c.link, after, before)
			}
			if c.wantErr != "" {
				if code != 1 || !strings.Contains(errb.String(), c.wantErr) || !strings.Contains(errb.String(), "does not follow links") {
					t.Errorf("exit %d, want 1 and an error that says %q and why", code, c.wantErr)
				}
				return
			}
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if got, err := os.Readlink(link); err != nil || got != victim {
				t.Errorf("the planted link %s: %q, %v; want it left alone", c.link, got, err)
			}
		})
	}
}

// tree lists the files under dir with their sizes and contents' first bytes.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		head := ""
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			head = fmt.Sprintf("%q", data[:min(len(data), 16)])
		}
		fmt.Fprintf(&b, "%s %v %d %s\n", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size(), head)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestToyKindArchived: the stacks of a kind's events, whatever the kind, decide what er archive
// keeps: an experiment whose only events are the toy kind's (internal/kindtest), in cold() of
// libcold.so, gets libcold.so and cold.c archived, and nothing of prog, which no event uses.
func TestToyKindArchived(t *testing.T) {
	kindtest.Register(t)
	f := build(t)
	exp := filepath.Join(t.TempDir(), "test.1.er")
	f.experimentOf(t, exp, true, func(w *experiment.Writer, i int, id uint32) error {
		return w.Row(kindtest.Schema, events.Row{Time: int64(i+1) * 1e7, Count: 1, Pid: 100, Tid: 100, CPU: -1, Stack: id,
			Cols: []int64{kindtest.Units, int64(i)}})
	})
	d, err := experiment.Open(exp)
	if err != nil || d.ClockTable().Len() != 0 || d.Tables[kindtest.Schema.Name].Len() != 10 {
		t.Fatalf("the toy experiment: %v, %d clock samples, toy table %+v", err, d.ClockTable().Len(), d.Tables)
	}
	if _, err := Archive(exp, Options{Mode: "usedsrc"}); err != nil {
		t.Fatal(err)
	}
	objects, sources := archived(t, exp)
	if !slices.Equal(objects, []string{f.lib}) || !slices.Equal(sources, []string{f.coldSrc}) {
		t.Errorf("archived objects %q, sources %q; want %s and %s", objects, sources, f.lib, f.coldSrc)
	}
}
