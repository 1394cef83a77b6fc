package erprint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/bytecode"
	"er/internal/disasm"
	"er/internal/objfile"
	"er/internal/report"
)

// disasm prints the annotated disassembly of a function, or of the functions of a source file.
func (s *session) disasm(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	tg, err := s.sourceTarget(p, "disasm", args)
	if err != nil {
		return err
	}
	var funcs []fileFunc
	if tg.f >= 0 {
		ff, err := s.codeOf(p, tg.f)
		if err != nil {
			return fmt.Errorf("disasm: %w", err)
		}
		funcs = []fileFunc{ff}
	} else {
		for _, ff := range s.fileFunctions(p, tg.file) {
			if ff.hi > ff.lo {
				funcs = append(funcs, ff)
			}
		}
		if len(funcs) == 0 {
			return fmt.Errorf("disasm: no function with code is declared in %s", tg.file)
		}
	}
	return s.annotatedDisasm(p, funcs)
}

// codeOf finds the code of function f: its symbol's address range.
func (s *session) codeOf(p *analysis.Profile, f int) (fileFunc, error) {
	fn := &p.Functions[f]
	name := s.funcName(p, f)
	switch fn.Kind {
	case analysis.FuncSymbol, analysis.FuncStatic, analysis.FuncPLT, analysis.FuncKernel:
	case analysis.FuncDynamic:
		dc := p.DynamicCodeOf(f)
		if dc == nil || len(dc.Bytes) == 0 {
			return fileFunc{}, fmt.Errorf("%s: no code: the runtime that generated it did not record its instructions", name)
		}
		return fileFunc{f: f, obj: fn.Object, name: name, lo: 0, hi: uint64(len(dc.Bytes)), dyn: dc}, nil
	case analysis.FuncInlined:
		var into []string
		if cc, err := p.CallersCallees([]int{f}); err == nil {
			for _, a := range cc.Callers {
				into = append(into, s.funcName(p, a.Func))
			}
		}
		return fileFunc{}, fmt.Errorf("%s is inlined: its code is in its callers (%s); disassemble them", name, strings.Join(into, ", "))
	case analysis.FuncMethod:
		if dc := p.DynamicCodeOf(f); dc != nil && dc.Bytecode {
			return fileFunc{f: f, obj: fn.Object, name: name, lo: 0, hi: uint64(len(dc.Bytes)), dyn: dc}, nil
		}
		return fileFunc{}, fmt.Errorf("%s has no code: its bytecode is recorded where the JVM compiled it (a cold method runs only interpreted); its compiled instances disassemble in viewmode machine", name)
	default:
		return fileFunc{}, fmt.Errorf("%s has no code", name)
	}
	of := p.ObjectFile(fn.Object)
	s.newWarnings()
	if of == nil || of.Code == nil {
		return fileFunc{}, fmt.Errorf("%s: no code: %s cannot be read or is not the file that was profiled", name, p.Objects[fn.Object].Path)
	}
	lo, hi := fn.Addr, fn.Addr+fn.Size
	if fn.Size == 0 && of.Debug != nil {
		if info, ok := of.Debug.Function(fn.Addr); ok && info.Hi > info.Lo {
			lo, hi = info.Lo, info.Hi
		}
	}
	if hi <= lo {
		return fileFunc{}, fmt.Errorf("%s: the size of its code is not known", name)
	}
	return fileFunc{f: f, obj: fn.Object, name: name, lo: lo, hi: hi}, nil
}

// asmRow is a row of an annotated disassembly: a function header, a source line, or an instruction.
type asmRow struct {
	name       string
	excl, incl []int64
	hasValues  bool
	line       int
	fn         string // compare: the instruction's function and offset in it
	off        uint64
}

// annotatedDisasm prints the instructions of funcs with their metrics, the source line of each
// group of instructions, and hot instructions marked.
func (s *session) annotatedDisasm(p *analysis.Profile, funcs []fileFunc) error {
	pt := p.PCs()
	its := metricItems(s.metrics)
	zero := make([]int64, len(p.Metrics))
	var rows []asmRow
	var notFound []string
	var sources []string
	for _, ff := range funcs {
		if ff.dyn != nil {
			rows = append(rows, s.dynamicRows(p, pt, ff, zero)...)
			continue
		}
		of := p.ObjectFile(ff.obj)
		code, err := of.Code(ff.lo, ff.hi)
		if err != nil {
			return fmt.Errorf("disasm: %s: %w", ff.name, err)
		}
		sym := s.symbolizer(p, ff.obj)
		rows = append(rows, asmRow{name: "<Function: " + ff.name + ">"})
		lastFile, lastLine := "", -1
		primary := ""
		if of.Debug != nil {
			if info, ok := of.Debug.Function(ff.lo); ok {
				primary = info.DeclFile
			}
		}
		for _, in := range disasm.Decode(code, ff.lo, sym) {
			file, line := "", 0
			var frames []string
			if of.Debug != nil {
				if fr, ok := of.Debug.Frames(in.Addr); ok && len(fr) > 0 {
					file, line = fr[0].File, fr[0].Line
					for k := len(fr) - 2; k >= 0; k-- {
						frames = append(frames, fmt.Sprintf("%s %s:%d", objfile.Demangle(fr[k].Func, s.style), filepath.Base(fr[k].File), fr[k].Line))
					}
				}
			}
			if line > 0 && (file != lastFile || line != lastLine) {
				sf := s.findSource(file)
				text := ""
				if line-1 < len(sf.lines) {
					text = sf.lines[line-1]
				} else if sf.path == "" && !slices.Contains(notFound, file) {
					notFound = append(notFound, file)
				}
				if !slices.Contains(sources, file) {
					sources = append(sources, file)
				}
				name := fmt.Sprintf("%6d. %s", line, text)
				if file != primary {
					name = fmt.Sprintf("%s:%d. %s", filepath.Base(file), line, text)
				}
				rows = append(rows, asmRow{name: name, line: line})
			}
			lastFile, lastLine = file, line
			r := asmRow{excl: zero, incl: zero, hasValues: true, line: line, fn: ff.name, off: in.Addr - ff.lo}
			if ff.f >= 0 {
				r.fn, r.off = s.funcName(p, ff.f), in.Addr-p.Functions[ff.f].Addr
			}
			if i := pt.Find(ff.obj, ff.f, in.Addr); i >= 0 && ff.f >= 0 {
				r.excl, r.incl = pt.Exclusive(i), pt.Inclusive(i)
			}
			lineNo := "[   ?]"
			if line > 0 {
				lineNo = fmt.Sprintf("[%4d]", line)
			}
			r.name = fmt.Sprintf("%s %8x:  %s", lineNo, in.Addr, in.Text)
			if len(frames) > 0 {
				r.name += "  <-- " + strings.Join(frames, " <-- ")
			}
			rows = append(rows, r)
		}
	}
	hot := hotLimits(its, len(rows), func(i int) *metricRow {
		return &metricRow{excl: rows[i].excl, incl: rows[i].incl}
	}, func(i int) bool { return rows[i].hasValues }, s.dthresh)
	cmp, err := s.compareListing()
	if err != nil {
		return err
	}
	t := s.annotatedTable(its)
	nblank := len(its)
	if cmp != nil {
		t.Columns = append(cmp.columns(s, its), t.Columns[len(its):]...)
		nblank = len(its) * len(cmp.ps)
	}
	for _, r := range rows {
		row := report.Row{Name: r.name, Cells: blankCells(nblank)}
		if r.hasValues {
			mr := &metricRow{excl: r.excl, incl: r.incl}
			row.Cells = rowCells(p, mr, its)
			row.Flag = hot.flag(mr)
			if cmp != nil {
				cr := cmp.instRow(s, r.fn, r.off)
				row.Cells = cmp.cells(s, &cr, its)
			}
		}
		if !s.text() {
			row.Cells = append(row.Cells, report.Cell{Text: lineText(r.line)})
		}
		t.Rows = append(t.Rows, row)
	}
	if s.text() {
		for _, f := range sources {
			s.printf("Source file: %s\n", displayPath(s.findSource(f), f))
		}
		for _, f := range notFound {
			s.printf("%s\n", s.findSource(f).notFound(f))
		}
		s.printObjects(p, funcs)
		s.printf("\n")
	} else {
		for _, f := range notFound {
			fmt.Fprintf(s.stderr, "er print: warning: %s\n", s.findSource(f).notFound(f))
		}
	}
	return s.table(t)
}

// symbolizer names link-time addresses of load object o by its symbols: "f", or "f+0x1a".
func (s *session) symbolizer(p *analysis.Profile, o int) func(uint64) (string, bool) {
	a := p.ObjectArchive(o)
	return func(addr uint64) (string, bool) {
		if a == nil {
			return "", false
		}
		sym, ok := archive.SymbolAt(a, addr)
		if !ok || sym.Size == 0 && addr != sym.Addr {
			return "", false // beyond a symbol of unknown size: data, most likely
		}
		name := objfile.Demangle(sym.Name, s.style)
		if addr == sym.Addr {
			return name, true
		}
		return fmt.Sprintf("%s+0x%x", name, addr-sym.Addr), true
	}
}

// dynamicRows are the rows of the disassembly of dynamic function ff (code a runtime generated and
// recorded: a JVM's compiled method; or a Java method's bytecode): each instruction at its offset,
// with its metrics and the methods its debug information names there (innermost first, with their
// source lines).
func (s *session) dynamicRows(p *analysis.Profile, pt *analysis.PCTable, ff fileFunc, zero []int64) []asmRow {
	dc := ff.dyn
	rows := []asmRow{{name: fmt.Sprintf("<Function: %s, at 0x%x>", ff.name, dc.Start)}}
	if dc.Bytecode {
		rows[0].name = fmt.Sprintf("<Function: %s, bytecode>", ff.name)
	}
	lastLine := -1
	var insts []disasm.Inst
	if dc.Bytecode { // a Java method's: at its bytecode indexes
		for _, bi := range bytecode.Decode(dc.Bytes) {
			insts = append(insts, disasm.Inst{Addr: uint64(bi.BCI), Len: bi.Len, Text: bi.Text})
		}
	} else {
		insts = disasm.Decode(dc.Bytes, dc.Start, func(uint64) (string, bool) { return "", false })
	}
	// At the code's address in the process, so that jumps and PC-relative data read as they ran.
	for _, in := range insts {
		off := in.Addr - dc.Start
		line := 0
		if dc.Line != nil {
			line = dc.Line(off)
		}
		if line > 0 && line != lastLine {
			rows = append(rows, asmRow{name: fmt.Sprintf("%6d.", line), line: line})
		}
		lastLine = line
		r := asmRow{excl: zero, incl: zero, hasValues: true, line: line, fn: ff.name, off: off}
		if i := pt.Find(ff.obj, ff.f, off); i >= 0 {
			r.excl, r.incl = pt.Exclusive(i), pt.Inclusive(i)
		}
		lineNo := "[   ?]"
		if line > 0 {
			lineNo = fmt.Sprintf("[%4d]", line)
		}
		if dc.Bytecode {
			r.name = fmt.Sprintf("%s %8d:  %s", lineNo, in.Addr, in.Text) // bytecode indexes, as javap -c writes them
		} else {
			r.name = fmt.Sprintf("%s %8x:  %s", lineNo, in.Addr, in.Text)
		}
		if dc.Frames != nil {
			if fr := dc.Frames(off); len(fr) > 1 {
				r.name += "  <-- " + strings.Join(fr[:len(fr)-1], " <-- ")
			}
		}
		rows = append(rows, r)
	}
	return rows
}
