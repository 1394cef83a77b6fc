package experiment

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
)

// Java: the JVMTI agent's records of a JVM (preload/c/java.c), read from the javatrace file: its
// methods, the code it compiled for them (with the methods inlined at each PC and the
// instructions), the code it generated for itself (the interpreter, stubs) and its Java threads.
// The reader turns the compiled code and the stubs into mappings of dynamic functions (JavaCodePath,
// JavaStubPath: their PCs are named as the functions they are, in the machine view mode) and each
// method into a symbolic mapping (JavaMethodPath) that the Java view modes' frames resolve through
// (internal/analysis, java.go).

// The pseudo-objects of a JVM's code.
const (
	JavaCodePath   = "<JAVA_COMPILED_METHODS>" // the compiled methods, a dynamic function each
	JavaStubPath   = "<JVM-System>"            // the code the JVM generates for itself: the interpreter, adapters, stubs
	JavaMethodPath = "<Java>"                  // the Java methods, as the Java view modes show them
	JavaInterpName = "Interpreter"             // the JVM's interpreter, a stub
)

// Symbolic tables of the Java methods (SymbolicFrame's table): a method as the Java view modes show
// it, and its interpreted instance in the machine mode.
const (
	JavaTable       = 1
	JavaInterpTable = 2
)

// JavaData is what a JVM's agent recorded.
type JavaData struct {
	Pid     uint32
	Methods []JavaMethod      // in the order of their records; Method i is symbolic method i of JavaTable
	ByID    map[uint64]int32  // jmethodID -> index in Methods
	ByVM    map[uint64]int32  // the JVM's Method* -> index in Methods
	Codes   []JavaCode        // in load order
	Stubs   []JavaStub        // in load order
	Threads map[uint32]uint32 // Java threads: tid -> flags (JavaThreadDaemon, JavaThreadSystem)
	Names   map[uint32]string // the Java threads' names
	// Interp is the interpreter's code [Interp[0], Interp[1]); zero where none was recorded.
	Interp [2]uint64
}

// Java thread flags.
const (
	JavaThreadDaemon = 1
	JavaThreadSystem = 2 // a thread of the JVM's own (reference handler, finalizer, signal dispatcher)
)

// JavaMethod is a Java method.
type JavaMethod struct {
	ID     uint64 // jmethodID
	VM     uint64 // HotSpot's Method*, 0: unknown
	Code   uint64 // the address of its bytecodes, 0: unknown
	Class  string // "java.lang.String", "Hot$Inner"
	Name   string // "charAt", "<init>"
	Sig    string // "(I)C"
	Source string // "String.java"
	Lines  []PosLine
	Native bool
	// Bytecode is its bytecode, where the agent recorded it (for the methods compiled and inlined).
	Bytecode []byte
}

// maxBytecode is the most bytecode a method has (the class file format's code_length bound).
const maxBytecode = 65535

// Title is the method's name as Java users write it: "java.lang.String.charAt(int)".
func (m *JavaMethod) Title() string {
	return m.Class + "." + m.Name + "(" + strings.Join(javaParams(m.Sig), ", ") + ")"
}

// LineAt returns the source line of bytecode index bci, 0 where unknown.
func (m *JavaMethod) LineAt(bci int32) int {
	if bci < 0 {
		bci = 0
	}
	line := 0
	for _, l := range m.Lines {
		if int32(l.Pos) > bci {
			break
		}
		line = int(l.Line)
	}
	return line
}

// JavaCode is a compiled method: its code [Addr, Addr+Size) from Load to Unload (ns since the
// start; -1 while loaded).
type JavaCode struct {
	Method       int32 // index in Methods
	Addr         uint64
	Size         uint32
	Load, Unload int64
	PCs          []JavaPC // by Off
	Bytes        []byte   // its instructions (dyntext), nil where not recorded
}

// JavaPC is the frames at a PC of compiled code, innermost (the inlined method) first.
type JavaPC struct {
	Off    uint32
	Frames []JavaFrame
}

// JavaFrame is a method (index in Methods) at a bytecode index (-1: unknown).
type JavaFrame struct {
	Method int32
	BCI    int32
}

// FramesAt returns the frames at offset off of the code: those of the first PC with debug
// information at or after it (the code up to a PC is its), nil where none.
func (c *JavaCode) FramesAt(off uint32) []JavaFrame {
	i := sort.Search(len(c.PCs), func(i int) bool { return c.PCs[i].Off >= off })
	if i == len(c.PCs) {
		return nil
	}
	return c.PCs[i].Frames
}

// JavaStub is code the JVM generated for itself.
type JavaStub struct {
	Name  string
	Addr  uint64
	Size  uint32
	Load  int64
	Bytes []byte
}

// javaParams turns a method signature's parameters into Java's names: "(I[Ljava/lang/String;)V" ->
// ["int", "java.lang.String[]"].
func javaParams(sig string) []string {
	s, _, _ := strings.Cut(strings.TrimPrefix(sig, "("), ")")
	var out []string
	for s != "" {
		t, rest := javaType(s)
		if t == "" {
			break
		}
		out = append(out, t)
		s = rest
	}
	return out
}

// javaType reads one type descriptor from s.
func javaType(s string) (string, string) {
	dims := 0
	for dims < len(s) && s[dims] == '[' {
		dims++
	}
	s = s[dims:]
	if s == "" {
		return "", ""
	}
	var t string
	switch s[0] {
	case 'B':
		t = "byte"
	case 'C':
		t = "char"
	case 'D':
		t = "double"
	case 'F':
		t = "float"
	case 'I':
		t = "int"
	case 'J':
		t = "long"
	case 'S':
		t = "short"
	case 'Z':
		t = "boolean"
	case 'V':
		t = "void"
	case 'L':
		end := strings.IndexByte(s, ';')
		if end < 0 {
			return "", ""
		}
		t, s = strings.ReplaceAll(s[1:end], "/", "."), s[end:]
	default:
		return "", ""
	}
	return t + strings.Repeat("[]", dims), s[1:]
}

// javaClassName turns a class signature into its name: "Ljava/lang/String;" -> "java.lang.String".
func javaClassName(sig string) string {
	if strings.HasPrefix(sig, "L") && strings.HasSuffix(sig, ";") {
		return strings.ReplaceAll(sig[1:len(sig)-1], "/", ".")
	}
	if t, rest := javaType(sig); t != "" && rest == "" {
		return t
	}
	return strings.ReplaceAll(sig, "/", ".")
}

// readJava reads the Java trace tf into d.Java and the mappings of its code.
func (tr *traceReader) readJava(tf *traceScan, sk *skipped) (string, error) {
	h := &tf.h
	j := tr.d.Java
	if j == nil || j.Pid != h.pid {
		j = &JavaData{Pid: h.pid, ByID: map[uint64]int32{}, ByVM: map[uint64]int32{}, Threads: map[uint32]uint32{}, Names: map[uint32]string{}}
		tr.d.Java = j
	}
	type codeKey struct {
		tid  uint32
		addr uint64
	}
	cur := map[codeKey]int{}        // the code a thread's PCs and bytes records are of
	stubAt := map[uint64]int{}      // the stub whose bytes are recorded
	pending := map[uint64][]int32{} // frames' methods not known yet: resolved at the end
	type rawFrame struct {
		code, pc, frame int
		id              uint64
	}
	var unresolved []rawFrame
	bytecodes := map[uint64][]byte{} // by jmethodID
	w, err := tf.scan(func(r *traceRec) {
		size := sizeofRec + len(r.body)
		if r.time < h.startNS || r.time-h.startNS > 1<<62 {
			sk.out(r.off, "time %d ns, before the collector library started at %d ns", r.time, h.startNS)
			return
		}
		switch r.kind {
		case recJavaMethod:
			if size < sizeofRecJavaMethod {
				sk.malformed++
				return
			}
			nl := int(r.u32(recJavaMethodNLines))
			lens := []int{int(r.u16(recJavaMethodClassLen)), int(r.u16(recJavaMethodNameLen)), int(r.u16(recJavaMethodSigLen)), int(r.u16(recJavaMethodSrcLen))}
			need := sizeofRecJavaMethod + nl*sizeofJavaLine + lens[0] + lens[1] + lens[2] + lens[3]
			if nl > 1<<20 || need > size {
				sk.malformed++
				return
			}
			id := r.u64(recJavaMethodID)
			if _, ok := j.ByID[id]; ok {
				return // a method is recorded once; a full set of the agent's may repeat it
			}
			m := JavaMethod{ID: id, VM: r.u64(recJavaMethodVM), Code: r.u64(recJavaMethodCode), Native: r.u32(recJavaMethodFlags)&1 != 0}
			t := r.tail(sizeofRecJavaMethod)
			for i := 0; i < nl; i++ {
				bci, line := le.Uint32(t[i*sizeofJavaLine:]), le.Uint32(t[i*sizeofJavaLine+4:])
				if bci > 0xffff {
					continue
				}
				m.Lines = append(m.Lines, PosLine{Pos: uint16(bci), Line: line})
			}
			sort.SliceStable(m.Lines, func(a, b int) bool { return m.Lines[a].Pos < m.Lines[b].Pos })
			t = t[nl*sizeofJavaLine:]
			var strs [4]string
			for i, n := range lens {
				strs[i], t = string(t[:n]), t[n:]
			}
			m.Class, m.Name, m.Sig, m.Source = javaClassName(strs[0]), strs[1], strs[2], strs[3]
			idx := int32(len(j.Methods))
			j.Methods = append(j.Methods, m)
			j.ByID[id] = idx
			if m.VM != 0 {
				j.ByVM[m.VM] = idx
			}
		case recJavaCode:
			if size < sizeofRecJavaCode {
				sk.malformed++
				return
			}
			addr, n := r.u64(recJavaCodeAddr), r.u32(recJavaCodeSize)
			if n == 0 || addr+uint64(n) < addr {
				sk.malformed++
				return
			}
			id := r.u64(recJavaCodeMethod)
			c := JavaCode{Method: -1, Addr: addr, Size: n, Load: tr.t(r.time), Unload: -1}
			if i, ok := j.ByID[id]; ok {
				c.Method = i
			} else {
				pending[id] = append(pending[id], int32(len(j.Codes)))
			}
			// The agent replays the code compiled before it started: the same code, kept once.
			for k := len(j.Codes) - 1; k >= 0 && k >= len(j.Codes)-64; k-- {
				if o := &j.Codes[k]; o.Addr == addr && o.Size == n && o.Unload < 0 && (o.Method == c.Method || c.Method < 0) {
					cur[codeKey{r.tid, addr}] = -1 // its records are had already
					return
				}
			}
			cur[codeKey{r.tid, addr}] = len(j.Codes)
			j.Codes = append(j.Codes, c)
		case recJavaPCs:
			if size < sizeofRecJavaPCs {
				sk.malformed++
				return
			}
			ci, ok := cur[codeKey{r.tid, r.u64(recJavaPCsAddr)}]
			if !ok {
				sk.malformed++
				return
			}
			n := int(r.u32(recJavaPCsN))
			t := r.tail(sizeofRecJavaPCs)
			for i := 0; i < n; i++ {
				if len(t) < sizeofJavaPC {
					sk.malformed++
					return
				}
				off, depth := le.Uint32(t[javaPCOff:]), int(le.Uint32(t[javaPCDepth:]))
				t = t[sizeofJavaPC:]
				if depth < 0 || depth*sizeofJavaFrame > len(t) {
					sk.malformed++
					return
				}
				if ci < 0 {
					t = t[depth*sizeofJavaFrame:]
					continue
				}
				c := &j.Codes[ci]
				pc := JavaPC{Off: off, Frames: make([]JavaFrame, depth)}
				for d := 0; d < depth; d++ {
					id, bci := le.Uint64(t[javaFrameMethod:]), int32(le.Uint32(t[javaFrameBCI:]))
					t = t[sizeofJavaFrame:]
					pc.Frames[d] = JavaFrame{Method: -1, BCI: bci}
					if mi, ok := j.ByID[id]; ok {
						pc.Frames[d].Method = mi
					} else {
						unresolved = append(unresolved, rawFrame{ci, len(c.PCs), d, id})
					}
				}
				c.PCs = append(c.PCs, pc)
			}
		case recJavaBytes:
			if size < sizeofRecJavaBytes {
				sk.malformed++
				return
			}
			addr, off, n := r.u64(recJavaBytesAddr), int(r.u32(recJavaBytesOff)), int(r.u32(recJavaBytesN))
			t := r.tail(sizeofRecJavaBytes)
			if n > len(t) {
				sk.malformed++
				return
			}
			var dst *[]byte
			var total int
			if ci, ok := cur[codeKey{r.tid, addr}]; ok {
				if ci < 0 {
					return
				}
				dst, total = &j.Codes[ci].Bytes, int(j.Codes[ci].Size)
			} else if si, ok := stubAt[addr]; ok {
				dst, total = &j.Stubs[si].Bytes, int(j.Stubs[si].Size)
			} else {
				sk.malformed++
				return
			}
			if off+n > total || off < 0 {
				sk.malformed++
				return
			}
			if *dst == nil {
				*dst = make([]byte, total)
			}
			copy((*dst)[off:], t[:n])
		case recJavaUnload:
			if size < sizeofRecJavaUnload {
				sk.malformed++
				return
			}
			addr := r.u64(recJavaUnloadAddr)
			for k := len(j.Codes) - 1; k >= 0; k-- {
				if c := &j.Codes[k]; c.Addr == addr && c.Unload < 0 {
					c.Unload = tr.t(r.time)
					break
				}
			}
		case recJavaStub:
			if size < sizeofRecJavaStub {
				sk.malformed++
				return
			}
			n := int(r.u32(recJavaStubNameLen))
			t := r.tail(sizeofRecJavaStub)
			addr, sz := r.u64(recJavaStubAddr), r.u32(recJavaStubSize)
			if n > len(t) || addr+uint64(sz) < addr {
				sk.malformed++
				return
			}
			s := JavaStub{Name: string(t[:n]), Addr: addr, Size: sz, Load: tr.t(r.time)}
			if s.Name == JavaInterpName {
				j.Interp = [2]uint64{addr, addr + uint64(sz)}
			}
			stubAt[addr] = len(j.Stubs)
			j.Stubs = append(j.Stubs, s)
		case recJavaThread:
			if size < sizeofRecJavaThread {
				sk.malformed++
				return
			}
			n := int(r.u32(recJavaThreadNameLen))
			t := r.tail(sizeofRecJavaThread)
			if n > len(t) {
				sk.malformed++
				return
			}
			if _, ok := j.Threads[r.tid]; ok {
				return // its first name: the launcher's main thread ends as DestroyJavaVM
			}
			j.Threads[r.tid] = r.u32(recJavaThreadFlags)
			j.Names[r.tid] = string(t[:n])
		case recJavaBytecodes:
			if size < sizeofRecJavaBytecodes {
				sk.malformed++
				return
			}
			id, off, n := r.u64(recJavaBytecodesMethod), uint64(r.u32(recJavaBytecodesOff)), uint64(r.u32(recJavaBytecodesN))
			if n > uint64(size-sizeofRecJavaBytecodes) || off+n > maxBytecode {
				sk.malformed++
				return
			}
			b := bytecodes[id]
			if uint64(len(b)) < off+n {
				b = append(b, make([]byte, off+n-uint64(len(b)))...)
			}
			copy(b[off:], r.tail(sizeofRecJavaBytecodes)[:n])
			bytecodes[id] = b
		default:
			sk.malformed++
		}
	})
	for id, b := range bytecodes { // (a method's record may follow its bytecode's in another thread's block)
		if mi, ok := j.ByID[id]; ok && j.Methods[mi].Bytecode == nil {
			j.Methods[mi].Bytecode = b
		}
	}
	for id, codes := range pending {
		if mi, ok := j.ByID[id]; ok {
			for _, ci := range codes {
				j.Codes[ci].Method = mi
			}
		}
	}
	for _, u := range unresolved {
		if mi, ok := j.ByID[u.id]; ok {
			j.Codes[u.code].PCs[u.pc].Frames[u.frame].Method = mi
		}
	}
	for i := range j.Codes {
		c := &j.Codes[i]
		sort.SliceStable(c.PCs, func(a, b int) bool { return c.PCs[a].Off < c.PCs[b].Off })
	}
	return w, err
}

// javaMappings are the mappings of d.Java's code and methods: a dynamic function for each compiled
// method and stub, and a symbolic mapping for each method, for the Java view modes (JavaTable) and
// for its interpreted instance in the machine mode (JavaInterpTable).
func javaMappings(j *JavaData) []Mapping {
	out := javaCodeMappings(j, nil)
	for i := range j.Methods {
		m := &j.Methods[i]
		title := m.Title()
		out = append(out, SymbolicMapping(j.Pid, JavaTable, uint32(i), JavaMethodPath, title, m.Source, m.Lines, 0, -1),
			SymbolicMapping(j.Pid, JavaInterpTable, uint32(i), JavaStubPath, title+" [interpreted]", m.Source, m.Lines, 0, -1))
	}
	return out
}

// javaCodeMappings appends to out the dynamic functions of j: its stubs and compiled methods.
func javaCodeMappings(j *JavaData, out []Mapping) []Mapping {
	for i := range j.Stubs {
		s := &j.Stubs[i]
		if s.Size == 0 {
			continue
		}
		out = append(out, Mapping{Pid: j.Pid, Start: s.Addr, End: s.Addr + uint64(s.Size), Path: JavaStubPath, Func: s.Name,
			LoadTime: s.Load, UnloadTime: -1})
	}
	for i := range j.Codes {
		c := &j.Codes[i]
		name := fmt.Sprintf("<compiled method at %#x>", c.Addr)
		if c.Method >= 0 {
			name = j.Methods[c.Method].Title()
		}
		out = append(out, Mapping{Pid: j.Pid, Start: c.Addr, End: c.Addr + uint64(c.Size), Path: JavaCodePath, Func: name,
			LoadTime: c.Load, UnloadTime: c.Unload})
	}
	return out
}

// Java interpreter frames: the unwinder writes, after the PC of a frame in the interpreter, the
// words of the frame that say which method it runs and where: HotSpot's Method* and bytecode
// pointer, each as a frame of symbolic table 0 (no method's: JavaInterpMethod and JavaInterpBCP).
const javaBCPBit = 1 << 47

// JavaInterpMethod and JavaInterpBCP are the frames that carry an interpreter frame's Method* and
// bytecode pointer (a user address, below 1<<47).
func JavaInterpMethod(method uint64) uint64 { return SymbolicBase | method&(javaBCPBit-1) }
func JavaInterpBCP(bcp uint64) uint64       { return SymbolicBase | javaBCPBit | bcp&(javaBCPBit-1) }

// JavaInterpWord says whether frame pc is one of them, which, and its word.
func JavaInterpWord(pc uint64) (word uint64, bcp, ok bool) {
	if pc>>48 != SymbolicBase>>48 {
		return 0, false, false
	}
	return pc & (javaBCPBit - 1), pc&javaBCPBit != 0, true
}

// ReadJava returns what the JVMTI agent recorded in experiment dir's javatrace file; nil where it
// has none.
func ReadJava(dir string) (*JavaData, error) {
	var j *JavaData
	err := readOneTrace(dir, JavaTraceFile, func(tr *traceReader, tf *traceScan) error {
		var sk skipped
		_, err := tr.readJava(tf, &sk)
		j = tr.d.Java
		return err
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// JavaClassesFile is the file of a Java experiment that lists the classes whose methods the
// experiment met (the manual's JAVA_CLASSES), for other tools: er reads the javatrace file.
const JavaClassesFile = "JAVA_CLASSES"

// EncodeJavaClasses renders j's classes as the JAVA_CLASSES file: XML, a class element for each
// class (its name and source file), a method element for each of its methods recorded (its name,
// signature, whether native, and how many compiled instances it had).
func EncodeJavaClasses(j *JavaData) []byte {
	type xmlMethod struct {
		Name     qstr `xml:"name,attr"`
		Sig      qstr `xml:"signature,attr"`
		Native   bool `xml:"native,attr,omitempty"`
		Compiled int  `xml:"compiled,attr,omitempty"`
	}
	type xmlClass struct {
		Name    qstr        `xml:"name,attr"`
		Source  qstr        `xml:"source,attr,omitempty"`
		Methods []xmlMethod `xml:"method"`
	}
	type xmlClasses struct {
		XMLName xml.Name   `xml:"classes"`
		Version string     `xml:"version,attr"`
		Pid     uint32     `xml:"pid,attr"`
		Classes []xmlClass `xml:"class"`
	}
	compiled := make([]int, len(j.Methods))
	for _, c := range j.Codes {
		if c.Method >= 0 && int(c.Method) < len(compiled) {
			compiled[c.Method]++
		}
	}
	byClass := map[string]int{}
	x := xmlClasses{Version: FormatVersion, Pid: j.Pid}
	for i, m := range j.Methods {
		k, ok := byClass[m.Class]
		if !ok {
			k = len(x.Classes)
			byClass[m.Class] = k
			x.Classes = append(x.Classes, xmlClass{Name: qstr(m.Class), Source: qstr(m.Source)})
		}
		x.Classes[k].Methods = append(x.Classes[k].Methods, xmlMethod{Name: qstr(m.Name), Sig: qstr(m.Sig), Native: m.Native, Compiled: compiled[i]})
	}
	sort.SliceStable(x.Classes, func(a, b int) bool { return x.Classes[a].Name < x.Classes[b].Name })
	return marshalXML(&x)
}

// JavaMapRecords are the map.xml records of j's dynamic functions, as the manual's Java experiments
// have them: each compiled method's code and each of the JVM's own stubs, named, over their
// addresses. The reader makes them again from the javatrace file and drops these.
func JavaMapRecords(j *JavaData) []Mapping {
	return javaCodeMappings(j, nil)
}
