// Package erarchive is `er archive`: it copies an experiment's load objects and source files into its archives/.
package erarchive

import (
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
	"er/internal/events"
	"er/internal/experiment"
	"er/internal/safedir"
)

// DefaultMode is the mode of `er archive` without -a: compact archives of the load objects that
// have events and the source files of their lines, what er print needs to show everything it can
// show of the experiment.
const DefaultMode = "usedsrc"

// which is what a mode selects, of load objects or of source files.
type which int

const (
	none which = iota
	used       // load objects in the events' call stacks; source files of their lines
	all        // every load object mapped; every source file of the archived load objects
)

// mode is what an archiving mode archives: which load objects and source files, and whether the
// load objects are kept in compact archives (package compact) rather than copied whole.
type mode struct {
	objects, sources which
	compact          bool
}

// modes are the archiving modes, as collect -a and er archive -a name them.
var modes = map[string]mode{
	"off":           {none, none, false},
	"ldobjects":     {all, none, false},
	"usedldobjects": {used, none, true},
	"src":           {all, all, false},
	"on":            {all, all, false},
	"usedsrc":       {used, used, true},
	"copy":          {used, used, false},
}

// ReadsObjectFiles says whether archiving in mode reads the load objects' files, their debug
// information included, to make compact archives ("" is DefaultMode): the files er collect opens
// ahead for it (analysis.Preopener).
func ReadsObjectFiles(mode string) bool {
	if mode == "" {
		mode = DefaultMode
	}
	return modes[mode].compact
}

// ModeNames lists the archiving modes, for messages.
const ModeNames = "off, on, ldobjects, usedldobjects, src, usedsrc or copy"

// CheckMode says whether mode is an archiving mode.
func CheckMode(mode string) error {
	if _, ok := modes[mode]; !ok {
		return fmt.Errorf("unknown archiving mode %q: use %s", mode, ModeNames)
	}
	return nil
}

// Options control Archive.
type Options struct {
	Mode        string         // off, on, ldobjects, usedldobjects, src, usedsrc or copy; "" is DefaultMode
	Descendants bool           // archive the subexperiments (_*.er directories) too
	Force       bool           // copy files again even when archived; archive sources modified after the experiment started
	Match       *regexp.Regexp // archive only files whose path matches; nil: all
	Warn        func(string)   // what could not be archived, and why; nil: not said
	// OnlyArchived: copy only the load objects that the experiments have a symbol archive of, not
	// read the others to describe them (er import: it archived those it found to be the objects
	// profiled, and the others' names come from the perf.data file).
	OnlyArchived bool
	// Open opens a load object's file for the analysis of what was used (analysis.Options.OpenFile:
	// er collect's files opened ahead, analysis.Preopener); nil: analysis.OpenObjectFile.
	Open func(path string, a *experiment.Archive) (*analysis.ObjectFile, error)
}

// Result counts what Archive did.
type Result struct {
	Objects int   // load objects copied, or archived compactly
	Sources int   // source files copied
	Bytes   int64 // bytes written
	Total   int64 // bytes of the founder's archives/ afterwards
	Kept    int   // files already archived, not copied again
	Skipped int   // files that could not be archived: missing, changed since the experiment (see the warnings)
}

// Experiment archives the experiment dir after collection in mode (off, on, ldobjects,
// usedldobjects, src, usedsrc, copy), with its subexperiments; warn gets what could not be archived;
// open, when not nil, is Options.Open.
func Experiment(dir, mode string, warn func(string), open func(string, *experiment.Archive) (*analysis.ObjectFile, error)) (Result, error) {
	return Archive(dir, Options{Mode: mode, Descendants: true, Warn: warn, Open: open})
}

// Archive copies the load objects and source files of the experiment dir that opt.Mode selects
// into its archives/ (for a subexperiment, and for the subexperiments of dir, into the founder's),
// records them in the index archives/files.xml, and writes the symbol archive of any load object
// that has none. Files already archived are not copied again. A file that is missing, has
// changed since the experiment, or may not be read, or that is not a regular file (a FIFO, a
// device, a file of /proc or /sys) is not archived; opt.Warn says so. The experiment must belong to
// the user running er (an *OwnerError where it does not; Main runs itself again as its owner).
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
	ar := &archiver{opt: opt, target: dir, objSeen: map[string]bool{}, compact: m.compact}
	if ar.opt.Warn == nil {
		ar.opt.Warn = func(string) {}
	}
	if f := experiment.FounderDir(dir); f != "" {
		ar.target = f
	}
	if err := checkOwner(ar.target); err != nil {
		return Result{}, err
	}
	ar.you = userName(uint32(os.Geteuid()))
	if err := ar.open(dir); err != nil {
		return Result{}, err
	}
	// Everything is written beneath the founder's directory, opened once, without following a link
	// (er archive run by root on another user's experiment must not write where that user points).
	root, err := safedir.OpenExperiment(ar.target, false)
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	ar.root = root
	ix, err := archive.OpenIndex(root)
	if err != nil {
		return Result{}, err
	}
	ar.ix = ix

	var objects, sources []string
	if m.objects == used || m.sources == used {
		opener := analysis.OpenObjectFile
		if opt.Open != nil {
			opener = opt.Open
		}
		open := analysis.WithArchivedCopies(opener, ar.dirs)
		if m.sources == used && !m.compact {
			// Compact archives keep the lines of every object: its debug information is read.
			open = withoutAbsentSources(open)
		}
		p, err := analyzeEvents(ar.exps, open)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", dir, err)
		}
		if p != nil {
			for _, obj := range p.Objects[1:] {
				objects = append(objects, obj.Path)
			}
			switch {
			case m.sources == used && m.compact:
				sources = usedSources(p)
			case m.sources == used:
				sources = p.Lines().Files()
			}
		}
		if m.compact && p != nil {
			if err := ar.treeUsage(dir, p, open); err != nil {
				return Result{}, err
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
	if ar.compact && ar.p != nil {
		ar.precompact(objects)
	}
	for _, o := range objects {
		if err := ar.object(o); err != nil {
			return ar.res, err
		}
	}
	if ar.compact && ar.p != nil {
		if err := ar.stripUnused(); err != nil {
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
	ar.res.Total = DirSize(filepath.Join(ar.target, experiment.ArchivesDir))
	return ar.res, nil
}

// DirSize is the bytes of the files under dir (links not followed), 0 when it cannot be read.
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// archiver archives one experiment and its subexperiments.
type archiver struct {
	opt     Options
	target  string // the experiment whose archives/ gets the copies: the founder
	dirs    []string
	exps    []*experiment.Data
	start   int64        // the earliest start of the experiments, Unix ns; 0 when unknown
	root    *safedir.Dir // target, opened
	ix      *archive.Index
	compact bool // load objects go into compact archives

	// Of the modes that archive what is used: the events' profile, each object's index in it,
	// the source files with events, and whether the experiments have data addresses (variables).
	p         *analysis.Profile
	objIndex  map[string]int
	made      map[string]*compacted // the compact archives precompact made, by path
	usedFiles map[string]bool
	vars      bool
	tree      []*experiment.Data // the founder and all its subexperiments

	objSeen map[string]bool
	objs    []archivedObject
	res     Result
	you     string // the user running er archive, in words, for what they may not read
}

// analyzeEvents is the profile of the events' stacks of exps (eventStacks), its load objects' files
// opened with open; nil without events (nothing is used: nothing to read, a short run's fixed cost).
func analyzeEvents(exps []*experiment.Data, open func(string, *experiment.Archive) (*analysis.ObjectFile, error)) (*analysis.Profile, error) {
	stacks := make([]*experiment.Data, len(exps))
	events := 0
	for i, d := range exps {
		stacks[i] = eventStacks(d)
		events += stacks[i].ClockTable().Len()
	}
	if events == 0 {
		return nil, nil
	}
	return analysis.Analyze(stacks, analysis.Options{OpenFile: open})
}

// treeUsage sets what the compact archives keep from the usage of the whole experiment whose
// archives are written, its founder with all its subexperiments: they serve them all, whichever of
// them er archive was given (p is the profile of those, dir the one named). An unfinished
// experiment (er collect still records it, or was killed) gets whole copies instead: what it will
// use is not known yet.
func (ar *archiver) treeUsage(dir string, p *analysis.Profile, open func(string, *experiment.Archive) (*analysis.ObjectFile, error)) error {
	exps := ar.exps
	if dir != ar.target || !ar.opt.Descendants {
		_, tree, err := readTree(ar.target, true, func(string) {}) // said when the named ones were read
		if err != nil {
			return err
		}
		if p, err = analyzeEvents(tree, open); err != nil {
			return fmt.Errorf("%s: %w", ar.target, err)
		}
		exps = tree
	}
	for _, d := range exps {
		if d.Log.EndTime == 0 {
			ar.opt.Warn(fmt.Sprintf("%s is not finished (er collect still records it, or was killed): its load objects are copied whole; compact archives are made of finished experiments", d.Dir))
			ar.compact = false
			return nil
		}
	}
	if p == nil {
		return nil
	}
	ar.p, ar.objIndex, ar.tree = p, map[string]int{}, exps
	for o, obj := range p.Objects[1:] {
		ar.objIndex[obj.Path] = o + 1
	}
	ar.usedFiles = map[string]bool{}
	for _, f := range p.Lines().Files() {
		ar.usedFiles[f] = true
	}
	for _, d := range exps {
		for _, c := range d.Log.Counters {
			ar.vars = ar.vars || c.Backtrack
		}
	}
	return nil
}

// stripUnused leaves no symbols in the symbol archives of the load objects without events, which
// er collect archives for every object it saw mapped: no lookup is made in them.
func (ar *archiver) stripUnused() error {
	seen := map[string]bool{}
	for _, d := range ar.tree {
		for path, a := range d.Archives {
			if seen[path] || a == nil || a.Kind != "elf" || len(a.Symbols) == 0 {
				continue
			}
			seen[path] = true
			if _, used := ar.objIndex[path]; used {
				continue
			}
			bare := *a
			bare.Symbols = nil
			if err := experiment.WriteArchiveTo(ar.root, &bare); err != nil {
				return ar.notAdded(path, err)
			}
		}
	}
	return nil
}

// archivedObject is a load object that is archived: where its file can be read.
type archivedObject struct {
	path, file string
}

// open reads the experiment dir and, with opt.Descendants, its subexperiments.
func (ar *archiver) open(dir string) error {
	dirs, exps, err := readTree(dir, ar.opt.Descendants, ar.opt.Warn)
	if err != nil {
		return err
	}
	for i, d := range exps {
		ar.add(dirs[i], d)
	}
	return nil
}

// readTree reads the experiment dir and, with descendants, its subexperiments (one that cannot be
// read is left out, and warn says so): their events' stacks are all that is read of them.
func readTree(dir string, descendants bool, warn func(string)) (dirs []string, exps []*experiment.Data, err error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("%s: no such experiment", dir)
	case errors.Is(err, fs.ErrPermission):
		return nil, nil, fmt.Errorf("%s: %s, who archives it, may not reach it (%v); er archive reads and writes an experiment as its owner", dir, userName(uint32(os.Geteuid())), err)
	case err != nil:
		return nil, nil, err
	case !st.IsDir():
		return nil, nil, fmt.Errorf("%s: not an experiment: a file, not the directory that er collect writes (such as test.1.er)", dir)
	}
	hasLog := exists(filepath.Join(dir, experiment.LogFile))
	if !hasLog && !exists(filepath.Join(dir, experiment.MapFile)) {
		return nil, nil, fmt.Errorf("%s: not an experiment: it has no %s or %s (an experiment is the directory that er collect writes, such as test.1.er)",
			dir, experiment.LogFile, experiment.MapFile)
	}
	d, err := experiment.OpenWith(dir, experiment.Options{TraceStacksOnly: true}) // the events' stacks are all it needs
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read experiment %s: %w", dir, err)
	}
	dirs, exps = append(dirs, dir), append(exps, d)
	if !descendants {
		return dirs, exps, nil
	}
	subs, err := experiment.Descendants(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range subs {
		d, err := experiment.OpenWith(s, experiment.Options{TraceStacksOnly: true})
		if err != nil {
			warn(fmt.Sprintf("%s: not archived: %v", s, err))
			continue
		}
		dirs, exps = append(dirs, s), append(exps, d)
	}
	return dirs, exps, nil
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

// skip says that the file at path is not archived because of err: that it no longer exists, that
// the user running er archive (the experiment's owner) may not read it, or err itself.
func (ar *archiver) skip(path string, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ar.warnf("%s: not archived: it no longer exists", path)
	case errors.Is(err, fs.ErrPermission):
		ar.warnf("%s: not archived: %s, who archives the experiment, may not read it (%v)", path, ar.you, err)
	default:
		ar.warnf("%s: not archived: %v", path, err)
	}
}

// object archives the load object mapped from path, once.
func (ar *archiver) object(path string) error {
	if ar.objSeen[path] || !strings.HasPrefix(path, "/") || !ar.matches(path) {
		return nil
	}
	ar.objSeen[path] = true
	if err := archive.CheckObject(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		ar.skip(path, err) // neither copied nor described: a program's by /proc/PID/exe, a device
		return nil
	}
	var a *experiment.Archive
	hadArchive := false
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
	if a == nil && ar.opt.OnlyArchived {
		return nil
	}
	hadArchive = a != nil
	if a == nil {
		b, ok := ar.symbolArchive(path, mapped)
		if !ok {
			return nil
		}
		if err := experiment.WriteArchiveTo(ar.root, b); err != nil {
			return err
		}
		a = b
	}
	if err := archive.SameFile(path, a); err != nil {
		cp, _, ferr := archive.FindObject([]string{ar.target}, a)
		if ferr != nil {
			return ferr
		}
		if cp != "" {
			ar.res.Kept++
			ar.objs = append(ar.objs, archivedObject{path: path, file: cp})
			return nil
		}
		ar.skip(path, err)
		return nil
	}
	if ar.compact && hadArchive && ar.p != nil {
		// Without a symbol archive at the time of the events' profile, its functions were not
		// known: the object is copied whole.
		if done, err := ar.compactObject(path, a); done || err != nil {
			return err
		}
	}
	c, added, err := ar.ix.Add(archive.KindObject, path, a.BuildID, ar.opt.Force)
	if err != nil {
		return ar.notAdded(path, err)
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
	case err != nil:
		ar.skip(path, err)
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

// notAdded says that the file at path could not be copied: a warning, or, where a link in the
// experiment is in the way (*safedir.LinkError), an error that stops the archiving of the
// experiment, since nothing more can be written into it.
func (ar *archiver) notAdded(path string, err error) error {
	if le := (*safedir.LinkError)(nil); errors.As(err, &le) {
		return err
	}
	ar.skip(path, err)
	return nil
}

func (ar *archiver) count(c archive.Copy, added bool, n *int) {
	if !added {
		ar.res.Kept++
		return
	}
	*n++
	ar.res.Bytes += c.FileSize()
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
			ar.skip(name, err)
			continue
		case st.IsDir(): // a line table's directory entry, not a file
			continue
		}
		if err := archive.CheckSource(name); err != nil {
			ar.skip(name, err)
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
			if err := ar.notAdded(name, err); err != nil {
				return err
			}
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

Modes (-a): off (nothing); usedsrc (compact archives of the load objects with events: the code
of the functions er print shows and the debug information of their lines and inlined calls,
compressed; and the source files of lines with events); usedldobjects (the compact archives
alone); copy (whole copies of the load objects with events, and the source files of lines with
events); ldobjects (whole copies of every load object mapped); src or on (whole copies of every
load object, and every source file of their debug information); the default
is %s. Each experiment's line ends with the size of its archives/.

Only regular files are copied: a FIFO, a device or a file of /proc or /sys
named by an experiment is left out, with a warning that says why, as is a load
object that is not an ELF file. An experiment of another user is archived as
that user: run by root, er archive runs itself again with that user's ids and
groups, so that only the files that user may read are copied into it (the
others are named in warnings), and what it writes belongs to that user; run by
another user, it refuses.

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
	opts := []string{"-a", *mode} // for er archive run again as an experiment's owner
	for _, f := range []struct {
		set  bool
		name string
	}{{!opt.Descendants, "-n"}, {*quiet, "-q"}, {*force, "-F"}} {
		if f.set {
			opts = append(opts, f.name)
		}
	}
	if *match != "" {
		opts = append(opts, "-m", *match)
	}
	status := 0
	for _, dir := range dirs {
		if code, done := archiveAsOwner(dir, opts, *quiet, stdout, stderr); done {
			status = max(status, code)
			continue
		}
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
	s := fmt.Sprintf("archived %s and %s (%s)", plural(r.Objects, "load object"), plural(r.Sources, "source file"), Size(r.Bytes))
	if r.Kept > 0 {
		s += fmt.Sprintf("; %d already archived", r.Kept)
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf("; %s not archived (see the warnings)", plural(r.Skipped, "file"))
	}
	return s + fmt.Sprintf("; archives/ holds %s", Size(r.Total))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Size is n bytes in words: "1.9 MiB".
func Size(n int64) string {
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

// eventStacks returns d with each distinct call stack of its events (of every kind of
// analysis.Kinds) in each process as one clock sample, at the time of one of its events (the mappings
// its addresses fall in are those of that time), and no other events: which objects and source
// lines the events use is a matter of their stacks alone, and a heap trace of 4,000,000 calls,
// replayed whole, was half of what er collect did after its target had exited. The stacks of trace
// events not read (experiment.Options.TraceStacksOnly) are there each at the time it was written.
// d is not changed.
func eventStacks(d *experiment.Data) *experiment.Data {
	out := *d
	out.Tables = nil
	type key struct{ pid, stack uint32 }
	seen := map[key]bool{}
	var samples []experiment.ClockSample
	add := func(t int64, pid, tid, stack uint32, mode experiment.Mode) {
		if k := (key{pid, stack}); !seen[k] {
			seen[k] = true
			samples = append(samples, experiment.ClockSample{Time: t, Pid: pid, Tid: tid, Mode: mode, Period: 1, Stack: stack})
		}
	}
	var ev analysis.EventInfo
	for _, k := range analysis.Kinds {
		b := k.Bind(d)
		var modes *events.Col
		if t := d.ClockTable(); k.ID == analysis.DataClock && t != nil {
			modes = &t.Cols[experiment.ClockColMode]
		}
		for i, n := 0, k.Len(d); i < n; i++ {
			b.Info(i, &ev)
			mode := experiment.ModeUser
			if modes != nil {
				mode = experiment.Mode(modes.At(i))
			}
			add(ev.Time, ev.Pid, ev.Tid, b.Stack(i), mode)
		}
	}
	for _, st := range d.TraceStacks { // the stacks of the trace events not read
		add(st.Time, st.Pid, st.Tid, st.Stack, experiment.ModeUser)
	}
	out.AddClock(samples)
	return &out
}
