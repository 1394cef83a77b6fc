package experiment

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// javaRec builds a Java record of kind: the fixed part fixed (the fields after the 16-byte prefix),
// then tail, padded to 8 bytes.
func javaRec(kind uint8, tid uint32, time uint64, fixed, tail []byte) []byte {
	return rec(kind, 0, tid, time, string(append(append([]byte{}, fixed...), tail...)))
}

func javaMethodRec(tid uint32, time, id, vm, code uint64, native bool, lines [][2]uint32, class, name, sig, src string) []byte {
	f := binary.LittleEndian.AppendUint64(nil, id)
	f = binary.LittleEndian.AppendUint64(f, vm)
	f = binary.LittleEndian.AppendUint64(f, code)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(lines)))
	flags := uint32(0)
	if native {
		flags = 1
	}
	f = binary.LittleEndian.AppendUint32(f, flags)
	for _, s := range []string{class, name, sig, src} {
		f = binary.LittleEndian.AppendUint16(f, uint16(len(s)))
	}
	var t []byte
	for _, l := range lines {
		t = binary.LittleEndian.AppendUint32(t, l[0])
		t = binary.LittleEndian.AppendUint32(t, l[1])
	}
	t = append(t, class+name+sig+src...)
	return javaRec(recJavaMethod, tid, time, f, t)
}

func javaCodeRec(tid uint32, time, method, addr uint64, size uint32) []byte {
	return rec(recJavaCode, 0, tid, time, method, addr, size, uint32(0))
}

// javaPCsRec: pcs are (offset, frames of (jmethodID, bci)).
type javaTestPC struct {
	off    uint32
	frames [][2]uint64
}

func javaPCsRec(tid uint32, time, addr uint64, pcs []javaTestPC) []byte {
	f := binary.LittleEndian.AppendUint64(nil, addr)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(pcs)))
	f = binary.LittleEndian.AppendUint32(f, 0)
	var t []byte
	for _, pc := range pcs {
		t = binary.LittleEndian.AppendUint32(t, pc.off)
		t = binary.LittleEndian.AppendUint32(t, uint32(len(pc.frames)))
		for _, fr := range pc.frames {
			t = binary.LittleEndian.AppendUint64(t, fr[0])
			t = binary.LittleEndian.AppendUint64(t, uint64(uint32(int32(fr[1]))))
		}
	}
	return javaRec(recJavaPCs, tid, time, f, t)
}

func javaBytesRec(tid uint32, time, addr uint64, off uint32, b []byte) []byte {
	return rec(recJavaBytes, 0, tid, time, addr, off, uint32(len(b)), string(b))
}

func javaStubRec(tid uint32, time, addr uint64, size uint32, name string) []byte {
	return rec(recJavaStub, 0, tid, time, addr, size, uint32(len(name)), name)
}

func javaBytecodesRec(tid uint32, time, method uint64, off uint32, b []byte) []byte {
	return rec(recJavaBytecodes, 0, tid, time, method, off, uint32(len(b)), string(b))
}

func javaThreadRec(tid uint32, time uint64, flags uint32, name string) []byte {
	return rec(recJavaThread, 0, tid, time, uint32(len(name)), flags, name)
}

func javaUnloadRec(tid uint32, time, method, addr uint64) []byte {
	return rec(recJavaUnload, 0, tid, time, method, addr)
}

// javaTestTrace is a JVM's trace: two methods (one inlined into the other's compiled code, which is
// recorded before the inlined method is), the interpreter, the code's bytes in two parts, a replayed
// copy of the code, its unloading, a method's bytecode in two parts, threads, and one malformed
// record of each kind.
func javaTestTrace() []byte {
	return traceFile(fileJava, 42, 0, base, 4096,
		[][]byte{
			javaStubRec(7, base+1, 0x7000, 0x100, JavaInterpName),
			javaThreadRec(7, base+2, 0, "main"),
			javaThreadRec(9, base+3, JavaThreadDaemon|JavaThreadSystem, "Reference Handler"),
			javaMethodRec(7, base+10, 0xa1, 0x5000, 0x6000, false, [][2]uint32{{8, 12}, {0, 10}, {0x10000, 99}}, "LHot$Inner;", "alpha", "(J[Ljava/lang/String;)D", "Hot.java"),
			javaCodeRec(7, base+20, 0xa1, 0x9000, 0x40),
			javaPCsRec(7, base+20, 0x9000, []javaTestPC{{0x20, [][2]uint64{{0xa2, 3}, {0xa1, 8}}}, {0x8, [][2]uint64{{0xa1, 0}}}}),
			javaBytesRec(7, base+20, 0x9000, 0, []byte{0x55, 0x48}),
		},
		[][]byte{
			javaBytesRec(7, base+21, 0x9000, 2, []byte{0x89, 0xe5}),
			javaBytecodesRec(8, base+22, 0xa1, 1, []byte{0xac}), // alpha's bytecode, its second part first
			javaBytecodesRec(8, base+22, 0xa1, 0, []byte{0x03}),
			javaBytecodesRec(8, base+22, 0xa2, 65535, []byte{0}), // past the JVM's bound
			javaMethodRec(7, base+30, 0xa2, 0, 0, true, nil, "Ljava/lang/Math;", "sqrt", "(D)D", ""),
			javaCodeRec(8, base+40, 0xa1, 0x9000, 0x40), // replayed: kept once
			javaPCsRec(8, base+40, 0x9000, []javaTestPC{{0x30, [][2]uint64{{0xa1, 9}}}}),
			javaMethodRec(8, base+41, 0xa1, 0x5000, 0x6000, false, nil, "LHot$Inner;", "alpha", "(J[Ljava/lang/String;)D", "Hot.java"),
			javaThreadRec(7, base+50, 0, "DestroyJavaVM"), // a second name: the first is kept
			javaUnloadRec(7, base+900, 0xa1, 0x9000),
			javaPCsRec(8, base+901, 0xdead, nil),                  // of no code
			javaBytesRec(7, base+902, 0x9000, 0x3f, []byte{1, 2}), // past the code's end
			javaCodeRec(8, base+903, 0xa1, 0x9000, 0),             // no size
			rec(recJavaStub, 0, 8, base+904, uint64(0x7100)),      // short
			rec(recJavaThread, 0, 8, base+1, uint32(1000), uint32(0), "x"),
			javaThreadRec(10, base-1, 0, "before"), // before the library started
		})
}

// TestReadJava: the agent's records are read into d.Java (methods with their lines and names as Java
// writes them, compiled code with the frames at each PC and its bytes, stubs, threads), their code
// becomes mappings of dynamic functions and each method a symbolic one; records that cannot be
// read are counted in a warning, not read.
func TestReadJava(t *testing.T) {
	dir := writeTraceExperiment(t)
	if err := os.WriteFile(filepath.Join(dir, JavaTraceFile), javaTestTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := d.Java
	if j == nil || j.Pid != 42 || len(j.Methods) != 2 || len(j.Codes) != 1 || len(j.Stubs) != 1 {
		t.Fatalf("Java data %+v", j)
	}
	a, m := j.Methods[0], j.Methods[1]
	if a.Title() != "Hot$Inner.alpha(long, java.lang.String[])" || a.Source != "Hot.java" || a.VM != 0x5000 || a.Code != 0x6000 || a.Native {
		t.Errorf("method 0 %+v: %q", a, a.Title())
	}
	if want := []PosLine{{0, 10}, {8, 12}}; !reflect.DeepEqual(a.Lines, want) {
		t.Errorf("lines %v, want %v (sorted, the index past 64 Ki left out)", a.Lines, want)
	}
	if a.LineAt(-1) != 10 || a.LineAt(7) != 10 || a.LineAt(8) != 12 || a.LineAt(500) != 12 || m.LineAt(3) != 0 {
		t.Errorf("lines at -1, 7, 8, 500: %d %d %d %d; of a native method %d", a.LineAt(-1), a.LineAt(7), a.LineAt(8), a.LineAt(500), m.LineAt(3))
	}
	if !reflect.DeepEqual(a.Bytecode, []byte{0x03, 0xac}) || m.Bytecode != nil {
		t.Errorf("bytecode %x, of the native method %x; want 03ac (its two parts), none", a.Bytecode, m.Bytecode)
	}
	if m.Title() != "java.lang.Math.sqrt(double)" || !m.Native {
		t.Errorf("method 1 %+v", m)
	}
	if j.ByID[0xa1] != 0 || j.ByID[0xa2] != 1 || j.ByVM[0x5000] != 0 || len(j.ByVM) != 1 {
		t.Errorf("by id %v, by Method* %v", j.ByID, j.ByVM)
	}
	c := j.Codes[0]
	if c.Method != 0 || c.Addr != 0x9000 || c.Size != 0x40 || c.Load != 20 || c.Unload != 900 {
		t.Errorf("code %+v", c)
	}
	if !reflect.DeepEqual(c.Bytes[:4], []byte{0x55, 0x48, 0x89, 0xe5}) || len(c.Bytes) != 0x40 {
		t.Errorf("code bytes %x", c.Bytes)
	}
	// The PCs sorted; the inlined method's frame resolved though its method came after; the
	// replayed copy's PCs not added.
	want := []JavaPC{{0x8, []JavaFrame{{0, 0}}}, {0x20, []JavaFrame{{1, 3}, {0, 8}}}}
	if !reflect.DeepEqual(c.PCs, want) {
		t.Errorf("PCs %+v, want %+v", c.PCs, want)
	}
	if f := c.FramesAt(0x9); !reflect.DeepEqual(f, want[1].Frames) {
		t.Errorf("frames at 0x9: %+v", f)
	}
	if f := c.FramesAt(0x21); f != nil {
		t.Errorf("frames past the last PC: %+v", f)
	}
	if j.Interp != [2]uint64{0x7000, 0x7100} || j.Stubs[0].Load != 1 {
		t.Errorf("interpreter %x, stub %+v", j.Interp, j.Stubs[0])
	}
	if j.Names[7] != "main" || j.Names[9] != "Reference Handler" || j.Threads[9] != JavaThreadDaemon|JavaThreadSystem || len(j.Threads) != 2 {
		t.Errorf("threads %v %v", j.Threads, j.Names)
	}
	funcs := map[string]Mapping{}
	for _, mp := range d.Mappings {
		if mp.Pid == 42 && (mp.Path == JavaCodePath || mp.Path == JavaStubPath || mp.Path == JavaMethodPath) {
			funcs[mp.Path+" "+mp.Func] = mp
		}
	}
	for _, k := range []string{JavaCodePath + " Hot$Inner.alpha(long, java.lang.String[])", JavaStubPath + " " + JavaInterpName,
		JavaMethodPath + " java.lang.Math.sqrt(double)", JavaStubPath + " Hot$Inner.alpha(long, java.lang.String[]) [interpreted]"} {
		if _, ok := funcs[k]; !ok {
			t.Errorf("no mapping %q in %v", k, funcs)
		}
	}
	if mp := funcs[JavaCodePath+" Hot$Inner.alpha(long, java.lang.String[])"]; mp.Start != 0x9000 || mp.End != 0x9040 || mp.LoadTime != 20 || mp.UnloadTime != 900 {
		t.Errorf("the compiled method's mapping %+v", mp)
	}
	all := strings.Join(d.Warnings, "\n")
	if !strings.Contains(all, JavaTraceFile+": 6 malformed") {
		t.Errorf("warnings %q: want the 6 malformed records of %s counted", all, JavaTraceFile)
	}
}

// TestJavaFiles: the JAVA_CLASSES file lists the classes with their methods (how many compiled
// instances each had); map.xml's records of the compiled code and stubs (JavaMapRecords) are
// dropped by the reader, which makes them again from the javatrace file, so an experiment with
// them reads as one without.
func TestJavaFiles(t *testing.T) {
	dir := writeTraceExperiment(t)
	if err := os.WriteFile(filepath.Join(dir, JavaTraceFile), javaTestTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := ReadJava(dir)
	if err != nil || j == nil || len(j.Methods) != 2 {
		t.Fatalf("ReadJava: %+v, %v", j, err)
	}
	classes := string(EncodeJavaClasses(j))
	for _, want := range []string{`<class name="Hot$Inner" source="Hot.java">`, `<method name="alpha" signature="(J[Ljava/lang/String;)D" compiled="1"></method>`,
		`<class name="java.lang.Math">`, `<method name="sqrt" signature="(D)D" native="true"></method>`} {
		if !strings.Contains(classes, want) {
			t.Errorf("JAVA_CLASSES has no %s:\n%s", want, classes)
		}
	}
	if strings.Index(classes, "Hot$Inner") > strings.Index(classes, "java.lang.Math") {
		t.Errorf("classes not sorted:\n%s", classes)
	}
	recs := JavaMapRecords(j)
	if len(recs) != 2 || recs[0].Path != JavaStubPath || recs[1].Path != JavaCodePath || recs[1].Func != "Hot$Inner.alpha(long, java.lang.String[])" {
		t.Fatalf("map records %+v: want the interpreter stub and alpha's code", recs)
	}
	before, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MapFile), encodeMap(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.Mappings, before.Mappings) {
		t.Errorf("with map.xml's Java records: mappings\n%+v\nwant\n%+v", after.Mappings, before.Mappings)
	}
}

// TestJavaNames: signatures in Java's own words.
func TestJavaNames(t *testing.T) {
	for sig, want := range map[string]string{
		"()V":                       "",
		"(IZ[[BLjava/util/Map;S)V":  "int, boolean, byte[][], java.util.Map, short",
		"(CFJ)D":                    "char, float, long",
		"([Ljava/lang/String;":      "java.lang.String[]",
		"(Ljava/lang/String)V":      "", // no ';'
		"(Q)V":                      "", // no such type
		"(I[":                       "int",
		"(Lcom/x/Outer$Inner;[J)[I": "com.x.Outer$Inner, long[]",
	} {
		if got := strings.Join(javaParams(sig), ", "); got != want {
			t.Errorf("%s: %q, want %q", sig, got, want)
		}
	}
	for sig, want := range map[string]string{"Ljava/lang/String;": "java.lang.String", "[I": "int[]", "Hot": "Hot", "a/b": "a.b"} {
		if got := javaClassName(sig); got != want {
			t.Errorf("class %s: %q, want %q", sig, got, want)
		}
	}
}

// TestJavaInterpWords: an interpreter frame's words come back from their frames, told apart from
// each other and from code addresses.
func TestJavaInterpWords(t *testing.T) {
	for _, c := range []struct {
		frame uint64
		word  uint64
		bcp   bool
	}{{JavaInterpMethod(0x7f12345678), 0x7f12345678, false}, {JavaInterpBCP(0x7f00000010), 0x7f00000010, true}} {
		w, bcp, ok := JavaInterpWord(c.frame)
		if !ok || w != c.word || bcp != c.bcp {
			t.Errorf("%#x: %#x %v %v, want %#x %v", c.frame, w, bcp, ok, c.word, c.bcp)
		}
	}
	if _, _, ok := JavaInterpWord(0x7f12345678); ok {
		t.Error("a code address read as an interpreter frame's word")
	}
}
