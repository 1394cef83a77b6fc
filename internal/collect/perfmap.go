package collect

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
	"er/internal/jitdump"
)

// Perf maps: a runtime that generates code (Node with --perf-basic-prof, LuaJIT, Mono, .NET, Julia,
// a JIT of one's own) names it in /tmp/perf-PID.map, a line "START SIZE name" a function, hex
// without or with 0x. When an image ends, er reads its process's map into its map.xml as dynamic
// functions (experiment.DynamicPath), which name the PCs of that code. A jitdump file (jit-PID.dump,
// Node's --perf-prof) has each function's instructions and load time too: er writes those into the
// experiment's dyntext file.

// perfMapDir is where runtimes write their maps (a variable for the tests).
var perfMapDir = "/tmp"

// perfMapMax bounds what er reads of one map: a runtime that ran for days may have written
// millions of lines, each a mapping in map.xml.
const (
	perfMapMaxBytes = 512 << 20
	perfMapMaxLine  = 64 << 10
)

// perfMap adds process p's perf map, where its runtime wrote one, to its experiment.
func (s *Session) perfMap(p *proc) {
	if p.perfMapRead {
		return
	}
	p.perfMapRead = true
	for _, q := range s.images {
		if q != p && q.pid == p.pid && q.start > p.start {
			return // the process exec'd another image: the map is that one's
		}
	}
	path := fmt.Sprintf("%s/perf-%d.map", perfMapDir, p.pid)
	ms, skipped, err := readPerfMap(path, p.pid, s.perfMapOwners(), s.imageStart(p))
	if err != nil {
		if !os.IsNotExist(err) {
			p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: "the perf map of the process: " + err.Error()})
		}
		return
	}
	if skipped > 0 {
		p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: fmt.Sprintf("%s: %d lines are not \"START SIZE name\" (hex numbers) and were skipped", path, skipped)})
	}
	p.w.AddDynamicFunctions(ms)
	p.w.Event(experiment.Event{Kind: "comment", Pid: p.pid, Text: fmt.Sprintf("%s: %d dynamic functions", path, len(ms))})
}

// imageStart is the wall-clock time (Unix ns) when image p began.
func (s *Session) imageStart(p *proc) int64 { return s.baseLog.StartTime + p.start }

// perfMapOwners are the users whose perf maps er trusts: itself, root, and the users that the
// target's processes became (a server that drops its privileges writes its map as that user).
// A map of anyone else in /tmp could be another user's plant.
func (s *Session) perfMapOwners() map[uint32]bool {
	own := map[uint32]bool{0: true, uint32(os.Getuid()): true, uint32(os.Geteuid()): true}
	for _, m := range s.libSetUIDs {
		own[uint32(m.euid)] = true
	}
	for _, m := range s.libNoStarts {
		if m.euid >= 0 {
			own[uint32(m.euid)] = true
		}
	}
	return own
}

// openRuntimeFile opens a file a runtime wrote for profilers (a perf map, a jitdump): a regular file
// of one of owners, not a link, opened without blocking, last written at notBefore (Unix ns) or
// later (0: at any time), less a second: an older one is an earlier process's of the same pid.
func openRuntimeFile(path string, owners map[uint32]bool, notBefore int64) (*os.File, int64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil, 0, os.ErrNotExist
		}
		return nil, 0, fmt.Errorf("%s: %v", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %v", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file: not read", path)
	}
	if !owners[st.Uid] {
		f.Close()
		return nil, 0, fmt.Errorf("%s belongs to user %d, not to the target's user or root: not read (another user may have put it there)", path, st.Uid)
	}
	if notBefore > 0 && st.Mtim.Nano() < notBefore-int64(time.Second) {
		f.Close()
		return nil, 0, fmt.Errorf("%s was last written before the process started: an earlier process's of the same pid, not read", path)
	}
	return f, st.Size, nil
}

// readPerfMap reads the perf map at path as the dynamic functions of process pid: present from the
// image's start (their code was written then or later), a later line over the same code winning.
// It returns how many lines it skipped as malformed. The file must be a regular file of one of
// owners, not a link, written at notBefore or later (openRuntimeFile).
func readPerfMap(path string, pid uint32, owners map[uint32]bool, notBefore int64) ([]experiment.Mapping, int, error) {
	f, _, err := openRuntimeFile(path, owners, notBefore)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var out []experiment.Mapping
	skipped := 0
	sc := bufio.NewScanner(&limitedReader{f: f, left: perfMapMaxBytes})
	sc.Buffer(make([]byte, 0, 64<<10), perfMapMaxLine)
	for sc.Scan() {
		m, ok := parsePerfMapLine(sc.Text(), pid)
		if !ok {
			if strings.TrimSpace(sc.Text()) != "" {
				skipped++
			}
			continue
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return out, skipped, fmt.Errorf("%s: after %d functions: %v", path, len(out), err)
	}
	return out, skipped, nil
}

// limitedReader reads at most left bytes of f.
type limitedReader struct {
	f    *os.File
	left int64
}

func (r *limitedReader) Read(b []byte) (int, error) {
	if r.left <= 0 {
		return 0, fmt.Errorf("longer than %d MiB: the rest was not read", perfMapMaxBytes>>20)
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	n, err := r.f.Read(b)
	r.left -= int64(n)
	return n, err
}

// parsePerfMapLine parses "START SIZE name".
func parsePerfMapLine(line string, pid uint32) (experiment.Mapping, bool) {
	a, rest, ok1 := strings.Cut(strings.TrimLeft(line, " \t"), " ")
	sz, name, ok2 := strings.Cut(strings.TrimLeft(rest, " \t"), " ")
	name = strings.TrimSpace(name)
	start, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	size, err2 := strconv.ParseUint(strings.TrimPrefix(sz, "0x"), 16, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || name == "" || size == 0 ||
		start+size < start || start+size > experiment.SymbolicBase {
		return experiment.Mapping{}, false
	}
	return experiment.Mapping{Pid: pid, Start: start, End: start + size, Path: experiment.DynamicPath, Func: name, UnloadTime: -1}, true
}

// isJitdump says whether path is the jitdump file of process pid (jit-PID.dump), which its JIT maps
// executable so that profilers find it.
func isJitdump(path string, pid uint32) bool {
	return filepath.Base(path) == fmt.Sprintf("jit-%d.dump", pid)
}

// jitdump writes, for image p whose JIT wrote a jitdump file (Node with --perf-prof, the JVM with
// a jitdump agent), its functions with their instructions into the experiment's dyntext file.
func (s *Session) jitdump(p *proc) {
	if p.jitdumpPath == "" || p.jitdumpRead {
		return
	}
	p.jitdumpRead = true
	warn := func(err error) {
		p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: fmt.Sprintf("the jitdump file %s: %v", p.jitdumpPath, err)})
	}
	f, size, err := openRuntimeFile(p.jitdumpPath, s.perfMapOwners(), s.imageStart(p))
	if err != nil {
		warn(err)
		return
	}
	defer f.Close()
	jf, err := jitdump.Read(f, size)
	if err != nil {
		warn(err) // and what it read before
	}
	fs := make([]experiment.DynFunc, 0, len(jf))
	for _, j := range jf {
		if j.Size > 1<<32-1 || j.Addr+j.Size > experiment.SymbolicBase {
			continue
		}
		d := experiment.DynFunc{Pid: p.pid, Addr: j.Addr, Size: uint32(j.Size), Name: j.Name, Bytes: j.Code,
			Load: max(int64(j.Load)-s.startNS, 0), Unload: -1}
		if j.Unload != 0 {
			d.Unload = max(int64(j.Unload)-s.startNS, d.Load)
		}
		fs = append(fs, d)
	}
	if len(fs) == 0 {
		return
	}
	if err := p.w.WriteFile(experiment.DynTextFile, experiment.EncodeDynText(p.pid, s.startNS, fs)); err != nil {
		s.writeFailed(err)
		return
	}
	p.w.Event(experiment.Event{Kind: "comment", Pid: p.pid, Text: fmt.Sprintf("%s: %d dynamic functions, with their instructions", p.jitdumpPath, len(fs))})
}

// javaFiles writes, for image p of a JVM whose agent recorded it, the JAVA_CLASSES file and the
// map.xml records of its compiled methods and stubs (the manual's Java experiments have both; er
// itself reads the javatrace file).
func (s *Session) javaFiles(p *proc) {
	if !s.spec.JavaOn() || p.javaWritten {
		return
	}
	p.javaWritten = true
	j, err := experiment.ReadJava(p.w.Dir())
	if err != nil {
		p.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: "reading the Java agent's records: " + err.Error()})
		return
	}
	if j == nil || len(j.Methods) == 0 {
		return
	}
	if err := p.w.WriteFile(experiment.JavaClassesFile, experiment.EncodeJavaClasses(j)); err != nil {
		s.writeFailed(err)
		return
	}
	p.w.AddDynamicFunctions(experiment.JavaMapRecords(j))
}
