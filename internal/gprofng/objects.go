package gprofng

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/regfile"
)

// readArchives describes the load objects of d's mappings into d.Archives, so that their
// functions are named as they were when gprofng recorded: from the copy of each object that
// gprofng's archiving (gp-archive, run at the end of `gprofng collect app`) kept in archives/
// (named after the object's base name, an underscore and a hash of its directory), else from the
// object itself; the vdso from the functions map.xml lists. It returns what it could not describe.
func readArchives(d *experiment.Data, dir string, m *Map) (warnings []string) {
	adir := filepath.Join(dir, archives)
	names := dirEntries(adir)
	logged := archiveLog(filepath.Join(dir, "archive.log"))
	seen := map[string]bool{}
	for _, mp := range d.Mappings {
		p := mp.Path
		if seen[p] {
			continue
		}
		seen[p] = true
		if p == "[vdso]" {
			if a := vdsoArchive(d.Mappings, m.DynFuncs); a != nil {
				d.Archives[p] = a
			}
			continue
		}
		if !strings.HasPrefix(p, "/") {
			continue
		}
		file := p
		if c := findCopy(names, p, logged); c != "" {
			file = filepath.Join(adir, c)
		}
		a, err := archive.Build(file)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: no symbols for %s: %v; its functions are shown as <static>", archives, p, err))
			continue
		}
		cp := *a
		cp.Path = p
		d.Archives[p] = &cp
	}
	return warnings
}

// findCopy returns the name of the copy of the load object at path in the archives/ names: the
// one named after its base name, an underscore and a hash, or, where several are, the one that
// archive.log says it copied there.
func findCopy(names []string, path string, logged map[string]string) string {
	base := filepath.Base(path)
	var found []string
	for _, n := range names {
		suffix, ok := strings.CutPrefix(n, base+"_")
		if ok && suffix != "" && !strings.ContainsAny(suffix, "./") {
			found = append(found, n)
		}
	}
	switch {
	case len(found) == 1:
		return found[0]
	case len(found) > 1 && slices.Contains(found, logged[path]):
		return logged[path]
	}
	return ""
}

// archiveLog reads gp-archive's log: which object it copied to which file of archives/ ("Copying
// `/usr/lib/x86_64-linux-gnu/libc.so.6'  to `/tmp/x.er/archives/libc.so.6_dnWuQRcLhw9'").
func archiveLog(file string) map[string]string {
	b, err := regfile.ReadFile(file, 16<<20, "archive.log")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "Copying `")
		if !ok {
			continue
		}
		src, rest, ok := strings.Cut(line, "'")
		if !ok {
			continue
		}
		_, dst, ok := strings.Cut(rest, "`")
		if !ok {
			continue
		}
		out[src] = filepath.Base(strings.TrimSuffix(dst, "'"))
	}
	return out
}

// vdsoArchive describes the vdso from the functions map.xml lists at their addresses: an image
// whose link-time addresses are offsets from the start of its mapping.
func vdsoArchive(maps []experiment.Mapping, funcs []DynFunc) *experiment.Archive {
	var start, size uint64
	for _, m := range maps {
		if m.Path == "[vdso]" {
			start, size = m.Start, m.End-m.Start
			break
		}
	}
	a := &experiment.Archive{Path: "[vdso]", Kind: "vdso", Segments: []experiment.Segment{{Filesz: size, Memsz: size}}}
	for _, f := range funcs {
		if f.Object == "[vdso]" && f.Vaddr >= start && f.Vaddr-start < size {
			a.Symbols = append(a.Symbols, experiment.Symbol{Name: f.Name, Addr: f.Vaddr - start, Size: f.Size})
		}
	}
	if len(a.Symbols) == 0 {
		return nil
	}
	sort.SliceStable(a.Symbols, func(i, j int) bool { return a.Symbols[i].Addr < a.Symbols[j].Addr })
	return a
}

// namer names the function at an address from the mappings and archives: what tells which
// function a traced event called (the collector's interposer, named as the function).
type namer struct {
	maps     []experiment.Mapping // sorted by Start
	archives map[string]*experiment.Archive
}

func newNamer(d *experiment.Data) *namer {
	maps := slices.Clone(d.Mappings)
	slices.SortFunc(maps, func(a, b experiment.Mapping) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	return &namer{maps: maps, archives: d.Archives}
}

// name returns the raw name of the function at pc, "" when unknown.
func (n *namer) name(pc uint64) string {
	i := sort.Search(len(n.maps), func(i int) bool { return n.maps[i].Start > pc }) - 1
	if i < 0 || pc >= n.maps[i].End {
		return ""
	}
	m := n.maps[i]
	a := n.archives[m.Path]
	if a == nil {
		return ""
	}
	off := pc - m.Start + m.Offset
	for _, s := range a.Segments {
		if off < s.Offset || off-s.Offset >= s.Filesz {
			continue
		}
		addr := off - s.Offset + s.Vaddr
		j := sort.Search(len(a.Symbols), func(j int) bool { return a.Symbols[j].Addr > addr }) - 1
		if j < 0 {
			return ""
		}
		sym := a.Symbols[j]
		if sym.Size > 0 && addr-sym.Addr >= sym.Size {
			return ""
		}
		return sym.Name
	}
	return ""
}
