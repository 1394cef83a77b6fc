package erprint

import (
	"errors"
	"testing"

	"er/internal/analysis"
)

var ms = analysis.ClockMetrics

func TestParseMetrics(t *testing.T) {
	cases := []struct{ in, want string }{
		{"e.%totalcpu:i.totalcpu", "e.%totalcpu:i.totalcpu:name"},
		{"default", "e.%totalcpu:i.%totalcpu:name"},
		{"user", "e.user:i.user:name"},
		{"ei%system:name:size", "e%system:i%system:name:size"},
		{"e!user:address:name:name", "e!user:address:name"},
		{"i.%.user", "i.%user:name"},
		{"default:e.system", "e.%totalcpu:i.%totalcpu:e.system:name"},
	}
	for _, c := range cases {
		items, err := parseMetrics(c.in, ms)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := specString(items, ms); got != c.want {
			t.Errorf("parseMetrics(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "e.", "x.user", "e.user:", "e.%bogus"} {
		_, err := parseMetrics(bad, ms)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("parseMetrics(%q): %v, want a usage error", bad, err)
		}
	}
	items, _ := parseMetrics("e!user:i.%totalcpu", ms)
	if !items[0].hidden() || items[1].hidden() || len(shown(items)) != 1 {
		t.Errorf("hidden items: %+v", items)
	}
	if got := items[1].title(ms); got != "Inclusive Total CPU Time" {
		t.Errorf("title %q", got)
	}
	c := items[1].column(ms)
	if c.Title != "Incl. Total CPU" || c.Unit != "sec." || c.Key != "i.totalcpu" || !c.Value || !c.Percent {
		t.Errorf("column %+v", c)
	}
}

func TestParseSort(t *testing.T) {
	list, _ := parseMetrics("i.%user:e.totalcpu", ms)
	cases := []struct{ in, want string }{
		{"user", "i.%user"},          // the list's flavor
		{"system", "e.system"},       // not in the list: exclusive
		{"e.totalcpu", "e.totalcpu"}, // as in the list
		{"i.%totalcpu", "i.%totalcpu"},
		{"name", "name"},
		{"size", "size"},
	}
	for _, c := range cases {
		it, err := parseSort(c.in, list, ms)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := it.spec(ms); got != c.want {
			t.Errorf("parseSort(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"ei.user", "bogus"} {
		if _, err := parseSort(bad, list, ms); err == nil {
			t.Errorf("parseSort(%q) accepted", bad)
		}
	}
	if got := describeSort(list[0], ms); got != "Inclusive User CPU Time ( i.%user )" {
		t.Errorf("describeSort %q", got)
	}
}

func TestCallerMetrics(t *testing.T) {
	list, _ := parseMetrics("i.user:e.%totalcpu:i.%totalcpu:size", ms)
	if got := specString(callerMetrics(list), ms); got != "a.user:a.%totalcpu:name" {
		t.Errorf("callerMetrics %q", got)
	}
	a, _ := parseMetrics("e.totalcpu", ms)
	b, _ := parseMetrics("e.%totalcpu", ms)
	c, _ := parseMetrics("i.totalcpu", ms)
	if !sameKey(a[0], b[0]) || sameKey(a[0], c[0]) || !sameKey(item{kind: itemName}, item{kind: itemName}) {
		t.Error("sameKey")
	}
}

func TestTracingMetricSpecs(t *testing.T) {
	all := append(append(append(append([]analysis.Metric(nil), analysis.ClockMetrics...), analysis.HeapMetrics...),
		analysis.SyncMetrics...), analysis.IOMetrics...)
	cases := []struct{ in, want string }{
		{"i+heapleakbytes", "i+heapleakbytes:name"},
		{"i.heapleakbytes", "i+heapleakbytes:name"}, // '.' is accepted for counts too
		{"e+%syncn:i.sync", "e+%syncn:i.sync:name"},
		{"ioreadcnt", "e+ioreadcnt:i+ioreadcnt:name"},
		{"ei+%iowritebytes", "e+%iowritebytes:i+%iowritebytes:name"},
		{"default", "i+heapleakbytes:i+heapleakcnt:i+heapallocbytes:i+heapalloccnt:e.%totalcpu:i.%totalcpu:i.sync:i+syncn:i.ioreadtime:i.iowritetime:i.ioothertime:i.ioerrortime:name"},
	}
	for _, c := range cases {
		items, err := parseMetrics(c.in, all)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := specString(items, all); got != c.want {
			t.Errorf("parseMetrics(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		ms   []analysis.Metric
		want string
	}{
		{analysis.ClockMetrics, "e.%totalcpu:i.%totalcpu:name"},
		{analysis.HeapMetrics, "i+heapleakbytes:i+heapleakcnt:i+heapallocbytes:i+heapalloccnt:name"},
		{append(append([]analysis.Metric(nil), analysis.ClockMetrics...), analysis.SyncMetrics...), "e.%totalcpu:i.%totalcpu:i.sync:i+syncn:name"},
		{analysis.IOMetrics, "i.ioreadtime:i.iowritetime:i.ioothertime:i.ioerrortime:name"},
	} {
		if got := defaultSpec(c.ms); got != c.want {
			t.Errorf("defaultSpec = %q, want %q", got, c.want)
		}
	}
	list, _ := parseMetrics("e!heapalloccnt:i+heapleakcnt:size", analysis.HeapMetrics)
	if it := firstVisible(list); it.spec(analysis.HeapMetrics) != "i+heapleakcnt" {
		t.Errorf("first visible %s", it.spec(analysis.HeapMetrics))
	}
	if it := firstVisible([]item{{kind: itemName}}); it.kind != itemName {
		t.Errorf("first visible of no metric: %+v", it)
	}
	if _, err := parseMetrics("i.sync", analysis.HeapMetrics); err == nil {
		t.Error("a metric of absent data accepted")
	}
}
