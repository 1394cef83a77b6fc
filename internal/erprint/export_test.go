package erprint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// exportFile runs er print's commands on demo.1.er, then returns the file they wrote.
func exportFile(t *testing.T, file string, cmds ...string) []byte {
	t.Helper()
	out, code := runCase(append(cmds, "demo.1.er"), "")
	if code != 0 {
		t.Fatalf("er print %s: %s", strings.Join(cmds, " "), out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatCum sums a pprof profile's first value by function name: flat at the leaf (its first line), cum
// once per sample.
func flatCum(p *profile.Profile) (flat, cum map[string]int64) {
	flat, cum = map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		seen := map[string]bool{}
		for i, l := range s.Location {
			for j, ln := range l.Line {
				name := ln.Function.Name
				if i == 0 && j == 0 {
					flat[name] += s.Value[0]
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += s.Value[0]
				}
			}
		}
	}
	return flat, cum
}

// TestExportPprofThreads: export_pprof of demo.1.er: a sample per stack and thread, labelled with the
// thread's pid, tid and number, a location per instruction; the functions' exclusive and inclusive
// times those of the profile to the ns; with thread_select, the selected thread's samples only; with
// libc hidden, a location per function, libc's functions one.
func TestExportPprofThreads(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.pb.gz")
	p, err := profile.ParseData(exportFile(t, file, "-export_pprof", file))
	if err != nil {
		t.Fatal(err)
	}
	byThread := map[string]int64{}
	for _, s := range p.Sample {
		key := fmt.Sprint(s.NumLabel["pid"], s.NumLabel["tid"], s.NumLabel["thread"])
		byThread[key] += s.Value[0]
	}
	if want := map[string]int64{"[4242] [4242] [1]": 109 * period, "[4242] [4243] [2]": 24 * period}; fmt.Sprint(byThread) != fmt.Sprint(want) {
		t.Errorf("CPU time by thread %v, want %v", byThread, want)
	}
	flat, cum := flatCum(p)
	if flat["compute"] != 60*period || cum["compute"] != 114*period || cum["main"] != 109*period || flat["sum(double const*, int)"] != 29*period {
		t.Errorf("compute %d %d, main %d, sum %d", flat["compute"], cum["compute"], cum["main"], flat["sum(double const*, int)"])
	}
	// A location per instruction: compute's samples on thread 1 and 2 share its location.
	var computeAt []uint64
	for _, l := range p.Location {
		if l.Line[0].Function.Name == "compute" {
			computeAt = append(computeAt, l.Address)
		}
	}
	if len(computeAt) != 2 || len(p.Location) == len(p.Function) { // the leaf, and the call to sum (a call instruction)
		t.Errorf("compute's locations at %x; %d locations, %d functions", computeAt, len(p.Location), len(p.Function))
	}

	p, err = profile.ParseData(exportFile(t, file, "-thread_select", "2", "-export_pprof", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if s.NumLabel["tid"][0] != 4243 {
			t.Errorf("thread_select 2: a sample of tid %v", s.NumLabel["tid"])
		}
	}
	if _, cum := flatCum(p); cum["compute"] != 24*period || cum["main"] != 0 {
		t.Errorf("thread_select 2: compute %d, main %d", cum["compute"], cum["main"])
	}

	p, err = profile.ParseData(exportFile(t, file, "-object_hide", "libc.so.6", "-export_pprof", file))
	if err != nil {
		t.Fatal(err)
	}
	flat, cum = flatCum(p)
	if len(p.Location) != len(p.Function) || cum["<libc.so.6>"] != 133*period || cum["main"] != 109*period || flat["compute"] != 60*period {
		t.Errorf("libc hidden: %d locations, %d functions; <libc.so.6> %d, main %d, compute %d", len(p.Location), len(p.Function),
			cum["<libc.so.6>"], cum["main"], flat["compute"])
	}
}

// TestExportTimelines: export_speedscope's evented profiles and export_chrome's complete events of
// demo.1.er: thread 1 runs from 0 to 109 samples' time without a gap, thread 2 the next 24, its
// stacks nesting (compute, then sum under it for its last 4 samples).
func TestExportTimelines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.json")
	var ss struct {
		Shared struct {
			Frames []struct{ Name string }
		}
		Profiles []struct {
			Type, Name           string
			StartValue, EndValue int64
			Events               []struct {
				Type  string
				At    int64
				Frame int
			}
		}
	}
	if err := json.Unmarshal(exportFile(t, file, "-export_speedscope", file), &ss); err != nil {
		t.Fatal(err)
	}
	var evented []string
	for _, pr := range ss.Profiles {
		if pr.Type == "evented" {
			evented = append(evented, fmt.Sprintf("%s [%d, %d] %d events", pr.Name, pr.StartValue, pr.EndValue, len(pr.Events)))
		}
	}
	want := []string{
		fmt.Sprintf("demo (pid 4242): thread 1 (pid 4242, tid 4242) [0, %d] %d events", 109*period, len(ss.Profiles[len(ss.Profiles)-2].Events)),
		fmt.Sprintf("demo (pid 4242): thread 2 (pid 4242, tid 4243) [%d, %d] 10 events", 109*period, 133*period),
	}
	if !slices.Equal(evented, want) {
		t.Errorf("evented profiles:\n%s\nwant\n%s", strings.Join(evented, "\n"), strings.Join(want, "\n"))
	}
	last := ss.Profiles[len(ss.Profiles)-1]
	var got []string
	for _, e := range last.Events {
		got = append(got, fmt.Sprintf("%s %s@%d", e.Type, ss.Shared.Frames[e.Frame].Name, e.At/period))
	}
	if s := strings.Join(got, ", "); s != "O clone3@109, O start_thread@109, O worker@109, O compute@109, O sum(double const*, int)@129, "+
		"C sum(double const*, int)@133, C compute@133, C worker@133, C start_thread@133, C clone3@133" {
		t.Errorf("thread 2's events: %s", s)
	}

	file = filepath.Join(t.TempDir(), "demo.trace.json")
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Pid, Tid uint64
			Args     map[string]any
		}
	}
	if err := json.Unmarshal(exportFile(t, file, "-thread_select", "2", "-export_chrome", file), &tr); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" {
			got = append(got, fmt.Sprintf("%d/%d %s %v", e.Pid, e.Tid, e.Name, e.Args))
		} else {
			got = append(got, fmt.Sprintf("%d/%d %s %s %g+%g", e.Pid, e.Tid, e.Ph, e.Name, e.Ts/(period/1e3), e.Dur/(period/1e3)))
		}
	}
	wantTrace := []string{
		"4242/4243 process_name map[name:demo (pid 4242)]", "4242/4243 thread_name map[name:thread 2 (pid 4242, tid 4243)]",
		"4242/4243 thread_sort_index map[sort_index:0]",
		"4242/4243 X clone3 109+24", "4242/4243 X start_thread 109+24", "4242/4243 X worker 109+24", "4242/4243 X compute 109+24",
		"4242/4243 X sum(double const*, int) 129+4",
	}
	if !slices.Equal(got, wantTrace) {
		t.Errorf("chrome trace of thread 2:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantTrace, "\n"))
	}
}

// TestExportMainFormats: er export's format from -format or the file's name, and its errors.
func TestExportMainFormats(t *testing.T) {
	var out, errb strings.Builder
	if code := ExportMain([]string{"-format", "svg", "-o", "x", "demo.1.er"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "pprof, folded, speedscope or chrome") {
		t.Errorf("-format svg: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := ExportMain([]string{"-metric", "totalcpu", "-o", "x.trace.json", "demo.1.er"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "Chrome trace") {
		t.Errorf("-metric with a .trace.json: exit %d, %q", code, errb.String())
	}
	out.Reset()
	if code := ExportMain([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "-format pprof|folded|speedscope|chrome") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
}
