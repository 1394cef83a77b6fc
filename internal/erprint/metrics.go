package erprint

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/report"
)

// itemKind says what a metric-list item shows.
type itemKind uint8

const (
	itemMetric  itemKind = iota // a metric of the profile, in one flavor
	itemName                    // the function's name
	itemSize                    // the function's size
	itemAddress                 // the function's address
)

// flavor is how a metric is summed for a function: exclusive, inclusive or attributed.
type flavor byte

const (
	exclusive  flavor = 'e'
	inclusive  flavor = 'i'
	attributed flavor = 'a'
)

func (f flavor) title() string {
	switch f {
	case exclusive:
		return "Exclusive"
	case inclusive:
		return "Inclusive"
	}
	return "Attributed"
}

func (f flavor) abbrev() string {
	switch f {
	case exclusive:
		return "Excl."
	case inclusive:
		return "Incl."
	}
	return "Attr."
}

// item is one entry of a metric list, as written in a metric spec: "e.%totalcpu", "name".
type item struct {
	kind   itemKind
	metric int // index into the metrics, for itemMetric (a derived metric's numerator)
	flavor flavor
	value  bool // '.': show the value
	pct    bool // '%': show the percentage
	// derived, for a derived metric (CPI, IPC, a miss rate): the ratio of metric to den, both the
	// item's flavor of two counters' events.
	derived *derivedMetric
	den     int
}

// derivedMetric is a metric computed from two counters where both were recorded: num / den.
type derivedMetric struct {
	name, title, short string
	num, den           string // the metrics' names
}

// derivedMetrics are the derived metrics: cycles per instruction and its inverse, and miss rates
// (misses per access).
var derivedMetrics = []derivedMetric{
	{"cpi", "Cycles Per Instruction", "CPI", "cycles" + analysis.EventsSuffix, "insts"},
	{"ipc", "Instructions Per Cycle", "IPC", "insts", "cycles" + analysis.EventsSuffix},
	{"brm_rate", "Branch Misprediction Rate", "Branch Miss Rate", "brm", "branches"},
	{"dcrm_rate", "L1 D$ Read Miss Rate", "L1 D$ Miss Rate", "dcrm", "dcr"},
	{"llcrm_rate", "Last-Level Cache Read Miss Rate", "LLC Miss Rate", "llcrm", "llcr"},
	{"cache_miss_rate", "Cache Miss Rate", "Cache Miss Rate", "cache-misses", "cache-refs"},
}

// lookupDerived returns the derived metric named name and its parts' indexes in ms, where both were
// recorded.
func lookupDerived(name string, ms []analysis.Metric) (*derivedMetric, int, int, bool) {
	for i := range derivedMetrics {
		d := &derivedMetrics[i]
		if d.name != name {
			continue
		}
		num, den := analysis.MetricIndex(ms, d.num), analysis.MetricIndex(ms, d.den)
		return d, num, den, num >= 0 && den >= 0
	}
	return nil, -1, -1, false
}

// availableDerived lists the derived metrics whose parts ms has.
func availableDerived(ms []analysis.Metric) []*derivedMetric {
	var out []*derivedMetric
	for i := range derivedMetrics {
		if _, _, _, ok := lookupDerived(derivedMetrics[i].name, ms); ok {
			out = append(out, &derivedMetrics[i])
		}
	}
	return out
}

// ratioScale is the fixed point of a derived metric's values: thousandths.
const ratioScale = 1000

// of returns the item's value in v, a row's vector of metrics of the item's flavor: a derived
// metric's ratio in thousandths (0 where the denominator is 0).
func (it item) of(v []int64) int64 {
	if it.derived == nil {
		return v[it.metric]
	}
	num, den := v[it.metric], v[it.den]
	if den == 0 {
		return 0
	}
	return int64(math.Round(float64(num) * ratioScale / float64(den)))
}

// hidden reports whether the item is in the list only to sort by ('!').
func (it item) hidden() bool { return it.kind == itemMetric && !it.value && !it.pct }

// spec writes the item as a metric spec.
func (it item) spec(ms []analysis.Metric) string {
	switch it.kind {
	case itemName:
		return "name"
	case itemSize:
		return "size"
	case itemAddress:
		return "address"
	}
	v := ""
	if it.value {
		v += valueChar(ms[it.metric])
	}
	if it.pct {
		v += "%"
	}
	if v == "" {
		v = "!"
	}
	if it.derived != nil {
		return string(it.flavor) + strings.TrimSuffix(v, "%") + it.derived.name
	}
	return string(it.flavor) + v + ms[it.metric].Name
}

// title is the item's full name: "Exclusive Total CPU Time".
func (it item) title(ms []analysis.Metric) string {
	switch it.kind {
	case itemName:
		return "Name"
	case itemSize:
		return "Size"
	case itemAddress:
		return "PC Address"
	}
	if it.derived != nil {
		return it.flavor.title() + " " + it.derived.title
	}
	return it.flavor.title() + " " + ms[it.metric].Title
}

// column is the item's table column.
func (it item) column(ms []analysis.Metric) report.Column {
	switch it.kind {
	case itemSize:
		return report.Column{Title: "Size", Key: "size", Kind: report.Count, Value: true}
	case itemAddress:
		return report.Column{Title: "PC Addr.", Key: "address", Kind: report.Text}
	}
	if it.derived != nil {
		return report.Column{Title: it.flavor.abbrev() + " " + it.derived.short, Key: string(it.flavor) + "." + it.derived.name,
			Kind: report.Ratio, Value: true}
	}
	m := ms[it.metric]
	c := report.Column{Title: it.flavor.abbrev() + " " + m.Short, Key: string(it.flavor) + "." + m.Name,
		Kind: report.Count, Value: it.value, Percent: it.pct}
	if m.Time {
		c.Kind, c.Unit = report.Time, "sec."
	}
	return c
}

// valueChar is the visibility character that shows a metric's value: '.' for a time, '+' for a
// count or a number of bytes, as gprofng writes them ("i.sync:i+syncn").
func valueChar(m analysis.Metric) string {
	if m.Time {
		return "."
	}
	return "+"
}

// defaultMetrics is the function list's metric list of clock data when none is set, as gprofng's.
const defaultMetrics = "e.%totalcpu:i.%totalcpu:name"

// defaultSpec is the function list's metric list for the metrics ms of the loaded experiments, as
// gprofng chooses it: each kind's default items (analysis.Kind.Default), the kinds in their
// DefaultRank order: the heap metrics first, then the clock metrics, then the synchronization and
// I/O metrics (inclusive values).
func defaultSpec(ms []analysis.Metric) string {
	kinds := slices.Clone(analysis.Kinds)
	slices.SortStableFunc(kinds, func(a, b *analysis.Kind) int { return a.DefaultRank - b.DefaultRank })
	var parts []string
	for _, k := range kinds {
		for _, m := range ms {
			if m.Data == k.ID {
				parts = append(parts, k.DefaultItems(ms)...)
				break
			}
		}
	}
	if len(parts) == 0 {
		return defaultMetrics
	}
	return strings.Join(append(parts, "name"), ":")
}

// firstVisible is the default sort item of a metric list: its first metric shown, else the name.
func firstVisible(list []item) item {
	for _, it := range list {
		if it.kind == itemMetric && !it.hidden() {
			return it
		}
	}
	return item{kind: itemName}
}

// parseMetrics reads a metric spec: items separated by ':', each a flavor ('e', 'i', 'a', or several),
// a visibility ('.' or '+' value, '%' percentage, '.%' both, '!' hidden) and a metric name; or "name",
// "size", "address"; or "default" (defaultSpec(ms)). A metric without a flavor means exclusive and inclusive; without a
// visibility, '.'. The name item is added at the end when missing.
func parseMetrics(spec string, ms []analysis.Metric) ([]item, error) {
	var items []item
	for _, part := range strings.Split(spec, ":") {
		switch part {
		case "":
			return nil, usagef("metric spec %q has an empty item", spec)
		case "default":
			def, err := parseMetrics(defaultSpec(ms), ms)
			if err != nil {
				return nil, err
			}
			items = append(items, def[:len(def)-1]...)
			continue
		}
		its, err := parseItem(part, ms)
		if err != nil {
			return nil, err
		}
		items = append(items, its...)
	}
	hasName := false
	var out []item
	for _, it := range items {
		if it.kind == itemName {
			if hasName {
				continue
			}
			hasName = true
		}
		out = append(out, it)
	}
	if !hasName {
		out = append(out, item{kind: itemName})
	}
	return out, nil
}

func parseItem(s string, ms []analysis.Metric) ([]item, error) {
	switch s {
	case "name":
		return []item{{kind: itemName}}, nil
	case "size":
		return []item{{kind: itemSize}}, nil
	case "address":
		return []item{{kind: itemAddress}}, nil
	}
	i := 0
	flavors := ""
	for i < len(s) && strings.IndexByte("eia", s[i]) >= 0 && i+1 < len(s) && strings.IndexByte("eia.+%!", s[i+1]) >= 0 {
		flavors += s[i : i+1]
		i++
	}
	var value, pct, hide, count bool
	for ; i < len(s) && strings.IndexByte(".+%!", s[i]) >= 0; i++ {
		switch s[i] {
		case '.':
			value = true
		case '+':
			value, count = true, true
		case '%':
			pct = true
		case '!':
			hide = true
		}
	}
	name := s[i:]
	m := analysis.MetricIndex(ms, name)
	if d, num, den, ok := lookupDerived(name, ms); m < 0 && d != nil {
		if !ok {
			return nil, usagef("metric %q in %q needs counters %s and %s (collect with -h %s,%s)", name, s,
				strings.TrimSuffix(d.num, analysis.EventsSuffix), strings.TrimSuffix(d.den, analysis.EventsSuffix),
				strings.TrimSuffix(d.num, analysis.EventsSuffix), strings.TrimSuffix(d.den, analysis.EventsSuffix))
		}
		if flavors == "" {
			flavors = "ei"
		}
		var out []item
		for _, f := range flavors {
			out = append(out, item{kind: itemMetric, metric: num, den: den, derived: d, flavor: flavor(f), value: !hide})
		}
		return out, nil
	}
	if m < 0 {
		return nil, usagef("unknown metric %q in %q; available: %s", name, s, metricNames(ms))
	}
	if count && ms[m].Count != "" {
		// A counter shown as time (cycles): '+' shows its events, as the manual's lists do.
		if c := analysis.MetricIndex(ms, ms[m].Count); c >= 0 {
			m = c
		}
	}
	if hide {
		value, pct = false, false
	} else if !value && !pct {
		value = true
	}
	if flavors == "" {
		flavors = "ei"
	}
	var out []item
	for _, f := range flavors {
		out = append(out, item{kind: itemMetric, metric: m, flavor: flavor(f), value: value, pct: pct})
	}
	return out, nil
}

func metricNames(ms []analysis.Metric) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return strings.Join(append(names, "name", "size", "address"), ", ")
}

func specString(items []item, ms []analysis.Metric) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, it.spec(ms))
	}
	return strings.Join(parts, ":")
}

// parseSort reads a sort spec: an item of the metric list ("e.totalcpu", "i.%user"; the
// visibility is ignored), a bare metric name (its first flavor in the list, else exclusive), or
// "name", "size", "address".
func parseSort(s string, list []item, ms []analysis.Metric) (item, error) {
	switch s {
	case "name":
		return item{kind: itemName}, nil
	case "size":
		return item{kind: itemSize}, nil
	case "address":
		return item{kind: itemAddress}, nil
	}
	if m := analysis.MetricIndex(ms, s); m >= 0 {
		for _, it := range list {
			if it.kind == itemMetric && it.metric == m && it.flavor != attributed {
				return it, nil
			}
		}
		return item{kind: itemMetric, metric: m, flavor: exclusive, value: true}, nil
	}
	its, err := parseItem(s, ms)
	if err != nil {
		return item{}, err
	}
	if len(its) != 1 {
		return item{}, usagef("sort by one metric, not %q", s)
	}
	it := its[0]
	for _, l := range list { // keep the list's visibility, for "Current Sort Metric"
		if l.kind == itemMetric && l.metric == it.metric && l.flavor == it.flavor {
			return l, nil
		}
	}
	return it, nil
}

// sameKey reports whether two items sort the same way.
func sameKey(a, b item) bool {
	return a.kind == b.kind && (a.kind != itemMetric || a.metric == b.metric && a.flavor == b.flavor)
}

// callerMetrics derives the callers-callees metric list from the function list's: the attributed
// flavor of each metric, with the visibility of its first appearance; and the name.
func callerMetrics(list []item) []item {
	var out []item
	seen := map[int]bool{}
	for _, it := range list {
		if it.kind != itemMetric || seen[it.metric] {
			continue
		}
		seen[it.metric] = true
		it.flavor = attributed
		out = append(out, it)
	}
	return append(out, item{kind: itemName})
}

// describeSort writes "Exclusive Total CPU Time ( e.%totalcpu )".
func describeSort(it item, ms []analysis.Metric) string {
	return fmt.Sprintf("%s ( %s )", it.title(ms), it.spec(ms))
}
