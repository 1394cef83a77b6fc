package expfiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"er/internal/regfile"
	"er/internal/version"
)

const rmUsage = `Usage: er rm [-f] [-q] [-V] experiment|group...   (also as: er_rm)

Removes experiments, with their subexperiments, and experiment groups (a group file NAME.erg:
its experiments, then the file itself).
  -f   force: skip silently what is not an experiment or group (or does not exist), remove a
       subexperiment (NAME.er/_f1.er) alone, and remove the rest of a group whose lines name
       missing experiments; exit 0 whatever was found
  -q   quiet: do not list what was removed (errors are still reported)
  -V   print er's version
A symbolic link is never followed: a link given as an argument is refused, links inside an
experiment are removed as links.
`

const cpUsage = `Usage: er cp [-V] experiment new.er          (also as: er_cp)
       er cp [-V] experiment|group... directory

Copies an experiment, with its subexperiments, to a new name ending in .er, or copies experiments
into an existing directory under their own names. A group (NAME.erg) copied into a directory
copies its experiments there and writes a group file of the same name listing the copies.
Files keep their permissions and modification times. Nothing existing is replaced; a partial copy
after an error is removed.
  -V   print er's version
`

const mvUsage = `Usage: er mv [-V] experiment new.er          (also as: er_mv)
       er mv [-V] experiment|group... directory

Moves (renames) an experiment, with its subexperiments, to a new name ending in .er, or moves
experiments into an existing directory under their own names; across file systems it copies and
then removes the original. A group (NAME.erg) moved into a directory moves its experiments there
and the group file with them, its lines rewritten to the new names. Nothing existing is replaced.
  -V   print er's version
`

// options parses single-letter flags (clustered as in -fq) before the operands; "--" ends them.
// allowed lists the letters the command takes. It returns the letters set and the operands.
func options(args []string, allowed string) (map[byte]bool, []string, error) {
	set := map[byte]bool{}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			set['h'] = true
			continue
		}
		if a == "--version" {
			set['V'] = true
			continue
		}
		for j := 1; j < len(a); j++ {
			if !strings.ContainsRune(allowed, rune(a[j])) {
				return nil, nil, fmt.Errorf("unknown option %q", a)
			}
			set[a[j]] = true
		}
	}
	return set, args[i:], nil
}

// RmMain is er rm (er_rm): it removes experiments and experiment groups. It returns the exit code:
// 0 when everything was removed (or -f), 1 when something was not, 2 for a usage error.
func RmMain(args []string, stdout, stderr io.Writer) int {
	opt, paths, err := options(args, "fqV")
	if err != nil {
		fmt.Fprintf(stderr, "er rm: %v\n\n%s", err, rmUsage)
		return 2
	}
	if opt['h'] {
		fmt.Fprint(stdout, rmUsage)
		return 0
	}
	if opt['V'] {
		fmt.Fprintln(stdout, version.String())
	}
	if len(paths) == 0 {
		if !opt['V'] {
			fmt.Fprint(stdout, rmUsage)
		}
		return 0
	}
	r := remover{force: opt['f'], quiet: opt['q'], stdout: stdout, stderr: stderr}
	for _, p := range paths {
		r.remove(p)
	}
	if r.failed && !r.force {
		return 1
	}
	return 0
}

type remover struct {
	force, quiet   bool
	stdout, stderr io.Writer
	failed         bool
}

func (r *remover) errorf(format string, args ...any) {
	r.failed = true
	if !r.force {
		fmt.Fprintf(r.stderr, "er rm: "+format+"\n", args...)
	}
}

func (r *remover) said(format string, args ...any) {
	if !r.quiet {
		fmt.Fprintf(r.stdout, format+"\n", args...)
	}
}

// remove removes one operand: an experiment or a group.
func (r *remover) remove(path string) {
	path = filepath.Clean(path)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.errorf("%s: no such experiment or experiment group", path)
		return
	case err != nil:
		r.errorf("%v", err)
		return
	case fi.Mode().IsRegular():
		r.removeGroup(path)
		return
	}
	if err := checkExperiment(path, false, r.force); err != nil {
		if fi.Mode().IsDir() && !experimentName(path) {
			err = fmt.Errorf("%s: not an experiment: an experiment is a directory whose name ends in %s", path, ExperimentSuffix)
		}
		var sub *subexperimentError
		if errors.As(err, &sub) {
			err = fmt.Errorf("%w; remove %s with it, or use -f to remove %s alone", err, sub.founder, sub.path)
		}
		r.errorf("%v; nothing removed", err)
		return
	}
	if err := removeTree(path); err != nil {
		r.errorf("%s: %v", path, err)
		return
	}
	r.said("removed experiment %s", path)
}

// removeGroup removes a group file's experiments and then the file. Without -f, a group with a line
// that names no removable experiment is left whole.
func (r *remover) removeGroup(path string) {
	if !strings.HasSuffix(path, GroupSuffix) {
		r.errorf("%s: not an experiment or experiment group: an experiment is a directory NAME%s, a group a file NAME%s",
			path, ExperimentSuffix, GroupSuffix)
		return
	}
	entries, err := parseGroup(path)
	if err != nil {
		r.errorf("%v; nothing removed", err)
		return
	}
	var members []string
	var problems []string
	seen := map[string]bool{}
	for _, e := range entries {
		if err := checkExperiment(e.path, false, r.force); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v", path, e.line, err))
			continue
		}
		if key := sameFileKey(e.path); !seen[key] {
			seen[key] = true
			members = append(members, e.path)
		}
	}
	if len(problems) > 0 && !r.force {
		for _, p := range problems {
			r.errorf("%s", p)
		}
		r.errorf("%s: the group and its experiments were not removed; fix the lines above, or use -f to remove what is there", path)
		return
	}
	n := 0
	for _, m := range members {
		if _, err := os.Lstat(m); errors.Is(err, fs.ErrNotExist) {
			continue // inside a member removed before it
		}
		if err := removeTree(m); err != nil {
			r.errorf("%s: %v; the group file %s is kept", m, err, path)
			return
		}
		r.said("removed experiment %s", m)
		n++
	}
	if err := os.Remove(path); err != nil {
		r.errorf("%v", err)
		return
	}
	r.said("removed experiment group %s (%d experiment%s)", path, n, plural(n))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// CpMain is er cp (er_cp): it copies experiments. It returns the exit code: 0 on success, 1 when
// something was not copied, 2 for a usage error.
func CpMain(args []string, stdout, stderr io.Writer) int {
	return transferMain("cp", cpUsage, args, stdout, stderr)
}

// MvMain is er mv (er_mv): it moves experiments. It returns the exit code: 0 on success, 1 when
// something was not moved, 2 for a usage error.
func MvMain(args []string, stdout, stderr io.Writer) int {
	return transferMain("mv", mvUsage, args, stdout, stderr)
}

// job is one experiment to copy or move.
type job struct{ src, dst string }

// groupJob is a group copied or moved into a directory with its experiments.
type groupJob struct {
	src, dst string
	entries  []groupEntry
	jobs     []job // one per entry, in order
}

func transferMain(cmd, usage string, args []string, stdout, stderr io.Writer) int {
	opt, paths, err := options(args, "V")
	if err != nil {
		fmt.Fprintf(stderr, "er %s: %v\n\n%s", cmd, err, usage)
		return 2
	}
	if opt['h'] {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if opt['V'] {
		fmt.Fprintln(stdout, version.String())
	}
	switch len(paths) {
	case 0:
		if !opt['V'] {
			fmt.Fprint(stdout, usage)
		}
		return 0
	case 1:
		fmt.Fprintf(stderr, "er %s: %s: no destination given\n\n%s", cmd, paths[0], usage)
		return 2
	}
	move := cmd == "mv"
	fail := func(err error) int {
		fmt.Fprintf(stderr, "er %s: %v\n", cmd, err)
		return 1
	}
	for i := range paths {
		paths[i] = filepath.Clean(paths[i])
	}
	srcs, dest := paths[:len(paths)-1], paths[len(paths)-1]
	destInfo, destErr := os.Stat(dest)
	intoDir := destErr == nil && destInfo.IsDir() && !IsExperiment(dest)

	if !intoDir {
		switch {
		case len(srcs) > 1:
			if destErr == nil {
				return fail(fmt.Errorf("%s is not a directory: to %s several experiments, the last argument must be an existing directory", dest, cmd))
			}
			return fail(fmt.Errorf("%s: no such directory: to %s several experiments, the last argument must be an existing directory", dest, cmd))
		case IsGroup(srcs[0]):
			return fail(fmt.Errorf("%s is an experiment group: a group is %sed into a directory with its experiments (er %s %s DIRECTORY)",
				srcs[0], verb(cmd), cmd, srcs[0]))
		}
		if err := checkSource(srcs[0], move); err != nil {
			return fail(err)
		}
		if err := checkDestination(srcs[0], dest); err != nil {
			return fail(err)
		}
		if err := transfer(job{srcs[0], dest}, move); err != nil {
			return fail(err)
		}
		return 0
	}

	// Into a directory: check everything first, so that nothing is done when any of it cannot be.
	var jobs []job
	var groups []*groupJob
	var problems []string
	targets := map[string]string{} // destination -> source
	plan := func(src, dst string) bool {
		if err := checkSource(src, move); err != nil {
			problems = append(problems, err.Error())
			return false
		}
		if err := checkDestination(src, dst); err != nil {
			problems = append(problems, err.Error())
			return false
		}
		if other, dup := targets[dst]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s would both be %s", other, src, dst))
			return false
		}
		targets[dst] = src
		return true
	}
	for _, src := range srcs {
		dst := filepath.Join(dest, filepath.Base(src))
		if fi, err := os.Stat(src); err == nil && fi.Mode().IsRegular() && strings.HasSuffix(src, GroupSuffix) {
			g, err := planGroup(src, dst)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if _, err := os.Lstat(dst); err == nil {
				problems = append(problems, fmt.Sprintf("%s already exists; it is not replaced: remove it first", dst))
			} else if other, dup := targets[dst]; dup {
				problems = append(problems, fmt.Sprintf("%s and %s would both be %s", other, src, dst))
			}
			targets[dst] = src
			for _, e := range g.entries {
				if !plan(e.path, filepath.Join(dest, filepath.Base(e.path))) {
					problems[len(problems)-1] = fmt.Sprintf("%s:%d: %s", src, e.line, problems[len(problems)-1])
				}
				g.jobs = append(g.jobs, job{e.path, filepath.Join(dest, filepath.Base(e.path))})
			}
			groups = append(groups, g)
			continue
		}
		if plan(src, dst) {
			jobs = append(jobs, job{src, dst})
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "er %s: %s\n", cmd, p)
		}
		fmt.Fprintf(stderr, "er %s: nothing was %s\n", cmd, pastTense(cmd))
		return 1
	}
	code := 0
	for _, j := range jobs {
		if err := transfer(j, move); err != nil {
			code = fail(err)
		}
	}
	for _, g := range groups {
		if err := transferGroup(g, move); err != nil {
			code = fail(err)
		}
	}
	return code
}

func verb(cmd string) string {
	if cmd == "mv" {
		return "mov"
	}
	return "copi"
}

func pastTense(cmd string) string {
	if cmd == "mv" {
		return "moved"
	}
	return "copied"
}

// checkSource checks an experiment to copy (a link to one is followed) or move (a link is refused).
func checkSource(src string, move bool) error {
	err := checkExperiment(src, !move, false)
	var sub *subexperimentError
	if errors.As(err, &sub) {
		verb := "copy"
		if move {
			verb = "move"
		}
		err = fmt.Errorf("%w; %s %s instead, which holds it", err, verb, sub.founder)
	}
	return err
}

func transfer(j job, move bool) error {
	if move {
		return moveExperiment(j.src, j.dst)
	}
	return copyExperiment(j.src, j.dst)
}

// planGroup reads the group src to be copied or moved to dst (in another directory).
func planGroup(src, dst string) (*groupJob, error) {
	entries, err := parseGroup(src)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if err := checkMember(src, e); err != nil {
			return nil, err
		}
	}
	return &groupJob{src: src, dst: dst, entries: entries}, nil
}

// transferGroup copies or moves a group's experiments and writes the group file at its destination,
// each experiment line rewritten to the experiment's new name. It is all or nothing: after an error
// the experiments already copied are removed, or those already moved are moved back.
func transferGroup(g *groupJob, move bool) error {
	var done []job
	undo := func(err error) error {
		for i := len(done) - 1; i >= 0; i-- {
			j := done[i]
			var uerr error
			if move {
				uerr = moveExperiment(j.dst, j.src)
			} else {
				uerr = removeTree(j.dst)
			}
			if uerr != nil {
				return fmt.Errorf("%w; undoing it failed too: %v", err, uerr)
			}
		}
		return fmt.Errorf("%w; nothing of group %s was %s", err, g.src, map[bool]string{true: "moved", false: "copied"}[move])
	}
	for _, j := range g.jobs {
		if err := transfer(j, move); err != nil {
			return undo(err)
		}
		done = append(done, j)
	}
	data, err := regfile.ReadFile(g.src, maxGroupSize, "a group file")
	if err != nil {
		return undo(err)
	}
	fi, err := os.Stat(g.src)
	if err != nil {
		return undo(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, e := range g.entries {
		lines[e.line-1] = filepath.Base(g.jobs[i].dst)
	}
	f, err := os.OpenFile(g.dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return undo(err)
	}
	_, err = f.WriteString(strings.Join(lines, "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(g.dst)
		return undo(err)
	}
	if move {
		if err := os.Remove(g.src); err != nil {
			return fmt.Errorf("group %s was moved to %s, but the old group file could not be removed: %w", g.src, g.dst, err)
		}
	}
	return nil
}
