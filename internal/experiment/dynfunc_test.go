package experiment

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// dynFuncRec builds a collector_func_load record: lines are (offset, line).
func dynFuncRec(tid uint32, time, addr uint64, size uint32, lines [][2]uint32, name, alias, src string) []byte {
	f := binary.LittleEndian.AppendUint64(nil, addr)
	f = binary.LittleEndian.AppendUint32(f, size)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(lines)))
	for _, s := range []string{name, alias, src} {
		f = binary.LittleEndian.AppendUint16(f, uint16(len(s)))
	}
	f = binary.LittleEndian.AppendUint16(f, 0)
	for _, l := range lines {
		f = binary.LittleEndian.AppendUint32(f, l[0])
		f = binary.LittleEndian.AppendUint32(f, l[1])
	}
	f = append(f, name+alias+src...)
	return rec(recDynFunc, 0, tid, time, string(f))
}

func dynBytesRec(tid uint32, time, addr uint64, off uint32, b []byte) []byte {
	return rec(recDynBytes, 0, tid, time, addr, off, uint32(len(b)), string(b))
}

// dynTestStacks is a stacks file with two generated functions at one address, one after the other
// (the first's bytes in two parts, its line table with an entry out of order), and malformed records.
func dynTestStacks() []byte {
	return traceFile(fileStacks, 42, 0, base, 4096,
		[][]byte{
			dynFuncRec(7, base+10, 0x9000, 4, [][2]uint32{{0, 10}, {2, 11}, {1, 99}}, "jit_a", "a_alias", "a.s"),
			dynBytesRec(7, base+10, 0x9000, 0, []byte{0x55, 0x48}),
			dynBytesRec(7, base+10, 0x9000, 2, []byte{0x89, 0xe5}),
			rec(recDynUnload, 0, 7, base+50, uint64(0x9000)),
			dynFuncRec(7, base+60, 0x9000, 8, nil, "jit_b", "", ""),
		},
		[][]byte{
			dynBytesRec(7, base+61, 0x9000, 6, []byte{1, 2, 3}),       // past its end
			dynBytesRec(7, base+61, 0xa000, 0, []byte{1}),             // of no function
			dynFuncRec(7, base+62, 0xb000, 0, nil, "empty", "", ""),   // no size
			dynFuncRec(7, base+63, 0xb000, 8, nil, "", "", ""),        // no name
			dynFuncRec(7, base+64, 1<<63-4, 8, nil, "high", "", ""),   // not user space
			rec(recDynFunc, 0, 7, base+65, uint64(0xc000), uint32(8)), // short
			rec(recDynUnload, 0, 7, base+66, uint64(0xd000)),          // of no function: ignored
		})
}

func TestReadDynFuncs(t *testing.T) {
	dir := writeTraceExperiment(t)
	if err := os.WriteFile(filepath.Join(dir, TraceStacksFile), dynTestStacks(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []DynFunc{
		{Pid: 42, Addr: 0x9000, Size: 4, Name: "jit_a", Alias: "a_alias", Source: "a.s", Lines: []DynLine{{0, 10}, {2, 11}},
			Bytes: []byte{0x55, 0x48, 0x89, 0xe5}, Load: 10, Unload: 50},
		{Pid: 42, Addr: 0x9000, Size: 8, Name: "jit_b", Load: 60, Unload: -1},
	}
	if !reflect.DeepEqual(d.DynFuncs, want) {
		t.Fatalf("DynFuncs:\n%+v\nwant\n%+v", d.DynFuncs, want)
	}
	if a := &d.DynFuncs[0]; a.LineAt(0) != 10 || a.LineAt(1) != 10 || a.LineAt(3) != 11 || d.DynFuncs[1].LineAt(0) != 0 {
		t.Errorf("lines at 0, 1, 3: %d %d %d", a.LineAt(0), a.LineAt(1), a.LineAt(3))
	}
	var got []Mapping
	for _, m := range d.Mappings {
		if m.Path == DynamicPath {
			got = append(got, m)
		}
	}
	wantMaps := []Mapping{
		{Pid: 42, Start: 0x9000, End: 0x9004, Path: DynamicPath, Func: "jit_a", Source: "a.s", LoadTime: 10, UnloadTime: 50},
		{Pid: 42, Start: 0x9000, End: 0x9008, Path: DynamicPath, Func: "jit_b", LoadTime: 60, UnloadTime: -1},
	}
	if !reflect.DeepEqual(got, wantMaps) {
		t.Errorf("mappings:\n%+v\nwant\n%+v", got, wantMaps)
	}
	found := false
	for _, w := range d.Warnings {
		found = found || (strings.Contains(w, TraceStacksFile) && strings.Contains(w, "6 malformed"))
	}
	if !found {
		t.Errorf("no warning of the 6 malformed records: %q", d.Warnings)
	}
}

// TestDynText: the dyntext file er collect writes from a jitdump reads back as its functions, a
// reused address and an unloaded function included, their instructions in parts.
func TestDynText(t *testing.T) {
	big := make([]byte, 40<<10)
	for i := range big {
		big[i] = byte(i)
	}
	fs := []DynFunc{
		{Pid: 42, Addr: 0x1000, Size: 2, Name: "JS:~alpha x.js:1:1", Bytes: []byte{0x55, 0xc3}, Load: 10, Unload: 50},
		{Pid: 42, Addr: 0x1000, Size: 1, Name: "JS:*alpha x.js:1:1", Bytes: []byte{0xc3}, Load: 50, Unload: -1},
		{Pid: 42, Addr: 0x9000, Size: uint32(len(big)), Name: "big", Bytes: big, Load: 20, Unload: -1},
	}
	for i := 0; i < 3000; i++ { // more than a block of records
		fs = append(fs, DynFunc{Pid: 42, Addr: 0x100000 + uint64(i)*16, Size: 4, Name: "f", Bytes: []byte{1, 2, 3, 4}, Load: 30, Unload: -1})
	}
	dir := writeTraceExperiment(t)
	if err := os.WriteFile(filepath.Join(dir, DynTextFile), EncodeDynText(42, int64(base), fs), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]DynFunc{}
	for _, f := range d.DynFuncs {
		got[fmt.Sprintf("%s@%#x@%d", f.Name, f.Addr, f.Load)] = f
	}
	if len(d.DynFuncs) != len(fs) {
		t.Fatalf("%d functions, want %d", len(d.DynFuncs), len(fs))
	}
	for _, f := range fs {
		g, ok := got[fmt.Sprintf("%s@%#x@%d", f.Name, f.Addr, f.Load)]
		if !ok || !reflect.DeepEqual(g, f) {
			t.Errorf("%s at %#x: %+v, want %+v", f.Name, f.Addr, g, f)
			break
		}
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, DynTextFile) {
			t.Errorf("warning %q", w)
		}
	}
}
