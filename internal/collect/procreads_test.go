package collect

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"er/internal/perfevent"
)

// maxProcDirFiles bounds the files er reads in any one /proc/N directory: a process's exe, cmdline,
// maps, stat, status and the directory itself, and its main thread's schedstat and syscall.
const maxProcDirFiles = 8

// TestProcReads: er collect of a target that forks 40 children one after the other (every second
// one execs), each with 4 threads, reads at most maxProcDirFiles files in any process's /proc/PID
// directory, however many threads the process has, and at most 2 in a thread's own /proc/TID: each
// file stays in the kernel's dentry cache under that directory, and reaping the process walks them
// all (d_walk under release_task: in `go build -a cmd/gofmt` er's reads of each thread's
// /proc/PID/task/TID files made it the hottest function of the profile).
func TestProcReads(t *testing.T) {
	if _, err := perfevent.Paranoid(); err != nil {
		t.Skipf("perf events not available: %v", err)
	}
	if !perfevent.Probe().ClockProfiling {
		t.Skipf("clock profiling not available: %s", perfevent.Probe().ClockError)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	prog := filepath.Join(t.TempDir(), "procstorm")
	if out, err := exec.Command("gcc", "-O1", "-g", "-pthread", "-o", prog, filepath.Join("..", "..", "testdata", "procstorm.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	const procs, threads = 40, 4
	spec := DefaultSpec()
	spec.Dir = t.TempDir()
	spec.Target = []string{prog, fmt.Sprint(procs), fmt.Sprint(threads), "3"}
	procReads.start()
	var stderr strings.Builder
	if _, err := Run(spec, &stderr); err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	n, paths := procReads.take()
	var counts []string
	total := 0
	for f, c := range n {
		counts = append(counts, fmt.Sprintf("%s %d", f, c))
		total += c
	}
	sort.Strings(counts)
	dirs := map[string][]string{} // /proc/N: the paths er read under it
	for p := range paths {
		f := strings.SplitN(strings.TrimPrefix(p, "/proc/"), "/", 2)
		dirs[f[0]] = append(dirs[f[0]], p)
	}
	most, mostDir := 0, ""
	for d, ps := range dirs {
		if len(ps) > most {
			most, mostDir = len(ps), d
		}
	}
	sort.Strings(dirs[mostDir])
	t.Logf("%d processes (%d exec'd), %d threads: %d reads (%s) of %d files in %d directories; at most %d in /proc/%s: %s",
		procs+1, procs/2, procs*threads, total, strings.Join(counts, ", "), len(paths), len(dirs), most, mostDir, strings.Join(dirs[mostDir], " "))
	if most > maxProcDirFiles {
		t.Errorf("er read %d files in /proc/%s, more than %d: %s", most, mostDir, maxProcDirFiles, strings.Join(dirs[mostDir], " "))
	}
	for d, ps := range dirs {
		if len(ps) > 2 && !strings.Contains(strings.Join(ps, " "), "/stat") {
			t.Errorf("er read %d files of thread %s: %s", len(ps), d, strings.Join(ps, " "))
		}
	}
	if len(dirs) < procs {
		t.Errorf("er read files in %d directories of /proc, fewer than the %d processes: the test counts nothing", len(dirs), procs)
	}
}
