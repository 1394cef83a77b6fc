package tracedef

import "testing"

// TestDefinitionConsistent: no name is declared twice on either side, no enum has two members of
// one value, and every field the reader reads has a Go name that no other constant has.
func TestDefinitionConsistent(t *testing.T) {
	for _, d := range Defs {
		consistent(t, d)
	}
}

func consistent(t *testing.T, d *Def) {
	cNames, goNames := map[string]bool{}, map[string]bool{}
	add := func(c, g string) {
		if cNames[c] {
			t.Errorf("C name %s twice", c)
		}
		cNames[c] = true
		if g == "" {
			return
		}
		if goNames[g] {
			t.Errorf("Go name %s twice", g)
		}
		goNames[g] = true
	}
	for _, s := range append(append([]Define{}, d.Strings...), d.Defines...) {
		add(s.C, s.Go)
	}
	for _, e := range d.Enums {
		add("enum "+e.C, "")
		seen := map[int]string{}
		for _, m := range e.Members {
			add(m.C, m.Go)
			if other, ok := seen[m.Value]; ok {
				t.Errorf("enum %s: %s and %s are both %d", e.C, other, m.C, m.Value)
			}
			seen[m.Value] = m.C
		}
	}
	for _, s := range d.Structs {
		add("struct "+s.C, s.Go)
		fields := map[string]bool{}
		for _, f := range s.Fields {
			if fields[f.C] {
				t.Errorf("struct %s: field %s twice", s.C, f.C)
			}
			fields[f.C] = true
			if f.Go != "" {
				add(s.C+"."+f.C, f.Go)
			}
		}
	}
}
