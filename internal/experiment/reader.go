package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"weak"

	"er/internal/events"
	"er/internal/regfile"
)

// Open reads the whole experiment in dir. It reads a live or crashed
// experiment: an incomplete last block of a binary file is skipped, and a
// missing log.xml or map.xml is tolerated; both are reported in
// Data.Warnings. Damaged data gives a *FormatError.
func Open(dir string) (*Data, error) {
	return OpenWith(dir, Options{})
}

// Options say what OpenWith reads of an experiment.
type Options struct {
	// TraceStacksOnly: of the collector library's trace files, read the stacks files and not the
	// events (what uses an experiment's stacks and not its events, such as er archive, reads a heap
	// trace of millions of calls for nothing). Data.TraceStacks then lists the stacks of the events
	// not read. The events are read all the same where a stack does not say when it was written
	// (experiments of er before that).
	TraceStacksOnly bool
	// Summed: sum the trace files' events as they are read, and keep the sums in place of the
	// events: the heap trace replayed (HeapTable, HeapSums: a row per thread and stack with its
	// allocations and leaks, and the statistics), the synchronization waits per thread and stack
	// (SyncTable), the I/O calls per thread, stack, operation, outcome and file (IOTable, IOSizes):
	// rows whose count is above 1. Memory then grows with the distinct stacks and the blocks live at once,
	// not with the calls: for what needs the totals of all events and not the events themselves.
	Summed bool
}

// OpenWith is Open with options.
func OpenWith(dir string, opt Options) (*Data, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &notExperiment{fmt.Sprintf("%s: not an experiment directory", dir)}
	}
	d := &Data{Dir: dir, Archives: map[string]*Archive{}}
	path := func(name string) string { return filepath.Join(dir, name) }
	warn := func(w string) {
		if w != "" {
			d.Warnings = append(d.Warnings, strings.TrimPrefix(w, dir+string(filepath.Separator)))
		}
	}

	logBytes, err := readIfExists(path(LogFile), maxLogSize, LogFile)
	if err != nil {
		return nil, err
	}
	var described []string
	if v, ok := gprofngVersion(logBytes); ok {
		return nil, fmt.Errorf("%s: %w (experiment version %s), not by er collect: er print and er analyzer read it, this command does not", dir, ErrGprofng, v)
	}
	if logBytes != nil {
		if d.Log, described, err = decodeLog(path(LogFile), logBytes); err != nil {
			return nil, err
		}
		if d.Log.EndTime == 0 {
			warn(unfinished(dir))
		}
	}

	// The clock file is read before the stacks file: the writer writes a
	// stack before any sample that uses it, so in this order every stack a
	// sample refers to is read, even while the experiment is being written.
	present := map[string]string{}
	var (
		blocks  []clockBlock
		recSize uint32
	)
	clock := events.New(ClockSchema)
	err = readData(path(ClockFile), present, func(name string, f *os.File, size int64) (w string, err error) {
		blocks, recSize, w, err = readClock(name, f, size, clock)
		return w, err
	})
	if err == nil {
		err = readData(path(StacksFile), present, func(name string, f *os.File, size int64) (w string, err error) {
			d.Stacks, w, err = readStacks(name, f, size)
			return w, err
		})
	}
	if err == nil {
		err = readData(path(OverviewFile), present, func(name string, f *os.File, size int64) (w string, err error) {
			d.Overview, w, err = readOverview(name, f, size)
			return w, err
		})
	}
	if err != nil {
		return nil, err
	}
	if d.Stacks == nil {
		d.Stacks = []Stack{nil}
	}
	if err := checkStackIDs(path(ClockFile), clock, 0, blocks, recSize, len(d.Stacks)); err != nil {
		return nil, err
	}
	// The off-CPU intervals, read after the stacks: written after theirs, as the clock's. They join
	// the samples' table, put in time order below.
	nClock := clock.Len()
	blocks = nil
	err = readData(path(OffCPUFile), present, func(name string, f *os.File, size int64) (w string, err error) {
		blocks, recSize, w, err = readClock(name, f, size, clock)
		return w, err
	})
	if err == nil && clock.Len() > nClock {
		err = checkStackIDs(path(OffCPUFile), clock, nClock, blocks, recSize, len(d.Stacks))
	}
	if err != nil {
		return nil, err
	}
	if clock.Len() > 0 {
		d.Tables = map[string]*events.Table{ClockSchema.Name: clock}
	}

	// The counters' samples, read after the stacks as the clock's.
	err = readData(path(CountersFile), present, func(name string, f *os.File, size int64) (w string, err error) {
		var t *events.Table
		if t, w, err = readHWC(name, f, size, len(d.Log.Counters), len(d.Stacks)); err == nil && t.Len() > 0 {
			sortTable(t)
			if d.Tables == nil {
				d.Tables = map[string]*events.Table{}
			}
			d.Tables[CounterSchema.Name] = t
		}
		return w, err
	})
	if err != nil {
		return nil, err
	}
	// The event tables, read after the stacks as the clock's.
	if err := readTables(d, dir, present); err != nil {
		return nil, err
	}

	mapBytes, err := readIfExists(path(MapFile), maxMapSize, MapFile)
	if err != nil {
		return nil, err
	}
	if mapBytes != nil {
		if d.Mappings, err = decodeMap(path(MapFile), mapBytes); err != nil {
			return nil, err
		}
	}

	sources := procSources(dir, d.Log, warn)
	if err := readTraces(d, sources, opt, warn); err != nil {
		return nil, err
	}
	if t := d.ClockTable(); t != nil {
		t.SortByTime() // the off-CPU intervals and the collector library's samples among the others
	}

	notes, err := readIfExists(path(NotesFile), maxNotesSize, NotesFile)
	if err != nil {
		return nil, err
	}
	d.Notes = string(notes)

	if err := readArchives(d, path(ArchivesDir), warn); err != nil {
		return nil, err
	}
	if founder := FounderDir(dir); founder != "" {
		// A subexperiment's load objects are archived in its founder's archives/.
		if err := readArchives(d, filepath.Join(founder, ArchivesDir), nil); err != nil {
			return nil, err
		}
	}

	// Now the warnings, in the order of the files.
	anyData := len(present) > 0 || mapBytes != nil || hasTraceFiles(sources)
	switch {
	case logBytes == nil && !anyData:
		return nil, &notExperiment{fmt.Sprintf("%s: not an experiment: it has no %s and no data files (an experiment is a directory that er collect writes, such as test.1.er)", dir, LogFile)}
	case logBytes == nil:
		warn(LogFile + ": missing; the target, settings and events of the experiment are unknown")
	}
	if mapBytes == nil {
		warn(MapFile + ": missing; no load objects are known, so addresses cannot be named")
	}
	for _, name := range described {
		if name == ClockFile || name == StacksFile || name == OverviewFile {
			if _, ok := present[name]; !ok {
				warn(name + ": missing; the experiment has no " + name + " data")
			}
		}
	}
	for _, name := range []string{ClockFile, StacksFile, OverviewFile, CountersFile} {
		warn(present[name])
	}
	return d, nil
}

// ReadLog reads the log.xml of the experiment in dir alone: what a reader needs to choose among
// subexperiments (lineage, command) without reading their data.
func ReadLog(dir string) (Log, error) {
	file := filepath.Join(dir, LogFile)
	b, err := regfile.ReadFile(file, maxLogSize, LogFile)
	if err != nil {
		return Log{}, err
	}
	l, _, err := decodeLog(file, b)
	return l, err
}

// Limits of the text files of an experiment (docs/experiment-format.md, "Limits"): a larger file
// was not written by er, and is not read.
const (
	maxLogSize   = 64 << 20  // log.xml
	maxMapSize   = 256 << 20 // map.xml
	maxNotesSize = 2 << 20   // notes: at most 10 comments of at most 128 KiB (the kernel's limit on one argument)
)

// readIfExists reads a regular file of at most limit bytes (what names it in the error); a missing
// file gives nil and no error.
func readIfExists(file string, limit int64, what string) ([]byte, error) {
	b, err := regfile.ReadFile(file, limit, what)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, err
}

// readData opens the binary file, if it exists, and reads it with read.
// present gets the file's base name, mapped to the reader's warning.
func readData(file string, present map[string]string, read func(name string, f *os.File, size int64) (string, error)) error {
	f, fi, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := read(file, f, fi.Size())
	present[filepath.Base(file)] = w
	return err
}

// FounderDir returns the founder experiment of a subexperiment (see IsSubexperiment): the first
// directory up from dir that is not itself a subexperiment; "" when dir is not a subexperiment.
func FounderDir(dir string) string {
	d := filepath.Clean(dir)
	for IsSubexperiment(d) {
		d = filepath.Dir(d)
	}
	if d == filepath.Clean(dir) {
		return ""
	}
	return d
}

// readArchives reads every archive file in dir into d.Archives. With warn nil, archives of load
// objects that d.Archives already has are skipped silently (a subexperiment's own archives come
// before its founder's).
func readArchives(d *Data, dir string, warn func(string)) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, archiveSuffix) || strings.HasPrefix(name, ".") {
			continue // a temporary file, or a copy of a load object or source file
		}
		a, err := readArchiveShared(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if _, dup := d.Archives[a.Path]; dup {
			if warn == nil {
				continue
			}
			warn(fmt.Sprintf("%s/%s: a second archive of %s; ignored", ArchivesDir, name, a.Path))
			continue
		}
		d.Archives[a.Path] = a
	}
	return nil
}

// sharedArchives are the archive files this process has read, by file identity, so that experiments
// share them: a subexperiment's load objects are archived in its founder's archives/, and each of a
// make -j2's 187 subexperiments read the founder's 18 archives again (cc1's among them), a third of
// `er analyzer --html`'s 4.2 s and most of its 1.7 GB. An archive is read-only once read. The entries
// are weak: one that no experiment holds any longer is read again.
var sharedArchives struct {
	sync.Mutex
	m map[archiveFileID]weak.Pointer[Archive]
}

// archiveFileID identifies an archive file's content: device, inode, size, modification and change
// times.
type archiveFileID struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

// readArchiveShared is ReadArchive, sharing what this process read of the same file before.
func readArchiveShared(file string) (*Archive, error) {
	f, fi, err := regfile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return readArchive(file, f, fi.Size())
	}
	id := archiveFileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	sharedArchives.Lock()
	if p, ok := sharedArchives.m[id]; ok {
		if a := p.Value(); a != nil {
			sharedArchives.Unlock()
			return a, nil
		}
	}
	sharedArchives.Unlock()
	a, err := readArchive(file, f, fi.Size())
	if err != nil {
		return nil, err
	}
	sharedArchives.Lock()
	if sharedArchives.m == nil {
		sharedArchives.m = map[archiveFileID]weak.Pointer[Archive]{}
	}
	for k, p := range sharedArchives.m {
		if p.Value() == nil {
			delete(sharedArchives.m, k) // no experiment holds it any longer
		}
	}
	sharedArchives.m[id] = weak.Make(a)
	sharedArchives.Unlock()
	return a, nil
}
