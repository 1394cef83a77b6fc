package erprint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/report"
)

// compare {on|off|delta|ratio}, as er_print's: with two or more experiments (or groups) loaded, the
// function list shows each metric of its list for each of them side by side, matched by function name:
// the first's values, then the others' (on), their differences from the first (delta), or their ratios
// to it (ratio). The other views show the experiments aggregated, as without compare.

// compareModes are compare's settings.
var compareModes = []string{"off", "on", "delta", "ratio"}

func (s *session) setCompare(args []string) error {
	if !slices.Contains(compareModes, args[0]) {
		return usagef("compare %q: on, off, delta or ratio", args[0])
	}
	s.compare = args[0]
	if s.compare == "off" {
		s.compare = ""
	}
	s.cmpProfiles = nil
	if s.text() {
		s.printf("Compare mode set to %s\n", args[0])
	}
	return nil
}

// compareGroups returns the loaded experiments by group: each experiment or group given, with the
// subexperiments of its descendants.
func (s *session) compareGroups() ([][]*experiment.Data, []string) {
	var groups [][]*experiment.Data
	var names []string
	for _, d := range s.exps {
		founder := experiment.FounderDir(d.Dir)
		if founder == "" {
			founder = d.Dir
		}
		name := filepath.Clean(founder)
		i := slices.Index(names, name)
		if i < 0 {
			i = len(names)
			names = append(names, name)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	return groups, names
}

// compareProfiles analyses each group on its own (made once, until the experiments change).
func (s *session) compareProfiles() ([]*analysis.Profile, []string, error) {
	groups, names := s.compareGroups()
	if s.cmpProfiles != nil && len(s.cmpProfiles) == len(groups) {
		return s.cmpProfiles, names, nil
	}
	var ps []*analysis.Profile
	for _, g := range groups {
		opts := analysis.Options{OpenFile: s.env.openFile, FoldInlines: s.foldInlines, Visibility: s.objVis.visibilityFunc()}
		if s.env.loadArchive != nil {
			opts.LoadArchive = s.env.loadArchive(g)
		}
		p, err := analysis.Analyze(g, opts)
		if err != nil {
			return nil, nil, err
		}
		if f := s.eventFilter(); f != nil {
			if p, err = p.Refilter(f, false); err != nil {
				return nil, nil, err
			}
		}
		ps = append(ps, p)
	}
	s.cmpProfiles = ps
	return ps, names, nil
}

// compareFunctions is the function list in compare mode.
func (s *session) compareFunctions() error {
	ps, names, err := s.compareProfiles()
	if err != nil {
		return err
	}
	its := shown(s.metrics)
	var metricIts []item
	for _, it := range its {
		if it.kind == itemMetric {
			metricIts = append(metricIts, it)
		}
	}
	// Each function by name, with its exclusive and inclusive vectors in each group (nil: absent).
	type row struct {
		name       string
		excl, incl [][]int64
	}
	byName := map[string]int{}
	rows := []row{{name: analysis.TotalName, excl: make([][]int64, len(ps)), incl: make([][]int64, len(ps))}}
	for g, p := range ps {
		rows[0].excl[g], rows[0].incl[g] = metricVector(s.ms, p, p.Total), metricVector(s.ms, p, p.Total)
		for f := 1; f < len(p.Functions); f++ {
			if !p.Used(f) {
				continue
			}
			name := p.FuncName(f, s.style)
			i, ok := byName[name]
			if !ok {
				i = len(rows)
				byName[name] = i
				rows = append(rows, row{name: name, excl: make([][]int64, len(ps)), incl: make([][]int64, len(ps))})
			}
			rows[i].excl[g] = addVec(rows[i].excl[g], metricVector(s.ms, p, p.Exclusive(f)))
			rows[i].incl[g] = addVec(rows[i].incl[g], metricVector(s.ms, p, p.Inclusive(f)))
		}
	}
	vec := func(r *row, g int, it item) []int64 {
		v := r.excl[g]
		if it.flavor == inclusive {
			v = r.incl[g]
		}
		return v
	}
	value := func(r *row, g int, it item) (int64, bool) {
		v := vec(r, g, it)
		if v == nil {
			return 0, false
		}
		return it.of(v), true
	}
	sortIt := s.sortItem
	body := rows[1:]
	slices.SortStableFunc(body, func(a, b row) int {
		if sortIt.kind == itemMetric {
			va, _ := value(&a, 0, sortIt)
			vb, _ := value(&b, 0, sortIt)
			if va != vb {
				if va > vb {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a.name, b.name)
	})
	var cols []report.Column
	for _, it := range metricIts {
		for g := range ps {
			c := it.column(s.ms)
			tag := fmt.Sprintf(" [%d]", g+1)
			c.Title += tag
			c.Key += fmt.Sprintf("[%d]", g+1)
			if g > 0 {
				switch s.compare {
				case "delta":
					c.Title, c.Key, c.Percent = "Delta "+c.Title, "delta."+c.Key, false
				case "ratio":
					c.Title, c.Key, c.Kind, c.Unit, c.Percent = "Ratio "+c.Title, "ratio."+c.Key, report.Ratio, "", false
				}
			}
			cols = append(cols, c)
		}
	}
	var title []string
	if s.text() {
		title = append(title, "Functions sorted by metric: "+sortIt.title(s.ms)+" [1], compare "+s.compare)
		for g, n := range names {
			title = append(title, fmt.Sprintf("  [%d] %s", g+1, n))
		}
	}
	t := &report.Table{Title: title, Columns: cols, NameTitle: "Name"}
	all := append(rows[:1:1], body...)
	for _, r := range all[:s.limited(len(all))] {
		var cells []report.Cell
		for _, it := range metricIts {
			base, hasBase := value(&r, 0, it)
			for g := range ps {
				v, ok := value(&r, g, it)
				total := int64(0)
				if tv := rows[0].excl[g]; tv != nil && it.derived == nil {
					total = tv[it.metric]
				}
				switch {
				case g == 0 || s.compare == "on":
					cells = append(cells, report.Cell{Value: v, Pct: percent(v, total), Blank: !ok})
				case s.compare == "delta":
					cells = append(cells, report.Cell{Value: v - base})
				case s.compare == "ratio":
					c := report.Cell{Blank: !ok || !hasBase || base == 0}
					if !c.Blank {
						c.Value = int64(float64(v) * ratioScale / float64(base))
					}
					cells = append(cells, c)
				}
			}
		}
		t.Rows = append(t.Rows, report.Row{Name: r.name, Cells: cells})
	}
	return s.table(t)
}

// metricVector returns p's vector v in the order of the session's metrics ms (by name; 0 where p lacks
// one): the groups' profiles may have different metrics.
func metricVector(ms []analysis.Metric, p *analysis.Profile, v []int64) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		if j := analysis.MetricIndex(p.Metrics, m.Name); j >= 0 {
			out[i] = v[j]
		}
	}
	return out
}

// addVec adds b to a (nil: b's copy).
func addVec(a, b []int64) []int64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i := range a {
		a[i] += b[i]
	}
	return a
}
