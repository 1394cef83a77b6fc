package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"er/internal/coldread"
)

// coldFiles is how many one-page files TestColdFilesStayCold maps.
const coldFiles = 200

// TestColdFilesStayCold: er collect leaves the target's page cache alone. A target maps 200 one-page
// files that are not cached, PROT_EXEC, without touching them: once er has handled their mapping
// records (map.xml names them all), none of them is cached (er read each while the target ran, and
// they all were). Then the target touches them: it takes as many major faults under er as without
// (200 each; within 2%, for a page that another process of the machine happens to read meanwhile).
func TestColdFilesStayCold(t *testing.T) {
	needCollect(t)
	prog := cbuild(t, "coldmaps", "-O1", "-g")
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 10))
	page := make([]byte, os.Getpagesize())
	for i := range coldFiles {
		for j := range page {
			page[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), page, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	evict := func() {
		t.Helper()
		for i := range coldFiles {
			p := filepath.Join(dir, fmt.Sprintf("f%d", i))
			if err := coldread.Evict(p); err != nil {
				t.Fatal(err)
			}
		}
		if n := cachedFiles(t, dir); n != 0 {
			t.Skipf("%d of %d files stay cached after POSIX_FADV_DONTNEED (a file system in memory?)", n, coldFiles)
		}
	}

	evict()
	alone := runCold(t, exec.Command(prog, dir, strconv.Itoa(coldFiles), "touch"), nil)
	if alone < coldFiles*9/10 {
		t.Fatalf("the target alone took %d major faults touching %d evicted files; want about %d", alone, coldFiles, coldFiles)
	}

	evict()
	exp := filepath.Join(t.TempDir(), "test.1.er")
	cached := -1
	under := runCold(t, exec.Command(erBin, "collect", "-o", exp, prog, dir, strconv.Itoa(coldFiles), "touch"), func() {
		// Once er has handled the mapping records: the experiment's map.xml has them all.
		deadline := time.Now().Add(60 * time.Second)
		for mappedIn(exp, dir) < coldFiles {
			if time.Now().After(deadline) {
				t.Fatalf("map.xml of %s names %d of the %d files after 60 s", exp, mappedIn(exp, dir), coldFiles)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cached = cachedFiles(t, dir)
	})
	t.Logf("%d evicted one-page files mapped: %d cached after er handled their mappings; major faults touching them: %d alone, %d under er",
		coldFiles, cached, alone, under)
	if cached != 0 {
		t.Errorf("%d of %d evicted files were cached once er had handled their mappings, before the target touched them", cached, coldFiles)
	}
	if d := under - alone; d > alone/50 || -d > alone/50 {
		t.Errorf("the target took %d major faults touching the files under er, %d alone: want the same within 2%%", under, alone)
	}
}

// runCold runs cmd (the coldmaps target, or er collect running it), calls ready (when not nil) once
// it says "mapped", lets it touch the files, and returns the major faults it says that took.
func runCold(t *testing.T, cmd *exec.Cmd, ready func()) int {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited { // (a failure on the way: it waits on its input)
			in.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "mapped" {
		t.Fatalf("%s: %q, want \"mapped\"\n%s", cmd.Path, sc.Text(), stderr.String())
	}
	if ready != nil {
		ready()
	}
	io.WriteString(in, "go\n")
	in.Close()
	faults := -1
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "majflt" {
			faults, _ = strconv.Atoi(f[1])
		}
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	if faults < 0 {
		t.Fatalf("%s printed no major faults\n%s", cmd.Path, stderr.String())
	}
	return faults
}

// cachedFiles counts the files f0... of dir that have their page in the page cache.
func cachedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for i := range coldFiles {
		res, err := coldread.Resident(filepath.Join(dir, fmt.Sprintf("f%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) > 0 && res[0] {
			n++
		}
	}
	return n
}

// mappedIn counts the mappings of files in dir that the experiment's map.xml, as last written, holds.
func mappedIn(exp, dir string) int {
	b, _ := os.ReadFile(filepath.Join(exp, "map.xml"))
	return strings.Count(string(b), `path="`+dir+"/f")
}
