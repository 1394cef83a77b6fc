package gprofng

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMap(t *testing.T) {
	file := filepath.Join(fixture(t, "heap"), mapFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, truncated, err := ParseMap(file, b)
	if err != nil || truncated {
		t.Fatalf("ParseMap: %v, truncated %v", err, truncated)
	}
	var code []Segment
	for _, s := range m.Segments {
		if s.Exec() && s.Name == "/tmp/gp/heap" {
			code = append(code, s)
		}
	}
	if len(m.Segments) != 31 || len(code) != 1 || code[0].Vaddr != 0x556C38FEE000 || code[0].Size != 4096 || code[0].Offset != 0x1000 {
		t.Errorf("%d segments; the program's code %+v", len(m.Segments), code)
	}
	if len(m.DynFuncs) != 6 || m.DynFuncs[0] != (DynFunc{"[vdso]", "__vdso_gettimeofday", 0x7F2322A6B810, 683}) {
		t.Errorf("dynfuncs %+v", m.DynFuncs)
	}
}

func TestParseMapUnmap(t *testing.T) {
	m, _, err := ParseMap("map.xml", []byte(`<event kind="map" object="segment" tstamp="1.0" vaddr="0x1000" size="4096" foffset="+0x0" modes="0x005" name="/lib/a.so"/>
<event kind="unmap" tstamp="2.5" vaddr="0x1000"/>
<event kind="map" object="function" tstamp="0.1" vaddr="0x9000" size="100" name="[vdso]"/>`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) != 2 || m.Segments[0].Unmap != 2.5e9 || m.Segments[0].Time != 1e9 || !m.Segments[1].Func || m.Segments[1].Unmap != -1 {
		t.Errorf("segments %+v", m.Segments)
	}
	if _, _, err := ParseMap("map.xml", []byte(`<event kind="map" object="segment" vaddr="zz"/>`)); err == nil || !strings.Contains(err.Error(), `vaddr="zz": not an address`) {
		t.Errorf("bad vaddr: %v", err)
	}
}

func FuzzParseMap(f *testing.F) {
	f.Add([]byte(`<event kind="map" object="segment" tstamp="1.0" vaddr="0x1000" size="4096" foffset="+0x0" modes="0x005" name="/lib/a.so"/><event kind="unmap" tstamp="2.5" vaddr="0x1000"/>`))
	f.Add([]byte(`<event kind="map" object="dynfunc" name="[vdso]" vaddr="0x00007F2322A6B810" size="683" funcname="__vdso_gettimeofday" />`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := ParseMap("map.xml", b)
		if err == nil && m == nil {
			t.Errorf("no error and no map")
		}
	})
}
