package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"er/internal/regfile"
)

// While er collect runs, the collector library writes each process image's trace files into
// .proc/<pid>.<start_ns>/ of the founder experiment, and er reads its messages from the FIFO
// .control; at the end er moves the files into the experiment of each image and removes both
// (docs/trace-format.md, "Processes and control"). An experiment that is read while er collect
// runs, or after it was killed, still has them: the reader takes each image's files from there.
const (
	ProcDirName = ".proc"
	ControlName = ".control"
	maxInfoSize = 64 << 10 // an instance's info file: a few lines
)

// procInstance is one collector-library instance's directory in .proc/.
type procInstance struct {
	dir     string
	name    string // <pid>.<start_ns>
	pid     uint32
	start   int64 // CLOCK_MONOTONIC ns when it started
	founder bool  // its info file says how=founder
}

// procInstances lists the instances in the .proc/ directory of the founder experiment root, in
// the order of their start; none when it has no .proc/.
func procInstances(root string) []procInstance {
	pd := filepath.Join(root, ProcDirName)
	ents, err := os.ReadDir(pd)
	if err != nil {
		return nil
	}
	type dirEnt struct {
		parent string
		e      os.DirEntry
	}
	var all []dirEnt
	for _, e := range ents {
		all = append(all, dirEnt{pd, e})
		// The instances of processes whose privileges were dropped: in .proc/u<uid>/, which belongs to
		// that user.
		if rest, ok := strings.CutPrefix(e.Name(), "u"); ok && e.IsDir() {
			uid, err := strconv.ParseUint(rest, 10, 31)
			var st syscall.Stat_t
			if err != nil || syscall.Lstat(filepath.Join(pd, e.Name()), &st) != nil || uint64(st.Uid) != uid {
				continue
			}
			sub, _ := os.ReadDir(filepath.Join(pd, e.Name()))
			for _, se := range sub {
				all = append(all, dirEnt{filepath.Join(pd, e.Name()), se})
			}
		}
	}
	var out []procInstance
	for _, de := range all {
		e := de.e
		pidStr, startStr, ok := strings.Cut(e.Name(), ".")
		pid, err1 := strconv.ParseUint(pidStr, 10, 32)
		start, err2 := strconv.ParseInt(startStr, 10, 64)
		if !e.IsDir() || !ok || err1 != nil || err2 != nil || start < 0 {
			continue
		}
		in := procInstance{dir: filepath.Join(de.parent, e.Name()), name: e.Name(), pid: uint32(pid), start: start}
		if b, err := regfile.ReadFile(filepath.Join(in.dir, "info"), maxInfoSize, "an instance's info file"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if line == "how=founder" {
					in.founder = true
				}
			}
		}
		out = append(out, in)
	}
	slices.SortStableFunc(out, func(a, b procInstance) int { return int(min(max(a.start-b.start, -1), 1)) })
	return out
}

// procImage is a process image that has an experiment: the founder or a subexperiment.
type procImage struct {
	dir     string
	pid     uint32
	start   int64 // ns since the start of the collection when the image began
	founder bool
}

// procImages lists the founder experiment root (whose log is rootLog) and its subexperiments,
// with the pid and start of each, from their logs. A subexperiment whose log cannot be read is
// left out: no instance is matched to it.
func procImages(root string, rootLog Log) []procImage {
	out := []procImage{{dir: root, pid: rootLog.Pid, founder: true}}
	subs, _ := Descendants(root)
	for _, s := range subs {
		b, err := regfile.ReadFile(filepath.Join(s, LogFile), maxLogSize, LogFile)
		if err != nil {
			continue
		}
		l, _, err := decodeLog(filepath.Join(s, LogFile), b)
		if err != nil {
			continue
		}
		im := procImage{dir: s, pid: l.Pid}
		for _, e := range l.Events {
			if e.Kind == "start" && e.Pid == l.Pid {
				im.start = e.Time
				break
			}
		}
		out = append(out, im)
	}
	return out
}

// owner returns the image that instance in ran in: the founder for the founder's instance, else the
// image of its process that began last at or before the instance's start (t, ns since the start of
// the collection), as er collect matches them; nil when there is none.
func owner(images []procImage, in procInstance, t int64) *procImage {
	var best *procImage
	for i := range images {
		im := &images[i]
		if in.founder {
			if im.founder {
				return im
			}
			continue
		}
		if im.pid == in.pid && im.start <= t && (best == nil || im.start >= best.start) {
			best = im
		}
	}
	return best
}

// procSources returns the trace sources of the experiment dir: its own trace files, completed by
// those of its image's instance that are still in the founder's .proc/, with warnings about what
// comes from there and, for the founder, about instances that belong to no experiment.
func procSources(dir string, log Log, warn func(string)) []traceSource {
	own := traceSource{dir: dir}
	root := FounderDir(dir)
	if root == "" {
		root = dir
	}
	ins := procInstances(root)
	if len(ins) == 0 {
		return []traceSource{own}
	}
	rootLog := log
	if root != dir {
		b, err := regfile.ReadFile(filepath.Join(root, LogFile), maxLogSize, LogFile)
		if err != nil {
			return []traceSource{own}
		}
		if rootLog, _, err = decodeLog(filepath.Join(root, LogFile), b); err != nil {
			return []traceSource{own}
		}
	}
	images := procImages(root, rootLog)
	self := filepath.Clean(dir)
	var mine []procInstance
	var orphans []string
	for _, in := range ins {
		im := owner(images, in, in.start-rootLog.StartPerfNS)
		switch {
		case im == nil:
			orphans = append(orphans, fmt.Sprintf("process %d (%s/%s)", in.pid, ProcDirName, in.name))
		case filepath.Clean(im.dir) == self:
			mine = append(mine, in)
		}
	}
	if root == dir && len(orphans) > 0 {
		warn(fmt.Sprintf("the collector library's data of %s is not read: no experiment of that process image exists (er collect had not recorded its start, or does not follow it)",
			strings.Join(orphans, ", ")))
	}
	if len(mine) == 0 {
		return []traceSource{own}
	}
	for _, in := range mine[1:] {
		warn(fmt.Sprintf("%s/%s: a second collector-library instance in the image of process %d; ignored", ProcDirName, in.name, in.pid))
	}
	in := mine[0]
	own.alt = in.dir
	state := collectorState(root)
	own.note = func(files []string) string {
		return fmt.Sprintf("the trace data of process %d (%s) is read from %s/%s: er collect did not move it into the experiment (%s)",
			in.pid, strings.Join(files, ", "), ProcDirName, in.name, state)
	}
	return []traceSource{own}
}

// collectorState says, in words, whether er collect is still recording the experiment root: it
// holds the FIFO .control open for reading while it runs.
func collectorState(root string) string {
	if collectorRunning(root) {
		return "it is still recording"
	}
	return "it stopped before the end: it was killed, or could not move it"
}

// collectorRunning reports whether er collect is recording the founder experiment root: whether
// its FIFO .control has a reader. The FIFO is opened for writing without blocking and closed at
// once; nothing is written.
func collectorRunning(root string) bool {
	fifo := filepath.Join(root, ControlName)
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return false
	}
	fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false // ENXIO: no reader
	}
	syscall.Close(fd)
	return true
}

// IsUnfinished says whether a reader's warning is the one that the experiment is live or was not
// finished.
func IsUnfinished(w string) bool {
	return w == unfinishedLive || w == unfinishedKilled
}

const (
	unfinishedLive   = "the experiment is live: er collect is still recording it, so what is read is what was written so far"
	unfinishedKilled = "the experiment was not finished: er collect stopped before the end (it was killed, or the machine stopped), so what is read is what was written until then"
)

// unfinished returns the warning for an experiment whose log has no end: er collect is still
// recording it, or stopped (was killed) before it wrote the end.
func unfinished(dir string) string {
	root := FounderDir(dir)
	if root == "" {
		root = dir
	}
	if collectorRunning(root) {
		return unfinishedLive
	}
	return unfinishedKilled
}
