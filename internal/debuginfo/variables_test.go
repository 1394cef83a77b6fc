package debuginfo

import (
	"debug/elf"
	"testing"
)

// TestVariables: the variables of testdata/vars.c at their symbol table's addresses, with their DWARF
// types' layouts; locals and declarations are not among them.
func TestVariables(t *testing.T) {
	bin := build(t, "", "vars", "gcc", "vars.c", "-O0", "-g")
	in, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := in.Variables()
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.Symbols()
	ef.Close()
	symAddr := map[string]uint64{}
	for _, s := range syms {
		symAddr[s.Name] = s.Value
	}
	got := map[string]Variable{}
	for i, v := range vars {
		got[v.Name] = v
		if i > 0 && vars[i-1].Addr > v.Addr {
			t.Errorf("variables not sorted by address: %s before %s", vars[i-1].Name, v.Name)
		}
	}
	for name, want := range map[string]struct {
		size uint64
		typ  string
	}{
		"counter": {4, "int"}, "table": {800, "double[100]"}, "records": {4 * 88, "struct outer[4]"},
		"message": {8, "*const char"}, "calls": {4, "int"},
	} {
		v, ok := got[name]
		if !ok {
			t.Errorf("no variable %s among %d", name, len(vars))
			continue
		}
		if v.Size != want.size || v.Type == nil || v.Type.Name != want.typ {
			t.Errorf("%s: size %d, type %+v; want %d, %s", name, v.Size, v.Type, want.size, want.typ)
		}
		sym := name
		if name == "calls" {
			sym = "calls.0"
		}
		if a, ok := symAddr[sym]; ok && a != v.Addr {
			t.Errorf("%s at %#x, the symbol table says %#x", name, v.Addr, a)
		}
	}
	for _, name := range []string{"local", "elsewhere", "i"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s is listed: not a variable at a fixed address of this object", name)
		}
	}
	// records[2].many[1].y: struct outer (88 bytes: tag 0, in 16, many 32, d 80), then struct inner (16: x 0, y 8).
	rec := got["records"].Type
	var path []string
	rec.Walk(2*88+32+1*16+8+3, func(st *DataType, m int) { path = append(path, st.Name+"."+st.Members[m].Name) })
	if want := []string{"struct outer.many", "struct inner.y"}; len(path) != 2 || path[0] != want[0] || path[1] != want[1] {
		t.Errorf("walk to records[2].many[1].y: %v, want %v", path, want)
	}
	path = nil
	rec.Walk(3*88+5, func(st *DataType, m int) { path = append(path, st.Name+"."+st.Members[m].Name) })
	if len(path) != 1 || path[0] != "struct outer.tag" {
		t.Errorf("walk to records[3].tag[5]: %v", path)
	}
}
