package erprint

import (
	"strings"
	"testing"

	"er/internal/analysis"
	"er/internal/report"
)

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{"functions": "functions", "gprof": "callers-callees", "exit": "quit",
		"fsu": "fsummary", "calltree": "calltree", "ctree": "calltree", "lwp_list": "thread_list"} {
		c, err := lookup(in)
		if err != nil || c.name != want {
			t.Errorf("lookup(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	for in, msg := range map[string]string{"c": "ambiguous command", "zzz": "unknown command", "": "ambiguous"} {
		if _, err := lookup(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("lookup(%q): %v", in, err)
		}
	}
}

func TestSettings(t *testing.T) {
	s := newSession(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, testEnv())
	if err := s.setName([]string{"mangled:soname"}); err != nil || s.style != analysis.NameMangled || !s.soname {
		t.Errorf("name mangled:soname: %v %v %v", err, s.style, s.soname)
	}
	if err := s.setName([]string{"short"}); err != nil || s.style != analysis.NameShort || !s.soname {
		t.Errorf("name short keeps soname: %v %v %v", err, s.style, s.soname)
	}
	if err := s.setName([]string{"long:nosoname"}); err != nil || s.soname {
		t.Errorf("nosoname: %v", err)
	}
	if err := s.setName([]string{"long:so"}); err == nil {
		t.Error("name long:so accepted")
	}
	if err := s.setPrintmode([]string{";"}); err != nil || s.mode != (report.Mode{Kind: report.DelimitedMode, Delim: ';'}) {
		t.Errorf("printmode ;: %v %+v", err, s.mode)
	}
	if err := s.setLimit([]string{"-1"}); err == nil {
		t.Error("limit -1 accepted")
	}
	if err := s.setLimit([]string{"0"}); err != nil || s.limit != 0 {
		t.Error("limit 0")
	}
	// Changing the metrics keeps the sort metric when it is still listed, else takes the first.
	s.sortItem, _ = parseSort("i.totalcpu", s.metrics, ms)
	if err := s.setMetrics([]string{"e.user:i.%totalcpu"}); err != nil || s.sortItem.spec(ms) != "i.%totalcpu" {
		t.Errorf("sort after metrics: %v %s", err, s.sortItem.spec(ms))
	}
	if err := s.setMetrics([]string{"e.system"}); err != nil || s.sortItem.spec(ms) != "e.system" {
		t.Errorf("sort after metrics: %v %s", err, s.sortItem.spec(ms))
	}
	if err := s.setSort([]string{"name"}); err != nil || s.callerSort().kind != itemName {
		t.Errorf("caller sort by name: %v", err)
	}
}

func TestHelpLists(t *testing.T) {
	var out strings.Builder
	s := newSession(strings.NewReader(""), &out, &strings.Builder{}, testEnv())
	if err := s.help(nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if !strings.Contains(out.String(), helpUsage(c)) {
			t.Errorf("help lacks %s", c.name)
		}
	}
}
