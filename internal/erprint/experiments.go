package erprint

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"er/internal/experiment"
	"er/internal/expfiles"
)

// experimentCommands are the commands that load and drop experiments.
func experimentCommands(g []string) []*command {
	return []*command{
		{name: "en_desc", group: g[6], usage: "en_desc {on|off|=regexp}",
			help:    "load descendant processes' subexperiments with each founder: all (on), none (off), or those whose lineage or program name matches",
			minArgs: 1, maxArgs: 1, run: (*session).enDesc},
		{name: "open_exp", group: g[6], usage: "open_exp experiment", help: "drop all loaded experiments and load this experiment or group",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.reload(nil, a) }},
		{name: "add_exp", group: g[6], usage: "add_exp experiment", help: "load one more experiment or group",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.reload(s.args, a) }},
		{name: "drop_exp", group: g[6], usage: "drop_exp experiment", help: "drop a loaded experiment (and the descendants loaded with it)",
			minArgs: 1, maxArgs: 1, run: (*session).dropExp},
	}
}

// descFilter is the en_desc setting: which subexperiments load with their founder.
type descFilter struct {
	off bool
	re  *regexp.Regexp
	src string // the setting as given ("" for the default, on)
}

func parseDesc(v string) (descFilter, error) {
	switch {
	case v == "on":
		return descFilter{src: v}, nil
	case v == "off":
		return descFilter{off: true, src: v}, nil
	case strings.HasPrefix(v, "=") && len(v) > 1:
		re, err := regexp.Compile(v[1:])
		if err != nil {
			return descFilter{}, usagef("en_desc %s: bad regular expression: %v", v, err)
		}
		return descFilter{re: re, src: v}, nil
	}
	return descFilter{}, usagef("en_desc %q: expected on, off or =regexp", v)
}

// same reports whether two settings load the same subexperiments.
func (f descFilter) same(g descFilter) bool {
	norm := func(s string) string {
		if s == "" {
			return "on"
		}
		return s
	}
	return norm(f.src) == norm(g.src)
}

// preDesc applies the en_desc commands among steps that come before the first step that uses
// the experiments (or runs a script or reads commands), so that the experiments load once, as
// they say; the commands run again in their turn and change nothing. A wrong setting is left for
// its command to report.
func (s *session) preDesc(steps []step) {
	for _, st := range steps {
		if st.cmd == nil {
			return
		}
		if st.cmd.name != "en_desc" {
			if st.cmd.data || st.cmd.name == "open_exp" || st.cmd.name == "add_exp" || st.cmd.name == "drop_exp" {
				return
			}
			continue
		}
		if len(st.args) != 1 {
			return
		}
		f, err := parseDesc(st.args[0])
		if err != nil {
			return
		}
		s.desc = f
	}
}

// wants reports whether a subexperiment loads: its lineage (from its name) or its program name
// must match en_desc's regexp.
func (f descFilter) wants(dir string, l *experiment.Log) bool {
	if f.off {
		return false
	}
	if f.re == nil {
		return true
	}
	prog := ""
	if len(l.Command) > 0 {
		prog = filepath.Base(l.Command[0])
	}
	return f.re.MatchString(l.Lineage) || f.re.MatchString(prog) ||
		f.re.MatchString(strings.TrimSuffix(filepath.Base(dir), ".er"))
}

// enDesc sets en_desc and reloads the experiments given so far.
func (s *session) enDesc(args []string) error {
	f, err := parseDesc(args[0])
	if err != nil {
		return err
	}
	same := f.same(s.desc)
	s.desc = f
	if len(s.args) == 0 || same {
		return nil
	}
	return s.reload(nil, s.args)
}

// reload drops every loaded experiment and loads keep, then more.
func (s *session) reload(keep, more []string) error {
	args := append(append([]string{}, keep...), more...)
	s.args, s.dirs, s.exps, s.prof, s.cmpProfiles = nil, nil, nil, nil, nil
	return s.load(args)
}

// dropExp drops the experiment (or group) given, as it was named when loaded.
func (s *session) dropExp(args []string) error {
	var keep []string
	found := false
	for _, a := range s.args {
		if filepath.Clean(a) == filepath.Clean(args[0]) {
			found = true
			continue
		}
		keep = append(keep, a)
	}
	if !found {
		return fmt.Errorf("drop_exp %s: no such experiment is loaded (experiment_list shows them)", args[0])
	}
	return s.reload(nil, keep)
}

// expand turns one command-line experiment into the directories to load: the experiment, then the
// subexperiments en_desc selects, in lineage order; a group file gives its experiments.
func (s *session) expand(arg string) ([]string, []*experiment.Data, error) {
	var dirs []string
	if strings.HasSuffix(arg, ".erg") {
		list, err := readGroup(arg)
		if err != nil {
			return nil, nil, err
		}
		dirs = list
	} else {
		dirs = []string{arg}
	}
	var outDirs []string
	var out []*experiment.Data
	for _, dir := range dirs {
		d, err := s.env.open(dir)
		if errors.Is(err, experiment.ErrNotExperiment) {
			return nil, nil, err // it names dir and says what it is not
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: not an experiment: it does not exist", dir)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read experiment %s: %w", dir, err)
		}
		outDirs, out = append(outDirs, dir), append(out, d)
		if experiment.IsSubexperiment(dir) || s.desc.off {
			continue
		}
		subs, err := experiment.Descendants(dir)
		if err != nil {
			continue
		}
		// With en_desc =regexp the log alone says whether a subexperiment loads: its data are read
		// only if it does.
		subs = slices.DeleteFunc(subs, func(sub string) bool {
			l, err := experiment.ReadLog(sub)
			return err == nil && !s.desc.wants(sub, &l)
		})
		sds, errs := openAll(subs, s.env.open)
		for i, sub := range subs {
			if errs[i] != nil {
				fmt.Fprintf(s.stderr, "er print: warning: cannot read the subexperiment %s: %v\n", sub, errs[i])
				continue
			}
			if sd := sds[i]; s.desc.wants(sd.Dir, &sd.Log) {
				outDirs, out = append(outDirs, sub), append(out, sd)
			}
		}
	}
	return outDirs, out, nil
}

// openAll opens the experiments dirs with open, as many side by side as there are CPUs (a make
// -j2 run has some 50 subexperiments), and returns each one's data or error, in the order of dirs.
func openAll(dirs []string, open func(string) (*experiment.Data, error)) ([]*experiment.Data, []error) {
	ds, errs := make([]*experiment.Data, len(dirs)), make([]error, len(dirs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(dirs)) {
		wg.Go(func() {
			for i := range next {
				ds[i], errs[i] = open(dirs[i])
			}
		})
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	return ds, errs
}

// readGroup reads an experiment group file.
var readGroup = expfiles.ReadGroup
