package browsertests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// treeExperiment collects `sh -c "guiprog & guiprog; wait"`: a shell that forks two children that
// exec the test program, three processes in five experiments.
func treeExperiment(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	if lib := filepath.Join(root, "bin", "libercollector.so"); os.Getenv("ER_COLLECTOR_LIB") == "" {
		if _, err := os.Stat(lib); err == nil {
			env = append(env, "ER_COLLECTOR_LIB="+lib)
		}
	}
	exp := filepath.Join(t.TempDir(), "tree.1.er")
	prog := filepath.Join(tmp, "guiprog")
	if _, err := command(tmp, env, erBin, "collect", "-o", exp, "/bin/sh", "-c", prog+" 0.2 & "+prog+" 0.2; wait"); err != nil {
		t.Fatal(err)
	}
	return exp
}

// serve runs er analyzer --no-browser on exp and returns its URL; the server ends with the test.
func serve(t *testing.T, exp string) string {
	t.Helper()
	cmd := exec.Command(erBin, "analyzer", "--no-browser", exp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		defer close(urls)
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			if l := sc.Text(); !found && strings.Contains(l, "http://") {
				f := strings.Fields(l)
				urls <- f[len(f)-1]
				found = true
			}
		}
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("er analyzer ended without printing its URL; stderr:\n%s", stderr.String())
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("er analyzer printed no URL in 60 s; stderr:\n%s", stderr.String())
	}
	return ""
}

// procRow is a row of the Processes view.
type procRow struct {
	Name    string            `json:"name"`
	Depth   int               `json:"depth"`
	Pid     string            `json:"pid"`
	Hidden  bool              `json:"hidden"`
	Cells   map[string]string `json:"cells"`
	Texts   map[string]string `json:"texts"`
	Classes []string          `json:"classes"`
}

func (p *page) procRows() []procRow {
	p.t.Helper()
	var out []procRow
	p.eval("process rows", `[...document.querySelectorAll("#proc-table tbody tr")].map(tr => ({
		name: tr.querySelector(".prog").textContent, depth: +tr.dataset.depth, pid: tr.dataset.pid,
		hidden: tr.getClientRects().length === 0, classes: [...tr.classList],
		cells: Object.fromEntries([...tr.querySelectorAll("td[data-value]")].map(td => [td.dataset.key, td.dataset.value])),
		texts: Object.fromEntries([...tr.querySelectorAll("td[data-key]")].map(td => [td.dataset.key, td.textContent]))}))`, &out)
	return out
}

// expList is er print -experiment_list of exp: each experiment's pid, lineage and target.
func expList(t *testing.T, exp string) [][3]string {
	t.Helper()
	out, err := exec.Command(erBin, "print", "-printmode", "json", "-experiment_list", exp).Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Tables []struct {
			Columns []struct {
				Key string `json:"key"`
			} `json:"columns"`
			Rows []struct {
				Cells []struct {
					T string `json:"t"`
				} `json:"cells"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) == 0 || len(doc[0].Tables) == 0 {
		t.Fatalf("er print -experiment_list: %v:\n%s", err, out)
	}
	tbl := doc[0].Tables[0]
	col := map[string]int{}
	for j, c := range tbl.Columns {
		col[c.Key] = j
	}
	var rows [][3]string
	for _, r := range tbl.Rows {
		rows = append(rows, [3]string{r.Cells[col["pid"]].T, r.Cells[col["lineage"]].T, r.Cells[col["target"]].T})
	}
	return rows
}

// totalCPU is er print's function-list total of exp under a filter, ns.
func totalCPU(t *testing.T, exp, filter string) int64 {
	t.Helper()
	out, err := exec.Command(erBin, "print", "-printmode", "json", "-filters", filter, "-functions", exp).Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Tables []struct {
			Columns []struct {
				Key string `json:"key"`
			} `json:"columns"`
			Rows []struct {
				Cells []struct {
					V int64 `json:"v"`
				} `json:"cells"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) == 0 || len(doc[0].Tables) == 0 {
		t.Fatalf("er print -filters %q -functions: %v:\n%s", filter, err, out)
	}
	tbl := doc[0].Tables[0]
	for j, c := range tbl.Columns {
		if c.Key == "e.totalcpu" {
			return tbl.Rows[0].Cells[j].V
		}
	}
	t.Fatalf("er print -functions has no e.totalcpu")
	return 0
}

// TestProcessTreeView records a shell that runs the test program twice and checks the Analyzer's
// page: the header names the founder and counts its descendants, the Processes view shows the
// tree with er print's pids, programs and lineages and CPU equal to er print's under the process's
// filter; a click on a process filters every view to it, ▸ collapses it; every timeline row is
// named by its program; the static report shows the tree too.
func TestProcessTreeView(t *testing.T) {
	need(t)
	exp := treeExperiment(t)
	url := serve(t, exp)
	p := newPage(t)
	p.open(url+"#view=processes", "processes")
	p.viewError("processes")
	if h := p.text("#exp-name"); h != "tree.1.er + 2 descendant processes" {
		t.Errorf("the header reads %q, want %q", h, "tree.1.er + 2 descendant processes")
	}
	rows := p.procRows()
	var names []string
	for _, r := range rows {
		names = append(names, fmt.Sprintf("%d:%s", r.Depth, r.Name))
	}
	if got := strings.Join(names, " "); got != "0:sh 1:guiprog 1:guiprog" {
		t.Fatalf("the process tree is %s, want 0:sh 1:guiprog 1:guiprog", got)
	}
	// er print's experiment_list: the founder, then each child's fork and exec images.
	el := expList(t, exp)
	if len(el) != 5 {
		t.Fatalf("experiment_list has %d experiments, want 5: %v", len(el), el)
	}
	for i, k := range []int{0, 2, 4} { // each process's last image
		if r := rows[i]; r.Pid != el[k][0] || r.Texts["lineage"] != el[k][1] || r.Name != el[k][2] {
			t.Errorf("process %d: pid %s, lineage %s, %s; experiment_list %v", i, r.Pid, r.Texts["lineage"], r.Name, el[k])
		}
	}
	var sum int64
	for i, r := range rows {
		cpu, _ := strconv.ParseInt(r.Cells["cpu"], 10, 64)
		if want := totalCPU(t, exp, "PID == "+r.Pid); cpu != want {
			t.Errorf("process %d (%s [%s]): CPU %d, er print -filters 'PID == %s' %d", i, r.Name, r.Pid, cpu, r.Pid, want)
		}
		sum += cpu
		if i > 0 && (cpu == 0 || r.Cells["threads"] != "2") {
			t.Errorf("process %d (%s [%s]): CPU %d, %s threads; the program runs two threads for 0.4 s", i, r.Name, r.Pid, cpu, r.Cells["threads"])
		}
	}
	if incl, _ := strconv.ParseInt(rows[0].Cells["cpuIncl"], 10, 64); incl != sum || incl != totalCPU(t, exp, "1") {
		t.Errorf("the founder's CPU with its descendants is %d; the processes' add up to %d", incl, sum)
	}
	p.shot("processes")

	// ▸ collapses the founder's subtree and opens it again.
	p.run("collapse", chromedp.Click(`#proc-table tbody tr[data-depth="0"] .twisty`, chromedp.ByQuery))
	if r := p.procRows(); r[0].Hidden || !r[1].Hidden || !r[2].Hidden {
		t.Errorf("collapsed: rows hidden %v %v %v", r[0].Hidden, r[1].Hidden, r[2].Hidden)
	}
	p.run("expand", chromedp.Click(`#proc-table tbody tr[data-depth="0"] .twisty`, chromedp.ByQuery))
	if r := p.procRows(); r[1].Hidden || r[2].Hidden {
		t.Errorf("expanded again: rows hidden %v %v", r[1].Hidden, r[2].Hidden)
	}

	// A click on the second child filters every view to it.
	child := rows[2]
	p.run("click a child", chromedp.Click(`#proc-table tbody tr[data-proc="2"] td.proc`, chromedp.ByQuery))
	p.waitJS("the process's filter", fmt.Sprintf(`document.querySelector("#filter-text").textContent === "(PID == %s)"`, child.Pid))
	if r := p.procRows(); !slices.Contains(r[2].Classes, "selected") || slices.Contains(r[1].Classes, "selected") {
		t.Errorf("after the click, the selected rows are %v, %v", r[1].Classes, r[2].Classes)
	}
	p.tab("functions")
	if f := p.functions(); len(f) == 0 || fmt.Sprint(value(t, f[0], "e.totalcpu")) != child.Cells["cpu"] {
		t.Errorf("the function list's total with %s [%s] selected is not its CPU %s", child.Name, child.Pid, child.Cells["cpu"])
	}
	p.tab("processes")
	p.run("all processes", chromedp.Click(`#proc-all`, chromedp.ByQuery))
	p.waitJS("no filter", `document.querySelector("#filter-text").textContent === ""`)

	// Every timeline row is named by its program, pid and thread.
	p.tab("timeline")
	var labels []string
	p.eval("timeline labels", `state.tl.data.rows.map(r => r.label)`, &labels)
	pids := map[string]bool{}
	for _, r := range rows {
		pids[r.Pid] = true
	}
	label := regexp.MustCompile(`^(sh|guiprog) \[(\d+)\] T:\d+$`)
	for _, l := range labels {
		if m := label.FindStringSubmatch(l); m == nil || !pids[m[2]] {
			t.Errorf("timeline row %q is not named by a program of the tree, its pid and thread", l)
		}
	}
	for _, r := range rows[1:] { // each child's two threads
		for _, th := range []string{"T:1", "T:2"} {
			if l := "guiprog [" + r.Pid + "] " + th; !slices.Contains(labels, l) {
				t.Errorf("no timeline row %q among %v", l, labels)
			}
		}
	}
	p.shot("process-timeline")

	// The static report shows the tree.
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := exec.Command(erBin, "analyzer", "--html", dir, exp).CombinedOutput(); err != nil {
		t.Fatalf("er analyzer --html: %v\n%s", err, out)
	}
	sp := newPage(t)
	sp.open("file://"+filepath.Join(dir, "index.html")+"#view=processes", "processes")
	sp.viewError("processes")
	if got := sp.procRows(); len(got) != 3 || got[2].Name != "guiprog" || got[2].Cells["cpu"] != child.Cells["cpu"] {
		t.Errorf("the static report's process tree: %+v", got)
	}
	sp.shot("static-processes")
}
