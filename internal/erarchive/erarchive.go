// Package erarchive is `er archive`: it copies an experiment's load objects and source files into its archives/.
package erarchive

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/debuginfo"
	"er/internal/experiment"
)

// DefaultMode is the mode of `er archive` without -a: the load objects and source files that
// have events, the files er print needs to show everything it can show of the experiment.
const DefaultMode = "usedsrc"

// which is what a mode selects, of load objects or of source files.
type which int

const (
	none which = iota
	used       // load objects in the events' call stacks; source files of their lines
	all        // every load object mapped; every source file of the archived load objects
)

// modes are the archiving modes, as collect -a and er archive -a name them.
var modes = map[string]struct{ objects, sources which }{
	"off":           {none, none},
	"ldobjects":     {all, none},
	"usedldobjects": {used, none},
	"src":           {all, all},
	"on":            {all, all},
	"usedsrc":       {used, used},
}

// ModeNames lists the archiving modes, for messages.
const ModeNames = "off, on, ldobjects, usedldobjects, src or usedsrc"

// CheckMode says whether mode is an archiving mode.
func CheckMode(mode string) error {
	if _, ok := modes[mode]; !ok {
		return fmt.Errorf("unknown archiving mode %q: use %s", mode, ModeNames)
	}
	return nil
}

// Options control Archive.
type Options struct {
	Mode        string         // off, on, ldobjects, usedldobjects, src or usedsrc; "" is DefaultMode
	Descendants bool           // archive the subexperiments (_*.er directories) too
	Force       bool           // copy files again even when archived; archive sources modified after the experiment started
	Match       *regexp.Regexp // archive only files whose path matches; nil: all
	Warn        func(string)   // what could not be archived, and why; nil: not said
}

// Result counts what Archive did.
type Result struct {
	Objects int   // load objects copied
	Sources int   // source files copied
	Bytes   int64 // bytes copied
	Kept    int   // files already archived, not copied again
	Skipped int   // files that could not be archived: missing, changed since the experiment (see the warnings)
}

// Experiment archives the experiment dir after collection in mode (off, on, ldobjects,
// usedldobjects, src, usedsrc), with its subexperiments; warn gets what could not be archived.
func Experiment(dir, mode string, warn func(string)) error {
	_, err := Archive(dir, Options{Mode: mode, Descendants: true, Warn: warn})
	return err
}

// Archive copies the load objects and source files of the experiment dir that opt.Mode selects
// into its archives/ (for a subexperiment, and for the subexperiments of dir, into the founder's),
// records them in the index archives/files.xml, and writes the symbol archive of any load object
// that has none. Files already archived are not copied again. A file that is missing or has
// changed since the experiment is not archived; opt.Warn says so.
func Archive(dir string, opt Options) (Result, error) {
	if opt.Mode == "" {
		opt.Mode = DefaultMode
	}
	if err := CheckMode(opt.Mode); err != nil {
		return Result{}, err
	}
	m := modes[opt.Mode]
	if m.objects == none {
		return Result{}, nil
	}
	ar := &archiver{opt: opt, target: dir, objSeen: map[string]bool{}}
	if ar.opt.Warn == nil {
		ar.opt.Warn = func(string) {}
	}
	if f := experiment.FounderDir(dir); f != "" {
		ar.target = f
	}
	if err := ar.open(dir); err != nil {
		return Result{}, err
	}
	ix, err := archive.ReadIndex(ar.target)
	if err != nil {
		return Result{}, err
	}
	ar.ix = ix

	var objects, sources []string
	if m.objects == used || m.sources == used {
		open := analysis.WithArchivedCopies(analysis.OpenObjectFile, ar.dirs)
		if m.sources == used {
			open = withoutAbsentSources(open)
		}
		stacks := make([]*experiment.Data, len(ar.exps))
		events := 0
		for i, d := range ar.exps {
			stacks[i] = eventStacks(d)
			events += len(stacks[i].Clock)
		}
		// Without events no object or source is used: nothing to read (a short run's fixed cost).
		if events > 0 {
			p, err := analysis.Analyze(stacks, analysis.Options{OpenFile: open})
			if err != nil {
				return Result{}, fmt.Errorf("%s: %w", dir, err)
			}
			for _, o := range p.Objects[1:] {
				objects = append(objects, o.Path)
			}
			if m.sources == used {
				sources = p.Lines().Files()
			}
		}
	}
	if m.objects == all {
		objects = nil
		for _, d := range ar.exps {
			for _, mp := range d.Mappings {
				objects = append(objects, mp.Path)
			}
		}
	}
	for _, o := range objects {
		if err := ar.object(o); err != nil {
			return ar.res, err
		}
	}
	if m.sources == all {
		sources = ar.objectSources()
	}
	if m.sources != none {
		if err := ar.sources(sources); err != nil {
			return ar.res, err
		}
	}
	if ar.res.Objects+ar.res.Sources > 0 {
		if err := ix.Write(); err != nil {
			return ar.res, err
		}
	}
	return ar.res, nil
}

// archiver archives one experiment and its subexperiments.
type archiver struct {
	opt     Options
	target  string // the experiment whose archives/ gets the copies: the founder
	dirs    []string
	exps    []*experiment.Data
	start   int64 // the earliest start of the experiments, Unix ns; 0 when unknown
	ix      *archive.Index
	objSeen map[string]bool
	objs    []archivedObject
	res     Result
}

// archivedObject is a load object that is archived: where its file can be read.
type archivedObject struct {
	path, file string
}

// open reads the experiment dir and, with opt.Descendants, its subexperiments.
func (ar *archiver) open(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such experiment", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s: not an experiment: a file, not the directory that er collect writes (such as test.1.er)", dir)
	}
	hasLog := exists(filepath.Join(dir, experiment.LogFile))
	if !hasLog && !exists(filepath.Join(dir, experiment.MapFile)) {
		return fmt.Errorf("%s: not an experiment: it has no %s or %s (an experiment is the directory that er collect writes, such as test.1.er)",
			dir, experiment.LogFile, experiment.MapFile)
	}
	d, err := experiment.OpenWith(dir, experiment.Options{TraceStacksOnly: true}) // the events' stacks are all it needs
	if err != nil {
		return fmt.Errorf("cannot read experiment %s: %w", dir, err)
	}
	ar.add(dir, d)
	if !ar.opt.Descendants {
		return nil
	}
	subs, err := experiment.Descendants(dir)
	if err != nil {
		return err
	}
	for _, s := range subs {
		d, err := experiment.OpenWith(s, experiment.Options{TraceStacksOnly: true})
		if err != nil {
			ar.opt.Warn(fmt.Sprintf("%s: not archived: %v", s, err))
			continue
		}
		ar.add(s, d)
	}
	return nil
}

func (ar *archiver) add(dir string, d *experiment.Data) {
	ar.dirs = append(ar.dirs, dir)
	ar.exps = append(ar.exps, d)
	if t := d.Log.StartTime; t > 0 && (ar.start == 0 || t < ar.start) {
		ar.start = t
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (ar *archiver) matches(p string) bool { return ar.opt.Match == nil || ar.opt.Match.MatchString(p) }

func (ar *archiver) warnf(format string, args ...any) {
	ar.opt.Warn(fmt.Sprintf(format, args...))
	ar.res.Skipped++
}

// object archives the load object mapped from path, once.
func (ar *archiver) object(path string) error {
	if ar.objSeen[path] || !strings.HasPrefix(path, "/") || !ar.matches(path) {
		return nil
	}
	ar.objSeen[path] = true
	var a *experiment.Archive
	mapped := "" // a build id map.xml recorded
	for _, d := range ar.exps {
		if a == nil {
			a = d.Archives[path]
		}
		for _, m := range d.Mappings {
			if m.Path == path && m.BuildID != "" {
				mapped = m.BuildID
			}
		}
	}
	if a != nil && a.Kind != "elf" {
		return nil
	}
	if a == nil {
		b, ok := ar.symbolArchive(path, mapped)
		if !ok {
			return nil
		}
		if err := experiment.WriteArchive(ar.target, b); err != nil {
			return err
		}
		a = b
	}
	if err := archive.SameFile(path, a); err != nil {
		cp, ferr := archive.FindObject([]string{ar.target}, a)
		if ferr != nil {
			return ferr
		}
		if cp != "" {
			ar.res.Kept++
			ar.objs = append(ar.objs, archivedObject{path: path, file: cp})
			return nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			ar.warnf("%s: not archived: it no longer exists", path)
		} else {
			ar.warnf("%s: not archived: %v", path, err)
		}
		return nil
	}
	c, added, err := ar.ix.Add(archive.KindObject, path, a.BuildID, ar.opt.Force)
	if err != nil {
		ar.warnf("%s: not archived: %v", path, err)
		return nil
	}
	ar.count(c, added, &ar.res.Objects)
	ar.objs = append(ar.objs, archivedObject{path: path, file: path})
	return nil
}

// symbolArchive describes the load object at path, which the experiments have no symbol archive
// of, when it is still the file that was mapped: the build id map.xml recorded, or without one,
// not modified since the experiment started.
func (ar *archiver) symbolArchive(path, mapped string) (*experiment.Archive, bool) {
	b, err := archive.Build(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ar.warnf("%s: not archived: it no longer exists", path)
		return nil, false
	case err != nil:
		ar.warnf("%s: not archived: %v", path, err)
		return nil, false
	case mapped != "" && b.BuildID != mapped:
		ar.warnf("%s: not archived: it has changed since the experiment (build id %s, was %s)", path, b.BuildID, mapped)
		return nil, false
	case mapped == "" && ar.start > 0 && b.Mtime > ar.start:
		ar.warnf("%s: not archived: it was modified after the experiment started", path)
		return nil, false
	}
	return b, true
}

func (ar *archiver) count(c archive.Copy, added bool, n *int) {
	if !added {
		ar.res.Kept++
		return
	}
	*n++
	ar.res.Bytes += c.Size
}

// objectSources lists the source files in the line tables of the archived load objects.
func (ar *archiver) objectSources() []string {
	var out []string
	for _, o := range ar.objs {
		info, err := debuginfo.Open(o.file)
		if err != nil || !info.HasDWARF {
			continue
		}
		out = append(out, info.Files()...)
	}
	return out
}

// sources archives the source files named, once each.
func (ar *archiver) sources(names []string) error {
	sort.Strings(names)
	var missing []string
	for i, name := range names {
		if i > 0 && name == names[i-1] || !filepath.IsAbs(name) || !ar.matches(name) {
			continue
		}
		st, err := os.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if c, _, ok, _ := archive.FindSource([]string{ar.target}, name); ok && c.Path == name {
				ar.res.Kept++
			} else {
				missing = append(missing, name)
			}
			continue
		case err != nil:
			ar.warnf("%s: not archived: %v", name, err)
			continue
		case !st.Mode().IsRegular():
			continue
		}
		if err := archive.CheckSource(name); err != nil {
			ar.warnf("%s: not archived: %v", name, err)
			continue
		}
		switch {
		case !ar.opt.Force && ar.start > 0 && st.ModTime().UnixNano() > ar.start:
			same := func(c archive.Copy) bool { return c.Size == st.Size() && c.Mtime == st.ModTime().UnixNano() }
			if _, ok := ar.ix.Lookup(archive.KindSource, name, same); ok { // archived with -F before
				ar.res.Kept++
			} else {
				ar.warnf("%s: not archived: it was modified after the experiment started (er archive -F archives it anyway)", name)
			}
			continue
		}
		c, added, err := ar.ix.Add(archive.KindSource, name, "", ar.opt.Force)
		if err != nil {
			ar.warnf("%s: not archived: %v", name, err)
			continue
		}
		ar.count(c, added, &ar.res.Sources)
	}
	if len(missing) > 0 {
		list := missing
		if len(list) > 3 {
			list = append(list[:3:3], fmt.Sprintf("and %d more", len(missing)-3))
		}
		ar.res.Skipped += len(missing)
		ar.opt.Warn(fmt.Sprintf("%d source files of the debug information are not on this machine, so not archived: %s",
			len(missing), strings.Join(list, ", ")))
	}
	return nil
}

// Main runs `er archive` with args, the words after `archive`, and returns the exit status:
// 0 when every experiment was archived (files that could not be archived are warnings), 1 when
// an experiment could not be, 2 for a mistake in the arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("er archive", flag.ContinueOnError)
	fl.SetOutput(stderr)
	mode := fl.String("a", DefaultMode, "what to archive: "+ModeNames)
	only := fl.Bool("n", false, "archive the named experiments only, not their subexperiments")
	quiet := fl.Bool("q", false, "do not write warnings")
	force := fl.Bool("F", false, "copy files again even when archived; archive sources modified after the experiment")
	match := fl.String("m", "", "archive only the files whose full path matches this regular expression")
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), `Usage: er archive [-a mode] [-n] [-q] [-F] [-m regexp] experiment...

Copies the load objects and source files of each experiment into its archives/ directory, so that
er print shows source lines, source text and disassembly after they have changed or gone, or on
another machine. Files already archived are not copied again. The files of subexperiments
(_*.er) go into their founder's archives/.

Modes (-a): off (nothing); ldobjects (every load object mapped); usedldobjects (the load objects
with events); src or on (every load object, and every source file of their debug information);
usedsrc (the load objects with events, and the source files of lines with events); the default
is %s.

Options:
`, DefaultMode)
		fl.PrintDefaults()
	}
	var dirs []string // options may follow experiments, too
	for rest := args; ; {
		if err := fl.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fl.NArg() == 0 {
			break
		}
		dirs = append(dirs, fl.Arg(0))
		rest = fl.Args()[1:]
	}
	if err := CheckMode(*mode); err != nil {
		fmt.Fprintf(stderr, "er archive: -a: %v\n", err)
		return 2
	}
	opt := Options{Mode: *mode, Descendants: !*only, Force: *force}
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			fmt.Fprintf(stderr, "er archive: -m: %v\n", err)
			return 2
		}
		opt.Match = re
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "er archive: no experiment given")
		fl.Usage()
		return 2
	}
	status := 0
	for _, dir := range dirs {
		opt.Warn = func(w string) {
			if !*quiet {
				fmt.Fprintf(stderr, "er archive: warning: %s\n", w)
			}
		}
		res, err := Archive(dir, opt)
		if err != nil {
			fmt.Fprintf(stderr, "er archive: %v\n", err)
			status = 1
			continue
		}
		if *mode != "off" {
			fmt.Fprintf(stdout, "%s: %s\n", dir, res)
		}
	}
	return status
}

// String says what was archived, in words.
func (r Result) String() string {
	s := fmt.Sprintf("archived %s and %s (%s)", plural(r.Objects, "load object"), plural(r.Sources, "source file"), size(r.Bytes))
	if r.Kept > 0 {
		s += fmt.Sprintf("; %d already archived", r.Kept)
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf("; %s not archived (see the warnings)", plural(r.Skipped, "file"))
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// withoutAbsentSources wraps open for finding the source files to archive: an object with a build id
// none of whose own source files (system headers aside) is on this machine (a distribution's library, built elsewhere) is opened
// without its debug information, which would be read only to find nothing to copy (libc's separate
// DWARF: some 100 ms of each collection). Which files an object names is cached per build id
// (archive.SourceFiles).
func withoutAbsentSources(open func(string, *experiment.Archive) (*analysis.ObjectFile, error)) func(string, *experiment.Archive) (*analysis.ObjectFile, error) {
	return func(path string, a *experiment.Archive) (*analysis.ObjectFile, error) {
		if a == nil || a.BuildID == "" || analysis.SameFile(path, a) != nil {
			return open(path, a)
		}
		files, ok := archive.SourceFiles(a.BuildID, func() ([]string, error) {
			info, err := debuginfo.Open(path)
			if err != nil {
				return nil, err
			}
			return info.Files(), nil
		})
		if !ok || anyOwnSourcePresent(files) {
			return open(path, a)
		}
		return &analysis.ObjectFile{Path: path}, nil
	}
}

// systemHeaderDirs hold the compiler's and the C library's headers, which the debug information of
// every object names (libc's names gcc's intrinsics headers) and which say nothing of whether the
// object's own sources are here.
var systemHeaderDirs = []string{"/usr/include/", "/usr/local/include/", "/usr/lib/gcc/", "/usr/lib/llvm"}

// anyOwnSourcePresent reports whether any of files, the source files named by an object's debug
// information, is on this machine and not a system header. A directory found missing rules out every
// file below it without a look: libc's 3,057 files, under a /build directory of the machine that built
// it, took 3,000 failed stat calls (3 ms of each collection), and now take one.
func anyOwnSourcePresent(files []string) bool {
	c := sourceChecker{dirs: map[string]bool{}}
	return slices.ContainsFunc(files, c.ownSourcePresent)
}

// sourceChecker remembers which directories exist.
type sourceChecker struct{ dirs map[string]bool }

// ownSourcePresent reports whether p is on this machine and not a system header.
func (c *sourceChecker) ownSourcePresent(p string) bool {
	for _, d := range systemHeaderDirs {
		if strings.HasPrefix(p, d) {
			return false
		}
	}
	return c.dirPresent(filepath.Dir(p)) && exists(p)
}

// dirPresent reports whether the directory d exists, its ancestors first.
func (c *sourceChecker) dirPresent(d string) bool {
	if d == "/" || d == "." || d == "" {
		return true
	}
	if ok, seen := c.dirs[d]; seen {
		return ok
	}
	ok := c.dirPresent(filepath.Dir(d))
	if ok {
		fi, err := os.Stat(d)
		ok = err == nil && fi.IsDir()
	}
	c.dirs[d] = ok
	return ok
}

// eventStacks returns d with each distinct call stack of its events (clock samples, heap, sync and
// I/O events) in each process as one clock sample, at the time of one of its events (the mappings
// its addresses fall in are those of that time), and no other events: which objects and source
// lines the events use is a matter of their stacks alone, and a heap trace of 4,000,000 calls,
// replayed whole, was half of what er collect did after its target had exited. The stacks of trace
// events not read (experiment.Options.TraceStacksOnly) are there each at the time it was written.
// d is not changed.
func eventStacks(d *experiment.Data) *experiment.Data {
	out := *d
	out.Clock, out.Heap, out.Sync, out.IO = nil, nil, nil, nil
	type key struct{ pid, stack uint32 }
	seen := map[key]bool{}
	add := func(t int64, pid, tid, stack uint32, mode experiment.Mode) {
		if k := (key{pid, stack}); !seen[k] {
			seen[k] = true
			out.Clock = append(out.Clock, experiment.ClockSample{Time: t, Pid: pid, Tid: tid, Mode: mode, Period: 1, Stack: stack})
		}
	}
	for _, e := range d.Clock {
		add(e.Time, e.Pid, e.Tid, e.Stack, e.Mode)
	}
	for _, e := range d.Heap {
		add(e.Time, e.Pid, e.Tid, e.Stack, experiment.ModeUser)
	}
	for _, e := range d.Sync {
		add(e.Time, e.Pid, e.Tid, e.Stack, experiment.ModeUser)
	}
	for _, e := range d.IO {
		add(e.Time, e.Pid, e.Tid, e.Stack, experiment.ModeUser)
	}
	for _, st := range d.TraceStacks { // the stacks of the trace events not read
		add(st.Time, st.Pid, st.Tid, st.Stack, experiment.ModeUser)
	}
	slices.SortStableFunc(out.Clock, func(a, b experiment.ClockSample) int { return cmp.Compare(a.Time, b.Time) })
	return &out
}
