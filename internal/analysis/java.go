package analysis

import (
	"path/filepath"
	"strconv"
	"strings"

	"er/internal/archive"
	"er/internal/experiment"
)

// Java (docs/java.md): a JVM's samples hold machine stacks, whose frames in the JVM's code cache
// are compiled methods (their mappings name them: experiment.JavaCodePath), stubs and the
// interpreter (JavaStubPath), and, after each interpreter frame, the method and bytecode it ran (the
// unwinder read them from the frame: experiment.JavaInterpMethod). The view modes show them as the
// manual's three representations of a Java process:
//
//   - user: Java methods only, each as one function whatever ran it (interpreted, compiled, inlined
//     into another), a JNI method's native code as its natural functions; the JVM's frames gone (a
//     Java method that calls into the JVM is the leaf), a stack with no Java method the JVM's own
//     (<JVM-System>), or one the unwind lost in the JVM's code (<no Java callstack recorded>);
//   - expert: the same, with the JVM's frames that run on behalf of a Java method shown (what it
//     calls into the JVM, and what the JVM calls back);
//   - machine: the machine stack, each compiled method a function (an instance of its own), each
//     interpreter frame its method's interpreted instance (`Hot.inner(int) [interpreted]`).
//
// The translation is made per raw stack and mapping epoch (a compiled method's code is its only
// while loaded), in builder.locations, before the frames are resolved; its frames are symbolic
// (experiment.SymbolicFrame of JavaTable, the method and its bytecode index), resolved through the
// methods' symbolic mappings.

// Pseudo-frames of the Java views.
const (
	javaSystemFrame  = experiment.PseudoFrameBase + 0x200 // <JVM-System>
	javaNoStackFrame = experiment.PseudoFrameBase + 0x201 // <no Java callstack recorded>
)

// Names of the Java views' pseudo-functions.
const (
	JVMSystemName   = "<JVM-System>"
	NoJavaStackName = "<no Java callstack recorded>"
)

// javaView is what the translation needs of an experiment's JVM.
type javaView struct {
	j     *experiment.JavaData
	codes map[codeKey]int32 // compiled code by start and load time
}

type codeKey struct {
	start uint64
	load  int64
}

func newJavaView(d *experiment.Data) *javaView {
	if d.Java == nil || len(d.Java.Methods) == 0 {
		return nil
	}
	v := &javaView{j: d.Java, codes: map[codeKey]int32{}}
	for i := range d.Java.Codes {
		c := &d.Java.Codes[i]
		v.codes[codeKey{c.Addr, c.Load}] = int32(i)
	}
	return v
}

// frameClass is what a frame of a JVM's stack is, for the translation.
type frameClass uint8

const (
	jfJava   frameClass = iota + 1 // a Java method's (symbolic)
	jfJVM                          // the JVM's own: libjvm, its stubs, unnamed code in its code cache
	jfNative                       // native code of another object (JNI libraries, libc)
	jfLost                         // a pseudo-frame that ends a stack the unwind lost
)

type javaFrame struct {
	pc     uint64
	class  frameClass
	native bool // a Java frame of a native method
}

// translate returns raw (leaf first) as view mode mode shows it, in buf.
func (v *javaView) translate(b *builder, rs rawStack, raw experiment.Stack, buf []uint64) experiment.Stack {
	j := v.j
	machine := b.mode == ViewMachine
	var frames []javaFrame
	inCache := false  // a frame of the JVM's code cache (compiled code, stubs, the interpreter)
	lock := lockMaybe // whether its native frames wait on a user-level lock (lockFunction)
	for i := 0; i < len(raw); i++ {
		pc := raw[i]
		if _, _, ok := experiment.JavaInterpWord(pc); ok {
			continue // the words of an interpreter frame not read below
		}
		if pc >= experiment.PseudoFrameBase || pc >= experiment.KernelBase {
			cl := jfJVM
			if pc == experiment.FrameTruncated || pc == experiment.FrameUnwindFailed {
				cl = jfLost
			}
			frames = append(frames, javaFrame{pc: pc, class: cl})
			continue
		}
		look := pc
		if i > 0 && pc > 0 {
			look = pc - 1
		}
		var m *experiment.Mapping
		if rs.pm != nil {
			m = rs.pm.find(int(rs.epoch), look)
		}
		switch {
		case m != nil && m.Path == experiment.JavaCodePath:
			inCache = true
			ci, ok := v.codes[codeKey{m.Start, m.LoadTime}]
			if machine || !ok {
				frames = append(frames, javaFrame{pc: pc, class: jfJVM})
				continue
			}
			c := &j.Codes[ci]
			fs := c.FramesAt(uint32(look - m.Start))
			if len(fs) == 0 && c.Method >= 0 {
				fs = []experiment.JavaFrame{{Method: c.Method, BCI: 0}}
			}
			for _, f := range fs {
				if f.Method < 0 {
					continue
				}
				frames = append(frames, javaFrame{pc: experiment.SymbolicFrame(experiment.JavaTable, uint32(f.Method), bciPos(f.BCI)),
					class: jfJava, native: j.Methods[f.Method].Native})
			}
		case m != nil && m.Path == experiment.JavaStubPath && m.Func == experiment.JavaInterpName:
			inCache = true
			var method, bcp uint64
			var okM bool
			if i+2 < len(raw) {
				method, _, okM = experiment.JavaInterpWord(raw[i+1])
				bcp, _, _ = experiment.JavaInterpWord(raw[i+2])
			}
			mi, known := j.ByVM[method]
			if !okM || !known {
				frames = append(frames, javaFrame{pc: pc, class: jfJVM})
				continue
			}
			i += 2
			meth := &j.Methods[mi]
			bci := int32(-1)
			if meth.Code != 0 && bcp >= meth.Code && bcp-meth.Code < 0xffff {
				bci = int32(bcp - meth.Code)
			}
			table := uint16(experiment.JavaTable)
			if machine {
				table = experiment.JavaInterpTable
			}
			frames = append(frames, javaFrame{pc: experiment.SymbolicFrame(table, uint32(mi), bciPos(bci)), class: jfJava, native: meth.Native})
		case m != nil && m.Path == experiment.JavaStubPath:
			inCache = true
			frames = append(frames, javaFrame{pc: pc, class: jfJVM})
		case m == nil || isJVMObject(m.Path):
			if m == nil || !strings.HasPrefix(m.Path, "/") {
				inCache = true // unnamed code: the code cache's
			}
			frames = append(frames, javaFrame{pc: pc, class: jfJVM})
		default:
			frames = append(frames, javaFrame{pc: pc, class: jfNative})
			if !machine && lock != lockNo {
				// Told here, by its symbol: the frames of libc's waits are gone from the Java stack.
				if l := b.nativeLock(rs, m, look); l != lockMaybe {
					lock = l
				}
			}
		}
	}
	if !machine { // (rawStack.lock: a lock wait or not, whatever the passes leave)
		b.preLock = 1
		if lock == lockYes {
			b.preLock = 2
		}
	}
	out := buf[:0]
	if machine {
		for _, f := range frames {
			out = append(out, f.pc)
		}
		return out
	}
	inner, outer := -1, -1 // the leafmost and rootmost Java frames
	for k, f := range frames {
		if f.class == jfJava {
			if inner < 0 {
				inner = k
			}
			outer = k
		}
	}
	if inner < 0 {
		if b.mode == ViewExpert && !inCache {
			for _, f := range frames {
				out = append(out, f.pc)
			}
			return out
		}
		if inCache {
			return append(out, javaNoStackFrame)
		}
		return append(out, javaSystemFrame)
	}
	expert := b.mode == ViewExpert
	// Leafward of the innermost Java frame: a native method's code and what it calls, up to the
	// JVM (user); all of it (expert). Else the JVM's work for the method: the method is the leaf
	// (user).
	if frames[inner].native || expert {
		cut := 0
		if !expert {
			cut = inner
			for k := inner - 1; k >= 0; k-- {
				if frames[k].class != jfNative {
					break
				}
				cut = k
			}
		}
		for k := cut; k < inner; k++ {
			if expert || frames[k].class == jfNative {
				out = append(out, frames[k].pc)
			}
		}
	}
	// Between the Java frames: the native code of JNI methods (and, expert, the JVM's frames that
	// call back into Java); rootward of the outermost one, the thread's start: gone.
	for k := inner; k <= outer; k++ {
		f := frames[k]
		switch {
		case f.class == jfJava, f.class == jfNative:
			out = append(out, f.pc)
		case expert && f.class == jfJVM && !isStubFrame(rs, f.pc):
			out = append(out, f.pc)
		}
	}
	if outer+1 < len(frames) && frames[len(frames)-1].class == jfLost {
		out = append(out, frames[len(frames)-1].pc) // the stack was cut: say so
	}
	return out
}

// nativeLock classifies the native frame at look (a PC of mapping m) as lockFunction does, by the
// name of the symbol that holds it; lockMaybe where it has none.
func (b *builder) nativeLock(rs rawStack, m *experiment.Mapping, look uint64) int {
	if m == nil || m.Func != "" || !strings.HasPrefix(m.Path, "/") {
		return lockMaybe
	}
	os := b.object(rs.es, m.Path)
	if os.arch == nil || os.collector {
		return lockMaybe
	}
	vaddr, ok := archive.FileOffsetToVaddr(os.arch, look-m.Start+m.Offset)
	if !ok {
		return lockMaybe
	}
	if sym, ok := archive.SymbolAt(os.arch, vaddr); ok {
		return lockFunction(sym.Name)
	}
	return lockMaybe
}

// isStubFrame says whether pc is in the JVM's generated code (its stubs, the interpreter).
func isStubFrame(rs rawStack, pc uint64) bool {
	if rs.pm == nil || pc >= experiment.KernelBase {
		return false
	}
	m := rs.pm.find(int(rs.epoch), pc-1)
	return m == nil || m.Path == experiment.JavaStubPath || !strings.HasPrefix(m.Path, "/")
}

// bciPos is a bytecode index as a symbolic frame's position: 0, the method's first line, where
// unknown.
func bciPos(bci int32) uint16 {
	if bci < 0 || bci > 0xffff {
		return 0
	}
	return uint16(bci)
}

// isJVMObject says whether path is the JVM's own code: HotSpot (libjvm.so) and the launcher's
// library (libjli.so) and program.
func isJVMObject(path string) bool {
	base := filepath.Base(path)
	return base == "libjvm.so" || base == "libjli.so" || (base == "java" && strings.Contains(path, "/jvm/")) ||
		path == "[anon]" || path == "//anon" || strings.HasPrefix(path, "[anon")
}

// hasJava says whether experiment d is of a JVM whose methods were recorded.
func hasJava(d *experiment.Data) bool { return d.Java != nil && len(d.Java.Methods) > 0 }

// dynCodeKey finds a generated function's code: its process, address and load time.
type dynCodeKey struct {
	pid  uint32
	addr uint64
	load int64
}

// dynamicCode returns the code of dynamic-function mapping m of experiment es: a JVM's compiled
// method or stub, or a function the program generated (collector_func_load); nil where its
// instructions were not recorded (a perf map's functions).
func (es *expState) dynamicCode(m *experiment.Mapping) *DynamicCode {
	if m.Path == experiment.DynamicPath {
		if es.dynIdx == nil {
			es.dynIdx = map[dynCodeKey]*experiment.DynFunc{}
			for i := range es.d.DynFuncs {
				if f := &es.d.DynFuncs[i]; f.Bytes != nil {
					es.dynIdx[dynCodeKey{f.Pid, f.Addr, f.Load}] = f
				}
			}
		}
		if f := es.dynIdx[dynCodeKey{m.Pid, m.Start, m.LoadTime}]; f != nil {
			return &DynamicCode{Start: f.Addr, Bytes: f.Bytes, Line: f.LineAt}
		}
		return nil
	}
	j := es.d.Java
	if j == nil {
		return nil
	}
	switch m.Path {
	case experiment.JavaCodePath:
		v := es.java
		if v == nil {
			return nil
		}
		ci, ok := v.codes[codeKey{m.Start, m.LoadTime}]
		if !ok || j.Codes[ci].Bytes == nil {
			return nil
		}
		c := &j.Codes[ci]
		frames := func(off uint64) []experiment.JavaFrame {
			if off > uint64(c.Size) {
				return nil
			}
			return c.FramesAt(uint32(off))
		}
		return &DynamicCode{Start: c.Addr, Bytes: c.Bytes,
			Frames: func(off uint64) []string {
				var out []string
				for _, f := range frames(off) {
					if f.Method < 0 {
						continue
					}
					jm := &j.Methods[f.Method]
					s := jm.Title()
					if l := jm.LineAt(f.BCI); l > 0 {
						s += " " + jm.Source + ":" + strconv.Itoa(l)
					}
					out = append(out, s)
				}
				return out
			},
			Line: func(off uint64) int {
				fs := frames(off)
				if len(fs) == 0 || fs[len(fs)-1].Method < 0 {
					return 0
				}
				return j.Methods[fs[len(fs)-1].Method].LineAt(fs[len(fs)-1].BCI)
			}}
	case experiment.JavaStubPath:
		for i := range j.Stubs {
			if s := &j.Stubs[i]; s.Addr == m.Start && s.Bytes != nil {
				return &DynamicCode{Start: s.Addr, Bytes: s.Bytes}
			}
		}
	}
	return nil
}
