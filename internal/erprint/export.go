package erprint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"er/internal/analysis"
	"er/internal/export"
)

// exportProfile builds the export of the current profile (its filter and view as er print shows them):
// every metric, every distinct stack with its values, functions named as the views name them.
func (s *session) exportProfile() (*analysis.Profile, *export.Profile, error) {
	p, err := s.profile()
	if err != nil {
		return nil, nil, err
	}
	out := &export.Profile{Main: -1}
	for _, m := range p.Metrics {
		unit := "count"
		switch {
		case m.Time:
			unit = "nanoseconds"
		case strings.Contains(m.Name, "bytes"):
			unit = "bytes"
		}
		out.Metrics = append(out.Metrics, export.Metric{Name: m.Name, Unit: unit})
	}
	builds := map[string]string{}
	for _, d := range s.exps {
		for path, a := range d.Archives {
			if a != nil && a.BuildID != "" {
				builds[path] = a.BuildID
			}
		}
		if out.StartNS == 0 || d.Log.StartTime < out.StartNS {
			out.StartNS = d.Log.StartTime
		}
		out.DurationNS = max(out.DurationNS, d.Log.RecordedDuration())
		out.Comments = append(out.Comments, "er experiment "+d.Dir+": "+strings.Join(d.Log.Command, " "))
	}
	for i, o := range p.Objects {
		out.Objects = append(out.Objects, export.Object{Path: o.Path, BuildID: builds[o.Path]})
		if len(s.exps) > 0 && len(s.exps[0].Log.Command) > 0 && out.Main < 0 && strings.HasSuffix(o.Path, "/"+strings.TrimPrefix(s.exps[0].Log.Command[0], "./")) {
			out.Main = i
		}
	}
	index := make([]int, len(p.Functions))
	for i := range index {
		index[i] = -1
	}
	for st := 0; st < p.NumStacks(); st++ {
		funcs, vals := p.Stack(st)
		es := export.Stack{Values: append([]int64(nil), vals...)}
		for _, f := range funcs {
			if index[f] < 0 {
				index[f] = len(out.Functions)
				fn := &p.Functions[f]
				out.Functions = append(out.Functions, export.Function{Name: s.funcName(p, int(f)), SystemName: fn.Name,
					Object: fn.Object, Addr: fn.Addr})
			}
			es.Funcs = append(es.Funcs, index[f])
		}
		out.Stacks = append(out.Stacks, es)
	}
	return p, out, nil
}

// exportPprof writes the profile as pprof's profile.proto.
func (s *session) exportPprof(args []string) error {
	_, ep, err := s.exportProfile()
	if err != nil {
		return err
	}
	return writeExport(args[0], func(f *os.File) error { return export.Pprof(ep, f) })
}

// exportFolded writes one metric of the profile as FlameGraph's folded stacks: the metric named, else
// the sort metric, else the first.
func (s *session) exportFolded(args []string) error {
	p, ep, err := s.exportProfile()
	if err != nil {
		return err
	}
	m := 0
	if s.sortItem.kind == itemMetric && s.sortItem.derived == nil {
		m = s.sortItem.metric
	}
	if len(args) > 1 {
		if m = analysis.MetricIndex(p.Metrics, args[1]); m < 0 {
			return usagef("export_folded: unknown metric %q; available: %s", args[1], metricNames(p.Metrics))
		}
	}
	return writeExport(args[0], func(f *os.File) error { return export.Folded(ep, m, f) })
}

// exportSpeedscope writes the profile as speedscope's JSON: a sampled profile per metric.
func (s *session) exportSpeedscope(args []string) error {
	_, ep, err := s.exportProfile()
	if err != nil {
		return err
	}
	name := "er"
	if len(s.exps) > 0 {
		name = filepath.Base(s.exps[0].Dir)
	}
	return writeExport(args[0], func(f *os.File) error { return export.Speedscope(ep, name, f) })
}

// writeExport writes a file with write, saying which file where it fails.
func writeExport(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// ExportMain is `er export`: [-format pprof|folded] [-metric NAME] -o FILE experiment...; the format
// from the file's name where not given (.folded, .txt: folded; else pprof).
func ExportMain(args []string, stdout, stderr io.Writer) int {
	format, metric, out := "", "", ""
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--help" || a == "-help" || a == "-h" {
			fmt.Fprint(stdout, exportUsage)
			return 0
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		if i+1 >= len(args) {
			fmt.Fprintf(stderr, "er export: option %s needs a value\n", a)
			return 2
		}
		switch a {
		case "-format":
			format = args[i+1]
		case "-metric":
			metric = args[i+1]
		case "-o":
			out = args[i+1]
		default:
			fmt.Fprintf(stderr, "er export: unknown option %q (run `er export --help`)\n", a)
			return 2
		}
		i++
	}
	exps := args[i:]
	if out == "" || len(exps) == 0 {
		fmt.Fprint(stderr, exportUsage)
		return 2
	}
	if format == "" {
		switch {
		case strings.HasSuffix(out, ".folded"), strings.HasSuffix(out, ".txt"):
			format = "folded"
		case strings.HasSuffix(out, ".json"):
			format = "speedscope"
		default:
			format = "pprof"
		}
	}
	var cmd []string
	switch format {
	case "pprof":
		if metric != "" {
			fmt.Fprintln(stderr, "er export: -metric is for -format folded (a pprof profile holds every metric)")
			return 2
		}
		cmd = []string{"-export_pprof", out}
	case "folded":
		cmd = []string{"-export_folded", out}
		if metric != "" {
			cmd = append(cmd, metric)
		}
	case "speedscope":
		if metric != "" {
			fmt.Fprintln(stderr, "er export: -metric is for -format folded (a speedscope file holds a profile per metric)")
			return 2
		}
		cmd = []string{"-export_speedscope", out}
	default:
		fmt.Fprintf(stderr, "er export: -format %q: pprof, folded or speedscope\n", format)
		return 2
	}
	return run(append(cmd, exps...), strings.NewReader(""), stdout, stderr, defaultEnv())
}

const exportUsage = `Usage: er export [-format pprof|folded|speedscope] [-metric NAME] -o FILE experiment...

Writes the experiments' profile for other tools: pprof's profile.proto (go tool pprof, and the
services that read pprof: every metric a sample type, every call stack a sample), FlameGraph's folded
stacks of one metric (flamegraph.pl; the metric named, else the first), or speedscope's JSON (a sampled
profile per metric). The format is the file's: .folded or .txt is folded, .json speedscope, else pprof.
er print's export_pprof, export_folded and export_speedscope do the same with its filters and settings.
`
