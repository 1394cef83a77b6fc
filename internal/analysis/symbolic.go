package analysis

import (
	"fmt"

	"er/internal/debuginfo"
	"er/internal/experiment"
)

// Symbolic frames (experiment.SymbolicFrame): a frame that is a method and a position, not a PC. It
// is resolved as an address is, through the process's mappings at the event's epoch: the symbolic
// mapping that names its method then (experiment.SymbolicMapping), so a method id that a runtime
// reuses for another method later is each method in its own time. The method is a FuncMethod of the
// mapping's pseudo-object, one function per object and name however many mappings name it; the
// position is its address (the PCs view), and the mapping's lines give its source line (the lines
// and source views).

// methodKey identifies a method: its object and its name.
type methodKey struct {
	obj  int32
	name string
}

// symLine is a symbolic frame's source line: of a method, in a file.
type symLine struct {
	fn   int32
	file string
	line int
}

// symbolicLoc resolves symbolic frame pc in a process's mappings during epoch.
func (b *builder) symbolicLoc(es *expState, pm *procMaps, epoch int, pc uint64) location {
	table, method, pos, _ := experiment.SplitSymbolic(pc)
	var m *experiment.Mapping
	if pm != nil {
		m = pm.find(epoch, pc)
	}
	if m == nil || m.Func == "" {
		// No mapping names it: the method of no known name, in the <Unknown> object.
		obj := b.objectIndex(UnknownName, UnknownName, "")
		name := fmt.Sprintf("<method %d of table %d>", method, table)
		return location{fn: b.method(obj, name), obj: obj, addr: uint64(pos)}
	}
	os := b.object(es, m.Path)
	l := location{fn: b.method(os.obj, m.Func), obj: os.obj, addr: uint64(pos)}
	if table == experiment.JavaTable && m.Path == experiment.JavaMethodPath && b.p.dynCode[l.fn] == nil {
		// A Java method's bytecode, where the agent recorded it, is its disassembly.
		if j := es.d.Java; j != nil && int(method) < len(j.Methods) && j.Methods[method].Bytecode != nil {
			jm := &j.Methods[method]
			if b.p.dynCode == nil {
				b.p.dynCode = map[int32]*DynamicCode{}
			}
			b.p.dynCode[l.fn] = &DynamicCode{Bytes: jm.Bytecode, Bytecode: true,
				Line: func(bci uint64) int { return jm.LineAt(int32(min(bci, 1<<31-1))) }}
		}
	}
	if line := m.LineAt(pos); line > 0 || m.Source != "" {
		k := symLine{fn: l.fn, file: m.Source, line: line}
		c, ok := b.symChains[k]
		if !ok {
			c = int32(len(b.chains))
			b.chains = append(b.chains, chain{frames: []debuginfo.Frame{{Func: m.Func, File: m.Source, Line: line}},
				lineFn: []int32{-1}})
			if b.symChains == nil {
				b.symChains = map[symLine]int32{}
			}
			b.symChains[k] = c
		}
		l.symc = c + 1
	}
	return l
}

// method returns the FuncMethod of object obj named name, made at its first use.
func (b *builder) method(obj int32, name string) int32 {
	k := methodKey{obj, name}
	if f, ok := b.methods[k]; ok {
		return f
	}
	if b.methods == nil {
		b.methods = map[methodKey]int32{}
	}
	f := b.function(funcKey{obj: obj, addr: uint64(len(b.methods)), kind: FuncMethod}, name, 0)
	b.methods[k] = f
	return f
}

// dynKey identifies a dynamic function: its object, its code's start and its name (an address a
// runtime reuses for other code is another function).
type dynKey struct {
	obj   int32
	start uint64
	name  string
}

// dynamicFunc returns the FuncDynamic of mapping m (of object obj), made at its first use.
func (b *builder) dynamicFunc(es *expState, obj int32, m *experiment.Mapping) int32 {
	k := dynKey{obj, m.Start, m.Func}
	if f, ok := b.dynFuncs[k]; ok {
		return f
	}
	dc := es.dynamicCode(m)
	if m.Path == experiment.DynamicPath && dc == nil {
		k.start = 0 // a perf map's code objects of one name (recompiled, moved) are one function
		if f, ok := b.dynFuncs[k]; ok {
			return f
		}
	}
	if b.dynFuncs == nil {
		b.dynFuncs = map[dynKey]int32{}
	}
	f := b.function(funcKey{obj: obj, addr: uint64(len(b.dynFuncs)), kind: FuncDynamic}, m.Func, m.End-m.Start)
	b.dynFuncs[k] = f
	if dc != nil { // its instructions: each instance of a name is a function, with its disassembly
		if b.p.dynCode == nil {
			b.p.dynCode = map[int32]*DynamicCode{}
		}
		b.p.dynCode[f] = dc
	}
	return f
}

// DynamicCode is the code of a dynamic function, as the runtime that generated it recorded it: its
// instructions (the experiment's dyntext: a JVM's agent copied them) and, for a compiled method,
// what its debug information says of each instruction.
type DynamicCode struct {
	Start uint64 // where it was in the process
	Bytes []byte
	// Frames returns the methods at offset off of the code, innermost first, as "Hot.leaf(double)
	// Hot.java:3"; nil where the runtime gave no debug information.
	Frames func(off uint64) []string
	// Line returns the source line of offset off (its outermost method's), 0 where unknown.
	Line func(off uint64) int
	// Bytecode says that Bytes is a Java method's bytecode (offsets are bytecode indexes), not
	// machine code.
	Bytecode bool
}

// DynamicCodeOf returns the code of dynamic function f, nil where none was recorded.
func (p *Profile) DynamicCodeOf(f int) *DynamicCode { return p.dynCode[int32(f)] }
