package experiment

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Descendants lists the subexperiments of the founder experiment dir: the directories _*.er in it
// (seed 003: _f1.er, _f3_x1.er, _C1.er, M_r1.er for MPI ranks), in lineage order (_f2 before
// _f10, a process before its descendants). Their paths are dir joined with the name.
func Descendants(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() && strings.HasSuffix(n, ".er") && (strings.HasPrefix(n, "_") || strings.HasPrefix(n, "M_r")) {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return lineageLess(names[i], names[j]) })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out, nil
}

// lineageLess orders subexperiment names by their lineage steps, comparing the numbers as numbers.
func lineageLess(a, b string) bool {
	as := strings.Split(strings.TrimSuffix(a, ".er"), "_")
	bs := strings.Split(strings.TrimSuffix(b, ".er"), "_")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		pa, na := splitStep(as[i])
		pb, nb := splitStep(bs[i])
		if pa != pb {
			return pa < pb
		}
		return na < nb
	}
	return len(as) < len(bs)
}

// splitStep splits a lineage step such as "f12" into its letters and number.
func splitStep(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}

// IsSubexperiment reports whether dir is a descendant's subexperiment inside a founder experiment.
func IsSubexperiment(dir string) bool {
	base := filepath.Base(filepath.Clean(dir))
	return (strings.HasPrefix(base, "_") || strings.HasPrefix(base, "M_r")) && strings.HasSuffix(base, ".er") &&
		strings.HasSuffix(filepath.Dir(filepath.Clean(dir)), ".er")
}
