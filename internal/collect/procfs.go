package collect

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// readMaps returns the executable mappings of process pid from /proc/PID/maps.
func readMaps(pid int) ([]experiment.Mapping, error) {
	data, err := os.ReadFile(procPath(uint32(pid), 0, "maps"))
	if err != nil {
		return nil, err
	}
	return parseMaps(uint32(pid), data)
}

// parseMaps reads the text of /proc/PID/maps, keeping the executable mappings.
// A line is "start-end perms offset dev inode [path]".
func parseMaps(pid uint32, data []byte) ([]experiment.Mapping, error) {
	var out []experiment.Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			return nil, fmt.Errorf("maps line %d: %q: expected at least 5 fields", n, sc.Text())
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || end < start {
			return nil, fmt.Errorf("maps line %d: %q: bad address range or offset", n, sc.Text())
		}
		if len(f[1]) < 3 || f[1][2] != 'x' {
			continue
		}
		path := "[anon]"
		if len(f) >= 6 {
			path = strings.Join(f[5:], " ")
		}
		out = append(out, experiment.Mapping{Pid: pid, Start: start, End: end, Offset: off, Path: path, UnloadTime: -1})
	}
	return out, sc.Err()
}

// procUsage is what /proc/PID/stat and /proc/PID/status say about a process's resource use.
type procUsage struct {
	userNS, systemNS int64
	childrenNS       int64 // CPU time of the children the process waited for (cutime + cstime)
	minFlt, majFlt   int64
	volCS, involCS   int64
	rssBytes         int64
	threads          int32
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat; 100 on every Linux architecture we run on.
const clockTick = 100

func readUsage(pid int) (procUsage, error) {
	stat, err := os.ReadFile(procPath(uint32(pid), 0, "stat"))
	if err != nil {
		return procUsage{}, err
	}
	status, _ := os.ReadFile(procPath(uint32(pid), 0, "status"))
	return parseUsage(stat, status, os.Getpagesize())
}

// parseUsage reads /proc/PID/stat (fields after the parenthesised command name) and the context-switch
// counts of /proc/PID/status.
func parseUsage(stat, status []byte, pageSize int) (procUsage, error) {
	var u procUsage
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc stat: no ')' after the command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); field k is f[k-3].
	if len(f) < 22 {
		return u, fmt.Errorf("/proc stat: %d fields after the command name, expected at least 22", len(f))
	}
	num := func(field int) int64 {
		v, _ := strconv.ParseInt(f[field-3], 10, 64)
		return v
	}
	u.minFlt = num(10)
	u.majFlt = num(12)
	u.userNS = num(14) * (1e9 / clockTick)
	u.systemNS = num(15) * (1e9 / clockTick)
	u.childrenNS = (num(16) + num(17)) * (1e9 / clockTick)
	u.threads = int32(num(20))
	u.rssBytes = num(24) * int64(pageSize)
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "voluntary_ctxt_switches":
			u.volCS = n
		case "nonvoluntary_ctxt_switches":
			u.involCS = n
		}
	}
	return u, nil
}

// exitUsage waits for process pid, a child of er, to exit, without reaping it, and reads its own
// usage from /proc while it is a zombie: the usage without that of the children it waited for,
// which wait4 adds. false when the process cannot be waited for or read.
func exitUsage(pid int) (procUsage, bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return procUsage{}, false
		}
		break
	}
	u, err := readUsage(pid)
	return u, err == nil
}

// procPath is the path of file of process pid in /proc ("stat", "maps"; "" for the process's
// directory), or, where tid is not 0, of its thread tid, and counts the access (procReads). Every
// file er opens there stays in the kernel's dentry cache until the process or thread is reaped, and
// reaping walks them (d_walk under release_task, in the reaper's time, which the profile shows in
// the target: docs/collecting.md, "What er changes in the target"). A thread's files are read at
// /proc/TID/FILE, which is the thread's own directory, not under /proc/PID/task: reaping a thread
// walks its own few, and reaping the process does not walk all its threads' (while the threads of a
// process that exits are being reaped on the other CPUs).
func procPath(pid, tid uint32, file string) string {
	b := make([]byte, 0, 40)
	b = append(b, "/proc/"...)
	if tid != 0 {
		b = strconv.AppendUint(b, uint64(tid), 10)
	} else {
		b = strconv.AppendUint(b, uint64(pid), 10)
	}
	if file != "" {
		b = append(b, '/')
		b = append(b, file...)
	}
	path := string(b)
	procReads.add(tid != 0, file, path)
	return path
}

// procReads counts er's accesses to the /proc files of the target's processes and threads, by file
// (a thread's as "task/FILE"), and keeps the paths read, for tests and measurements: only between
// its start and take, so that a long collection does not keep every path it read.
var procReads procCounter

type procCounter struct {
	on    atomic.Bool
	mu    sync.Mutex
	n     map[string]int
	paths map[string]bool
}

// start begins counting.
func (c *procCounter) start() {
	c.mu.Lock()
	c.n, c.paths = map[string]int{}, map[string]bool{}
	c.mu.Unlock()
	c.on.Store(true)
}

func (c *procCounter) add(thread bool, file, path string) {
	if !c.on.Load() {
		return
	}
	if thread {
		file = "task/" + file
	}
	c.mu.Lock()
	if c.n != nil {
		c.n[file]++
		c.paths[path] = true
	}
	c.mu.Unlock()
}

// take returns the counts and the paths read since start, and stops counting.
func (c *procCounter) take() (map[string]int, map[string]bool) {
	c.on.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	n, p := c.n, c.paths
	c.n, c.paths = nil, nil
	return n, p
}
