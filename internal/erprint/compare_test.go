package erprint

import (
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
)

// TestCompareViews: in compare mode each compared view shows, for every row, each experiment's own
// values (those of the view on that experiment alone) side by side, matched by name; delta the
// differences from the first and ratio the ratios to it.
func TestCompareViews(t *testing.T) {
	// csvRows runs er print and returns its CSV rows by name (the last field; in the call tree with
	// the path of names from the root, in callers-callees with the section).
	csvRows := func(args ...string) (header []string, rows map[string][]string) {
		t.Helper()
		got, code := runCase(append([]string{"-printmode", "csv"}, args...), "")
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, got)
		}
		// The transcript's standard output is CSV.
		_, body, _ := strings.Cut(got, "--- stdout\n")
		body, _, _ = strings.Cut(body, "--- stderr")
		recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, got)
		}
		rows = map[string][]string{}
		var path []string
		for _, r := range recs {
			if len(r) == 0 || strings.HasPrefix(r[0], "#") {
				continue
			}
			if header == nil || r[len(r)-1] == "name" {
				header = r
				continue
			}
			name := r[len(r)-1]
			if i := indexOf(header, "depth"); i >= 0 {
				d, _ := strconv.Atoi(r[i])
				path = append(path[:d], name)
				name = strings.Join(path, "/")
			}
			if i := indexOf(header, "section"); i >= 0 {
				name = r[i] + "/" + name
			}
			rows[name] = r
		}
		return header, rows
	}
	for _, view := range []string{"functions", "lines", "pcs", "lobjects", "calltree"} {
		metric := "e.totalcpu:i.totalcpu"
		if view == "calltree" {
			metric = "i.totalcpu"
		}
		_, one := csvRows("-metrics", metric, "-"+view, "demo.1.er")
		_, two := csvRows("-metrics", metric, "-"+view, "demo.2.er")
		for _, mode := range []string{"on", "delta", "ratio"} {
			h, cmp := csvRows("-compare", mode, "-metrics", metric, "-"+view, "demo.1.er", "demo.2.er")
			if len(cmp) != len(union(one, two)) {
				t.Errorf("%s, compare %s: %d rows, the experiments have %d names", view, mode, len(cmp), len(union(one, two)))
			}
			ncol := strings.Count(metric, ":") + 1
			for name, r := range cmp {
				for c := range ncol {
					a, b := field(one[name], c), field(two[name], c)
					got1, got2 := r[2*c], r[2*c+1]
					want2 := b
					switch {
					case mode == "delta" && b != "" || mode == "delta" && a != "":
						want2 = strconv.FormatFloat(num(b)-num(a), 'f', 3, 64)
						got2 = strconv.FormatFloat(num(got2), 'f', 3, 64)
					case mode == "ratio":
						want2 = ""
						if a != "" && b != "" && num(a) != 0 {
							want2 = strconv.FormatFloat(num(b)/num(a), 'f', 2, 64)
						}
						if got2 != "" {
							got2 = strconv.FormatFloat(num(got2), 'f', 2, 64)
						}
					}
					if got1 != a || got2 != want2 {
						t.Errorf("%s, compare %s, %s, %s: %q and %q, want %q and %q", view, mode, name, h[2*c], got1, got2, a, want2)
					}
				}
			}
		}
	}
}

func indexOf(s []string, x string) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

// field is the c-th field of row r, "" when there is no row.
func field(r []string, c int) string {
	if r == nil {
		return ""
	}
	return r[c]
}

func num(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

func union(a, b map[string][]string) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// TestCompareNote: a view that does not compare says so in compare mode (gprofng says it is not
// available), and shows the experiments together; without compare, or with one experiment, no note.
func TestCompareNote(t *testing.T) {
	const note = "thread_list does not compare: it shows the experiments together"
	got, code := runCase([]string{"-compare", "delta", "-thread_list", "demo.1.er", "demo.2.er"}, "")
	if code != 0 || !strings.Contains(got, note) {
		t.Errorf("thread_list in compare mode: exit %d, no note:\n%s", code, got)
	}
	for _, args := range [][]string{{"-thread_list", "demo.1.er", "demo.2.er"}, {"-compare", "delta", "-thread_list", "demo.1.er"},
		{"-compare", "delta", "-functions", "demo.1.er", "demo.2.er"}} {
		if got, _ := runCase(args, ""); strings.Contains(got, "does not compare") {
			t.Errorf("%v: a note:\n%s", args, got)
		}
	}
}
