package erprint

import (
	"strings"
	"testing"
)

// TestGoldenLines: the line and instruction lists and summaries of the real program, and of the
// synthetic experiment without debug information.
func TestGoldenLines(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"lines", []string{"-lines", "-pcs"}},
		{"lines_summary", []string{"-limit", "4", "-lsummary", "-psummary"}},
		{"lines_sort", []string{"-metrics", "e.%totalcpu:i.totalcpu:address:size", "-sort", "address", "-lines", "-pcs", "-sort", "name", "-limit", "5", "-lines"}},
		{"lines_csv", []string{"-printmode", "csv", "-lines", "-limit", "3", "-psummary"}},
		{"lines_inline_callers", []string{"-csingle", "hot", "-calltree"}},
	}
	for _, c := range cases {
		got, code := runAnnotate(t, c.args...)
		if code != exitOK {
			t.Errorf("%s: exit %d\n%s", c.name, code, got)
		}
		checkGolden(t, c.name, got)
	}
	got, _ := runCase([]string{"-lines", "-limit", "5", "-pcs", "demo.1.er"}, "")
	checkGolden(t, "lines_no_debug", got)
}

func TestJSONLines(t *testing.T) {
	got, code := runAnnotate(t, "-printmode", "json", "-lines")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, got)
	}
	body := got[strings.Index(got, "--- stdout\n")+len("--- stdout\n"):]
	doc := jsonDoc(t, body)
	if len(doc) != 1 || doc[0].View != "lines" || len(doc[0].Tables) != 1 {
		t.Fatalf("%s", body)
	}
	tb := doc[0].Tables[0]
	if len(tb.Rows) < 4 || tb.Rows[0].Name != "<Total>" || tb.Rows[1].Name != `work, line 21 in "annotate.c"` || cell(t, tb, 1, "e.totalcpu").V != 500350000 {
		t.Errorf("rows %+v", tb.Rows)
	}
}
