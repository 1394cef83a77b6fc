package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pprofTop runs go tool pprof -top on file and returns each function's flat and cum milliseconds.
func pprofTop(t *testing.T, file string) map[string][2]float64 {
	t.Helper()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=1000", "-unit=ms", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", file, err, out)
	}
	ms := func(s string) (float64, bool) { // "250.26ms", or "0"
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "ms"), 64)
		return v, err == nil && (strings.HasSuffix(s, "ms") || s == "0")
	}
	got := map[string][2]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		flat, ok1 := ms(f[0])
		cum, ok2 := ms(f[3])
		if ok1 && ok2 {
			got[strings.Join(f[5:], " ")] = [2]float64{flat, cum}
		}
	}
	return got
}

// TestExportPprof: the seed example's experiment exported to pprof: go tool pprof -top gives each
// function the exclusive and inclusive time er print -functions gives it, to the ms; the folded stacks
// add up to er print's total (issue 16, acceptance 1, its pprof and folded parts).
func TestExportPprof(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	prog := cprog(t, "seed002")
	exp, r := collectExp(t, nil, prog)
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	dir := t.TempDir()
	pb, folded, ss := filepath.Join(dir, "seed.pb.gz"), filepath.Join(dir, "seed.folded"), filepath.Join(dir, "seed.json")
	for _, out := range []string{pb, folded, ss} {
		if x := er(t, "", nil, "export", "-o", out, exp); x.code != 0 {
			t.Fatalf("er export -o %s: exit %d\n%s", out, x.code, x.stderr)
		}
	}
	excl, incl := functionTimes(t, exp)
	top := pprofTop(t, pb)
	for _, fn := range []string{"main", "A", "B", "C", "E", "F", "G"} {
		got, ok := top[fn]
		if !ok {
			t.Errorf("go tool pprof -top has no %s:\n%v", fn, top)
			continue
		}
		if abs(got[0]-1000*excl[fn]) > 1 || abs(got[1]-1000*incl[fn]) > 1 {
			t.Errorf("%s: pprof flat %.2f ms, cum %.2f ms; er print %.3f s, %.3f s", fn, got[0], got[1], excl[fn], incl[fn])
		}
	}
	b, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil || strings.Count(line[:i], " ") > 0 && !strings.Contains(line[:i], ";") {
			t.Fatalf("folded line %q", line)
		}
		sum += v
	}
	if abs(sum/1e9-excl["<Total>"]) > 0.001 {
		t.Errorf("folded stacks add up to %.4f s, er print's <Total> %.4f s", sum/1e9, excl["<Total>"])
	}
	// speedscope: the fields its file format requires, and the CPU profile's weights adding up.
	b, err = os.ReadFile(ss)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type       string  `json:"type"`
			Name       string  `json:"name"`
			Unit       string  `json:"unit"`
			StartValue *int64  `json:"startValue"`
			EndValue   *int64  `json:"endValue"`
			Samples    [][]int `json:"samples"`
			Weights    []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Schema == "" || len(f.Profiles) == 0 || len(f.Shared.Frames) == 0 {
		t.Fatalf("speedscope file: %.300s", b)
	}
	cpu := f.Profiles[0]
	var w int64
	for i, s := range cpu.Samples {
		for _, fr := range s {
			if fr < 0 || fr >= len(f.Shared.Frames) {
				t.Fatalf("sample %d: frame %d of %d", i, fr, len(f.Shared.Frames))
			}
		}
		w += cpu.Weights[i]
	}
	if cpu.Type != "sampled" || cpu.Unit != "nanoseconds" || cpu.StartValue == nil || cpu.EndValue == nil || *cpu.EndValue != w ||
		len(cpu.Weights) != len(cpu.Samples) || abs(float64(w)/1e9-excl["<Total>"]) > 0.001 {
		t.Errorf("speedscope's CPU profile: %s, %s, %d samples, weights %d ns; er print's <Total> %.4f s", cpu.Type, cpu.Unit, len(cpu.Samples), w, excl["<Total>"])
	}
}
