package erprint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"er/internal/analysis"
	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/regfile"
	"er/internal/report"
)

// defaultThreshold is the default of sthresh and dthresh, as er_print's: a line or an instruction
// is hot when one of its metrics is at least 75% of the largest value of that metric in the listing.
const defaultThreshold = 75

// defaultTreeThreshold is the default of tthresh: calltree leaves out the calls below 0.1% of the
// total, which on a real profile of 600,000 samples keeps 927 of its 409,608 nodes (er print
// -functions -callers-callees -calltree: 574 MB before, 344 MB).
const defaultTreeThreshold = 0.1

// sourceFile is a source file looked for on the search path.
type sourceFile struct {
	path  string   // where it was found; "" when it was not
	tried []string // what was tried, in order
	lines []string // its lines
	err   error    // why it could not be read, when it was found
}

// findSource looks for the source file recorded as name: through each pathmap whose old prefix
// starts it, as recorded, then in each directory of the search path ("$expts": the experiments'
// directories and their archives/), as the recorded relative path and by base name.
func (s *session) findSource(name string) *sourceFile {
	if sf, ok := s.sourceCache[name]; ok {
		return sf
	}
	sf := &sourceFile{}
	seen := map[string]bool{}
	try := func(p string) bool {
		if p == "" || seen[p] {
			return false
		}
		seen[p] = true
		sf.tried = append(sf.tried, p)
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular()
	}
	var candidates []string
	for _, pm := range s.pathmaps {
		if rest, ok := strings.CutPrefix(name, pm[0]); ok && (rest == "" || strings.HasPrefix(rest, "/") || strings.HasSuffix(pm[0], "/")) {
			candidates = append(candidates, filepath.Join(pm[1], rest))
		}
	}
	if filepath.IsAbs(name) {
		candidates = append(candidates, name)
	}
	for _, dir := range s.searchDirs() {
		if !filepath.IsAbs(name) {
			candidates = append(candidates, filepath.Join(dir, name))
		}
		candidates = append(candidates, filepath.Join(dir, filepath.Base(name)))
	}
	for _, c := range candidates {
		if try(c) {
			sf.path = c
			abs, err := filepath.Abs(c)
			if err == nil {
				err = archive.CheckSource(abs)
				if err != nil {
					err = &refusedSource{err}
				}
			}
			if err != nil {
				sf.err = err
			} else {
				sf.lines, sf.err = readLines(c)
			}
			break
		}
	}
	s.archivedSource(name, sf)
	if s.sourceCache == nil {
		s.sourceCache = map[string]*sourceFile{}
	}
	s.sourceCache[name] = sf
	return sf
}

// archivedSource replaces the file found for source name by the copy that `er archive` kept in the
// experiments' archives when no file was found or the file found is not the one archived (its
// SHA-256 differs), and says so.
func (s *session) archivedSource(name string, sf *sourceFile) {
	c, file, ok, err := archive.FindSource(s.dirs, name)
	if err != nil {
		fmt.Fprintf(s.stderr, "er print: warning: %v\n", err)
		return
	}
	if !ok {
		return
	}
	why := "the original is missing"
	if sf.path != "" {
		if sum, err := archive.FileSHA256(sf.path); err == nil && sum == c.SHA256 {
			return
		}
		why = "the original changed"
		if sf.path != name {
			why = sf.path + " differs from it"
		}
	}
	lines, err := readLines(file)
	if err != nil {
		fmt.Fprintf(s.stderr, "er print: warning: the archived copy %s of %s cannot be read: %v\n", file, name, err)
		return
	}
	sf.path, sf.lines, sf.err = file, lines, nil
	fmt.Fprintf(s.stderr, "er print: warning: using the archived copy of %s: %s\n", name, why)
}

// searchDirs expands the search path: "$expts" is each experiment's directory and its archives.
func (s *session) searchDirs() []string {
	var dirs []string
	for _, d := range s.searchPath {
		if d != "$expts" {
			dirs = append(dirs, d)
			continue
		}
		for _, e := range s.dirs {
			dirs = append(dirs, e, filepath.Join(e, experiment.ArchivesDir))
		}
	}
	return dirs
}

// readLines reads the lines of a source file: a regular file (opened without blocking, so that a
// named pipe cannot hang er print) of at most archive.MaxSourceSize bytes.
func readLines(path string) ([]string, error) {
	data, err := regfile.ReadFile(path, archive.MaxSourceSize, "a source file shown")
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(data), "\n")
	if len(data) == 0 {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}

// refusedSource is why a source file found is not shown: it is not one that er archive would copy
// (archive.CheckSource), as a binary's debug information can name any file.
type refusedSource struct{ why error }

func (r *refusedSource) Error() string {
	return fmt.Sprintf("%v; er print shows, as er archive copies, only files that are plausibly source files (see docs/experiment-format.md, \"What is copied\")", r.why)
}

// notFound says that a source file could not be found or read, and how to say where it is.
func (sf *sourceFile) notFound(name string) string {
	var refused *refusedSource
	if errors.As(sf.err, &refused) {
		return fmt.Sprintf("Source file %s is not shown: %v", sf.path, sf.err)
	}
	if sf.path != "" {
		return fmt.Sprintf("Source file %s could not be read: %v", sf.path, sf.err)
	}
	return fmt.Sprintf("Source file %s not found; tried %s. Say where it is with setpath or addpath (directories), or pathmap (a prefix of the recorded path and its replacement).",
		name, strings.Join(sf.tried, ", "))
}

func (s *session) setpath(args []string) error {
	s.searchPath = splitPath(args[0])
	s.sourceCache = nil
	return nil
}

func (s *session) addpath(args []string) error {
	s.searchPath = append(s.searchPath, splitPath(args[0])...)
	s.sourceCache = nil
	return nil
}

func splitPath(list string) []string {
	var out []string
	for _, d := range strings.Split(list, ":") {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

func (s *session) pathmap(args []string) error {
	if !strings.HasPrefix(args[0], "/") {
		return usagef("pathmap: the old prefix %q is not an absolute path", args[0])
	}
	s.pathmaps = append(s.pathmaps, [2]string{args[0], args[1]})
	s.sourceCache = nil
	return nil
}

func (s *session) setThreshold(cmd string, dst *float64) func(args []string) error {
	return func(args []string) error {
		v, err := strconv.ParseFloat(args[0], 64)
		if err != nil || v < 0 || v > 100 {
			return usagef("%s: %q is not a percentage from 0 to 100", cmd, args[0])
		}
		*dst = v
		return nil
	}
}

func (s *session) setInline(args []string) error {
	var fold bool
	switch args[0] {
	case "on":
	case "off":
		fold = true
	default:
		return usagef("inline: %q is not on or off", args[0])
	}
	if fold != s.foldInlines {
		s.foldInlines = fold
		s.prof, s.names, s.fragment, s.cmpProfiles = nil, nil, nil, nil // function numbers change
	}
	return nil
}

// srcTarget is what a source or disasm command shows: a function, or a whole source file.
type srcTarget struct {
	f    int    // the function, or -1 for a file
	file string // the source file as the debug information names it
}

// sourceTarget resolves the argument of source or disasm: a function name (with an optional N
// among functions of that name), else a source file (with an optional N among files that match).
func (s *session) sourceTarget(p *analysis.Profile, cmd string, args []string) (srcTarget, error) {
	if s.pick > 0 {
		return srcTarget{f: s.pick - 1}, nil
	}
	if fs := p.FindFunctions(args[0]); len(fs) > 0 {
		f, err := s.findFunction(p, cmd, args)
		return srcTarget{f: f}, err
	}
	files := s.matchFiles(p, args[0])
	if len(files) == 0 {
		return srcTarget{}, usagef("%s: no function or source file named %q", cmd, args[0])
	}
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > len(files) {
			return srcTarget{}, usagef("%s: %q is not a number from 1 to %d for the source files named %q", cmd, args[1], len(files), args[0])
		}
		return srcTarget{f: -1, file: files[n-1]}, nil
	}
	if len(files) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d source files match %q; choose one with \"%s %s N\":", cmd, len(files), args[0], cmd, args[0])
		for i, f := range files {
			fmt.Fprintf(&b, "\n  %d) %s", i+1, f)
		}
		return srcTarget{}, usagef("%s", b.String())
	}
	return srcTarget{f: -1, file: files[0]}, nil
}

// matchFiles lists the source files of the profile's load objects named name: the same path, a
// path ending in /name, or the same base name.
func (s *session) matchFiles(p *analysis.Profile, name string) []string {
	all := append([]string(nil), p.Lines().Files()...)
	for o := 1; o < len(p.Objects); o++ {
		if of := p.ObjectFile(o); of != nil && of.Debug != nil {
			all = append(all, of.Debug.Files()...)
		}
	}
	s.newWarnings()
	sort.Strings(all)
	var exact, suffix, base []string
	for i, f := range all {
		if i > 0 && f == all[i-1] {
			continue
		}
		switch {
		case f == name:
			exact = append(exact, f)
		case strings.HasSuffix(f, "/"+name):
			suffix = append(suffix, f)
		case filepath.Base(f) == filepath.Base(name):
			base = append(base, f)
		}
	}
	switch {
	case len(exact) > 0:
		return exact
	case len(suffix) > 0:
		return suffix
	}
	return base
}

// fileFunc is a function whose declaration is in a source file.
type fileFunc struct {
	f      int    // the profile's function, or -1 when it has no events
	obj    int    // its load object
	name   string // its name in the current style
	line   int    // the line of its declaration
	lo, hi uint64 // its code
	// dyn is a dynamic function's code (a JVM's compiled method), its addresses offsets in it.
	dyn *analysis.DynamicCode
}

// fileFunctions lists the functions declared in a source file, from the symbols of the load objects
// whose debug information has the file, by line.
func (s *session) fileFunctions(p *analysis.Profile, file string) []fileFunc {
	byAddr := map[[2]uint64]int{}
	for f, fn := range p.Functions {
		if fn.Kind == analysis.FuncSymbol && p.Used(f) {
			byAddr[[2]uint64{uint64(fn.Object), fn.Addr}] = f
		}
	}
	var out []fileFunc
	for o := 1; o < len(p.Objects); o++ {
		of, a := p.ObjectFile(o), p.ObjectArchive(o)
		if of == nil || of.Debug == nil || a == nil || !slices.Contains(of.Debug.Files(), file) {
			continue
		}
		done := map[uint64]bool{}
		for _, sym := range a.Symbols {
			if sym.Kind != experiment.SymFunc || done[sym.Addr] {
				continue
			}
			done[sym.Addr] = true
			info, ok := of.Debug.Function(sym.Addr)
			if !ok || info.DeclFile != file || info.Entry != sym.Addr {
				continue
			}
			f, ok := byAddr[[2]uint64{uint64(o), sym.Addr}]
			if !ok {
				f = -1
			}
			lo, hi := info.Lo, info.Hi
			if hi <= lo {
				lo, hi = sym.Addr, sym.Addr+sym.Size
			}
			out = append(out, fileFunc{f: f, obj: o, name: objfile.Demangle(sym.Name, s.style), line: info.DeclLine, lo: lo, hi: hi})
		}
	}
	s.newWarnings()
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

// inlinedIn lists the inlined functions (without code of their own) with events on lines of a
// file, each at its first such line.
func (s *session) inlinedIn(p *analysis.Profile, lt *analysis.LineTable, file string) []fileFunc {
	first := map[int]int{}
	for i, l := range lt.Lines {
		if l.File != file || p.Functions[l.Func].Kind != analysis.FuncInlined || !nonZero(lt.Inclusive(i)) {
			continue
		}
		if n, ok := first[l.Func]; !ok || l.Line < n {
			first[l.Func] = l.Line
		}
	}
	var out []fileFunc
	for f, line := range first {
		out = append(out, fileFunc{f: f, obj: p.Functions[f].Object, name: s.funcName(p, f), line: line})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].line < out[j].line || out[i].line == out[j].line && out[i].name < out[j].name
	})
	return out
}

// functionLines finds the source lines of function f: its file, and the range from its
// declaration to its last line of code that is not inlined from elsewhere. An inlined function,
// and a method of symbolic frames (whose lines its mappings give), has the range of its lines with
// events.
func (s *session) functionLines(p *analysis.Profile, f int) (file string, first, last int, err error) {
	fn := &p.Functions[f]
	name := s.funcName(p, f)
	switch fn.Kind {
	case analysis.FuncInlined, analysis.FuncMethod:
		lt := p.Lines()
		for _, l := range lt.Lines {
			if l.Func != f || l.File == "" || file != "" && l.File != file {
				continue
			}
			file = l.File
			if first == 0 || l.Line < first {
				first = l.Line
			}
			last = max(last, l.Line)
		}
		if file == "" && fn.Kind == analysis.FuncMethod {
			return "", 0, 0, fmt.Errorf("%s, a method, has no events on source lines (its mappings give it none)", name)
		}
		if file == "" {
			return "", 0, 0, fmt.Errorf("%s, an inlined function, has no events on source lines", name)
		}
		return file, first, last, nil
	case analysis.FuncSymbol, analysis.FuncStatic:
	default:
		return "", 0, 0, fmt.Errorf("%s has no source lines", name)
	}
	of := p.ObjectFile(fn.Object)
	s.newWarnings()
	if of == nil || of.Debug == nil {
		return "", 0, 0, s.noDebugInfo(p, f)
	}
	lo, hi := fn.Addr, fn.Addr+fn.Size
	if info, ok := of.Debug.Function(fn.Addr); ok {
		file, first = info.DeclFile, info.DeclLine
		if info.Hi > info.Lo {
			lo, hi = info.Lo, info.Hi
		}
	}
	for _, r := range of.Debug.Rows(lo, hi) {
		if r.Line <= 0 || file != "" && r.File != file {
			continue
		}
		if frames, ok := of.Debug.Frames(r.Lo); !ok || len(frames) != 1 {
			continue // inlined code: its lines are another function's
		}
		file = r.File
		if first == 0 || r.Line < first {
			first = r.Line
		}
		last = max(last, r.Line)
	}
	if file == "" || last == 0 {
		return "", 0, 0, fmt.Errorf("%s has no source lines in the debug information of %s", name, p.Objects[fn.Object].Path)
	}
	return file, first, last, nil
}

// noDebugInfo explains why function f has no lines.
func (s *session) noDebugInfo(p *analysis.Profile, f int) error {
	obj := p.Objects[p.Functions[f].Object]
	if s.env.openFile == nil {
		return fmt.Errorf("%s: no source lines: load objects' files are not read", s.funcName(p, f))
	}
	if p.ObjectFile(p.Functions[f].Object) == nil {
		return fmt.Errorf("%s: no source lines: %s cannot be read or is not the file that was profiled (see the warnings)", s.funcName(p, f), obj.Path)
	}
	return fmt.Errorf("%s: no source lines: %s has no debug information (build it with -g)", s.funcName(p, f), obj.Path)
}

func (s *session) source(args []string) error {
	p, err := s.profile()
	if err != nil {
		return err
	}
	tg, err := s.sourceTarget(p, "source", args)
	if err != nil {
		return err
	}
	var file string
	first, last := 1, 0
	if tg.f >= 0 {
		if file, first, last, err = s.functionLines(p, tg.f); err != nil {
			return fmt.Errorf("source: %w", err)
		}
	} else {
		file = tg.file
	}
	return s.annotatedSource(p, tg.f, file, first, last)
}

// annotatedSource prints the lines first to last of a source file (last 0: to its end) with their
// metrics, the functions declared there (only f when f >= 0), and hot lines marked.
func (s *session) annotatedSource(p *analysis.Profile, f int, file string, first, last int) error {
	lt := p.Lines()
	sf := s.findSource(file)
	funcs := s.fileFunctions(p, file)
	if f >= 0 {
		var own []fileFunc
		for _, ff := range funcs {
			if ff.f == f {
				own = append(own, ff)
			}
		}
		if len(own) == 0 { // an inlined function, or one without a declaration line
			fn := &p.Functions[f]
			own = []fileFunc{{f: f, obj: fn.Object, name: s.funcName(p, f), line: first}}
		}
		funcs = own
	} else {
		funcs = append(funcs, s.inlinedIn(p, lt, file)...)
		sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].line < funcs[j].line })
	}
	// Lines with code: those of the functions' line rows, and those with events.
	code := map[int]bool{}
	for _, ff := range funcs {
		if of := p.ObjectFile(ff.obj); of != nil && of.Debug != nil && ff.hi > ff.lo {
			for _, r := range of.Debug.Rows(ff.lo, ff.hi) {
				if r.File == file {
					code[r.Line] = true
				}
			}
		}
	}
	maxLine := 0
	for i, l := range lt.Lines {
		if l.File == file && nonZero(lt.Inclusive(i)) {
			code[l.Line] = true
		}
	}
	for l := range code {
		maxLine = max(maxLine, l)
	}
	if last == 0 {
		last = max(maxLine, len(sf.lines))
	}
	its := metricItems(s.metrics)
	type srcRow struct {
		line       int // 0 for a function header
		text       string
		excl, incl []int64
		hasValues  bool
		noLines    string // the function of a row of instructions without line numbers
	}
	var rows []srcRow
	zero := make([]int64, len(p.Metrics))
	header := func(ff fileFunc) {
		rows = append(rows, srcRow{text: "<Function: " + ff.name + ">"})
		if ff.f < 0 {
			return
		}
		if i := lt.Find(analysis.SourceLine{Func: ff.f}); i >= 0 && nonZero(lt.Inclusive(i)) {
			rows = append(rows, srcRow{text: "<Function: " + ff.name + ", instructions without line numbers>",
				excl: lt.Exclusive(i), incl: lt.Inclusive(i), hasValues: true, noLines: s.funcName(p, ff.f)})
		}
	}
	next := 0
	for n := first; n <= last; n++ {
		for next < len(funcs) && funcs[next].line <= n {
			if funcs[next].line >= first || f >= 0 {
				header(funcs[next])
			}
			next++
		}
		r := srcRow{line: n}
		if n-1 < len(sf.lines) {
			r.text = sf.lines[n-1]
		}
		if e, i, ok := lt.FileLine(file, n); ok {
			r.excl, r.incl, r.hasValues = e, i, true
		} else if code[n] {
			r.excl, r.incl, r.hasValues = zero, zero, true
		}
		rows = append(rows, r)
	}
	for ; next < len(funcs) && f < 0; next++ {
		header(funcs[next])
	}

	hot := hotLimits(its, len(rows), func(i int) *metricRow {
		return &metricRow{excl: rows[i].excl, incl: rows[i].incl}
	}, func(i int) bool { return rows[i].hasValues }, s.sthresh)
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
	width := len(strconv.Itoa(last))
	for _, r := range rows {
		mr := &metricRow{excl: r.excl, incl: r.incl}
		row := report.Row{Cells: blankCells(nblank), Line: r.line}
		if r.hasValues {
			row.Cells = rowCells(p, mr, its)
			row.Flag = hot.flag(mr)
			if cmp != nil {
				cr := cmp.lineRow(s, file, r.line)
				if r.line == 0 {
					cr = cmp.noLineRow(s, r.noLines)
				}
				row.Cells = cmp.cells(s, &cr, its)
			}
		}
		switch {
		case r.line == 0 && s.text():
			row.Name = strings.Repeat(" ", width+2) + r.text
		case s.text():
			row.Name = fmt.Sprintf("%*d. %s", width, r.line, r.text)
		default:
			row.Name = r.text
		}
		if !s.text() {
			row.Cells = append(row.Cells, report.Cell{Text: lineText(r.line)})
		}
		t.Rows = append(t.Rows, row)
	}
	if s.text() {
		s.printf("Source file: %s\n", displayPath(sf, file))
		if sf.path == "" || sf.err != nil {
			s.printf("%s\n", sf.notFound(file))
		}
		s.printObjects(p, funcs)
		s.printf("\n")
	} else if sf.path == "" || sf.err != nil {
		fmt.Fprintf(s.stderr, "er print: warning: %s\n", sf.notFound(file))
	}
	return s.table(t)
}

// printObjects prints the load objects of the functions of a listing.
func (s *session) printObjects(p *analysis.Profile, funcs []fileFunc) {
	seen := map[int]bool{}
	for _, ff := range funcs {
		if seen[ff.obj] {
			continue
		}
		seen[ff.obj] = true
		if of := p.ObjectFile(ff.obj); of != nil {
			s.printf("Object file: %s\n", of.Path)
		}
		s.printf("Load Object: %s\n", p.Objects[ff.obj].Name)
	}
}

func displayPath(sf *sourceFile, file string) string {
	if sf.path != "" && sf.path != file {
		return file + " (found as " + sf.path + ")"
	}
	return file
}

func lineText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func nonZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

func blankCells(n int) []report.Cell {
	cells := make([]report.Cell, n)
	for i := range cells {
		cells[i].Blank = true
	}
	return cells
}

// metricItems are the metric items of the list that are shown (not hidden, not name, size or
// address): the columns of annotated listings.
func metricItems(list []item) []item {
	var out []item
	for _, it := range shown(list) {
		if it.kind == itemMetric {
			out = append(out, it)
		}
	}
	return out
}

// annotatedTable is the table of an annotated source or disassembly listing: metric columns, a
// gutter for the hot mark, and the text; CSV and JSON get the line number as a column.
func (s *session) annotatedTable(its []item) *report.Table {
	t := &report.Table{Columns: s.columns(its), FlagWidth: 2}
	if !s.text() {
		t.Columns = append(t.Columns, report.Column{Title: "Line", Key: "line", Kind: report.Text})
		t.NameTitle = "Source"
	}
	return t
}

// hotLimit holds, per item, the smallest value that is hot: thresh percent of the largest value
// in the listing.
type hotLimit struct {
	its   []item
	limit []float64
}

func hotLimits(its []item, n int, row func(int) *metricRow, has func(int) bool, thresh float64) hotLimit {
	h := hotLimit{its: its, limit: make([]float64, len(its))}
	for j, it := range its {
		var top int64
		for i := 0; i < n; i++ {
			if has(i) {
				top = max(top, rowValue(row(i), it))
			}
		}
		h.limit[j] = float64(top) * thresh / 100
		if top == 0 {
			h.limit[j] = -1
		}
	}
	return h
}

// flag is "##" when one of r's values is hot.
func (h hotLimit) flag(r *metricRow) string {
	for j, it := range h.its {
		if v := rowValue(r, it); h.limit[j] >= 0 && v > 0 && float64(v) >= h.limit[j] {
			return "##"
		}
	}
	return ""
}
