package erprint

import (
	"er/internal/sat"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"er/internal/analysis"
	"er/internal/experiment"
	"er/internal/report"
)

// Selections and filters: which events the views aggregate. docs/filters.md describes the
// commands and the grammar.
//
// The sample, thread, LWP and CPU selections take a selection spec, [exp-list:]list[+...]; the
// experiment selection a list; filters an expression over the fields of an event. All of them
// must hold for an event to be shown. Changing one recomputes the profile.

// idRange is an inclusive range of ids.
type idRange struct{ lo, hi int64 }

// idSet is a set of ids: all of them, or a list of ranges; the zero value holds none.
type idSet struct {
	all    bool
	ranges []idRange
}

var allIDs = idSet{all: true}

func (m idSet) has(n int64) bool {
	if m.all {
		return true
	}
	for _, r := range m.ranges {
		if n >= r.lo && n <= r.hi {
			return true
		}
	}
	return false
}

// String writes the set as it is given: "all", "1,3-5", or "none".
func (m idSet) String() string {
	if m.all {
		return "all"
	}
	if len(m.ranges) == 0 {
		return "none"
	}
	parts := make([]string, len(m.ranges))
	for i, r := range m.ranges {
		parts[i] = strconv.FormatInt(r.lo, 10)
		if r.hi != r.lo {
			parts[i] += "-" + strconv.FormatInt(r.hi, 10)
		}
	}
	return strings.Join(parts, ",")
}

// parseIDSet parses "all" or a comma-separated list of numbers and ranges n-m.
func parseIDSet(s string) (idSet, error) {
	if strings.EqualFold(s, "all") {
		return allIDs, nil
	}
	if s == "" {
		return idSet{}, fmt.Errorf("an empty list")
	}
	var m idSet
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo)
		if err != nil {
			return idSet{}, fmt.Errorf("%q: %v", part, err)
		}
		b := a
		if isRange {
			if b, err = parseID(hi); err != nil {
				return idSet{}, fmt.Errorf("%q: %v", part, err)
			}
			if b < a {
				return idSet{}, fmt.Errorf("%q: the range ends before it starts", part)
			}
		}
		m.ranges = append(m.ranges, idRange{a, b})
	}
	return m, nil
}

func parseID(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("a number is missing")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number (0 or more)", s)
	}
	return n, nil
}

// selTerm selects the items of a set from the experiments of a set.
type selTerm struct{ exps, items idSet }

// selSpec is a selection of samples, threads, LWPs or CPUs: the union of its terms. The zero
// value selects everything.
type selSpec struct {
	text  string // as given; "" for the default, all
	terms []selTerm
}

func (sp selSpec) isAll() bool {
	if sp.text == "" {
		return true
	}
	for _, t := range sp.terms {
		if t.exps.all && t.items.all {
			return true
		}
	}
	return false
}

// has reports whether the spec selects item n of experiment exp (from 1).
func (sp selSpec) has(exp, n int64) bool {
	if sp.text == "" {
		return true
	}
	for _, t := range sp.terms {
		if t.exps.has(exp) && t.items.has(n) {
			return true
		}
	}
	return false
}

// forExp describes what the spec selects in experiment exp: "all", "none", or the lists.
func (sp selSpec) forExp(exp int64) string {
	if sp.text == "" {
		return "all"
	}
	var parts []string
	for _, t := range sp.terms {
		if !t.exps.has(exp) {
			continue
		}
		if t.items.all {
			return "all"
		}
		parts = append(parts, t.items.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// parseSelSpec parses [exp-list:]list[+[exp-list:]list...]; blanks are ignored. nexps is the
// number of loaded experiments: an experiment list may name no other.
func parseSelSpec(s string, nexps int) (selSpec, error) {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	if s == "" {
		return selSpec{}, fmt.Errorf("the selection is empty")
	}
	sp := selSpec{text: s}
	for _, part := range strings.Split(s, "+") {
		t := selTerm{exps: allIDs}
		items := part
		if e, rest, ok := strings.Cut(part, ":"); ok {
			exps, err := parseIDSet(e)
			if err != nil {
				return selSpec{}, fmt.Errorf("experiment list %q: %v", e, err)
			}
			if err := checkExps(exps, nexps); err != nil {
				return selSpec{}, err
			}
			t.exps, items = exps, rest
		}
		m, err := parseIDSet(items)
		if err != nil {
			return selSpec{}, fmt.Errorf("list %q: %v", items, err)
		}
		t.items = m
		sp.terms = append(sp.terms, t)
	}
	return sp, nil
}

// checkExps checks that a list of experiments names loaded experiments only.
func checkExps(m idSet, nexps int) error {
	for _, r := range m.ranges {
		if r.lo < 1 || r.hi > int64(nexps) {
			return fmt.Errorf("experiment ids are 1 to %d (experiment_list shows them), not %s", nexps, idSet{ranges: []idRange{r}})
		}
	}
	return nil
}

// selection is everything that selects events: the select commands and the filter expression.
type selection struct {
	samples, threads, lwps, cpus selSpec
	exps                         idSet // experiment_select; the zero value (before any) is all
	expsSet                      bool
	filterText                   string // "" when there is no filter
	filter                       evalFn
	stacks                       bool // the filter looks at call stacks
}

func (sel *selection) expSelected(exp int64) bool { return !sel.expsSet || sel.exps.has(exp) }

// isAll reports whether the selection selects every event.
func (sel *selection) isAll() bool {
	return sel.samples.isAll() && sel.threads.isAll() && sel.lwps.isAll() && sel.cpus.isAll() &&
		(!sel.expsSet || sel.exps.all) && sel.filter == nil
}

// match reports whether an event is selected. An event that records no CPU (tracing) is in no CPU
// selection but all.
func (sel *selection) match(ev *analysis.EventInfo) bool {
	exp := int64(ev.Exp + 1)
	if !sel.expSelected(exp) || !sel.samples.has(exp, int64(ev.Sample)) || !sel.threads.has(exp, int64(ev.Thread)) ||
		!sel.lwps.has(exp, int64(ev.Tid)) {
		return false
	}
	if !sel.cpus.isAll() && (ev.CPU < 0 || !sel.cpus.has(exp, ev.CPU)) {
		return false
	}
	return sel.filter == nil || sel.filter(ev) != 0
}

// eventFilter is the filter of analysis.Options: nil when everything is selected.
func (s *session) eventFilter() func(*analysis.EventInfo) bool {
	if s.sel.isAll() {
		return nil
	}
	sel := s.sel
	return sel.match
}

// selectionChanged drops the profile: the next view refilters the profile of all events with
// the new selection. Function numbers stay, and so do the names made of them; the call-stack
// fragment goes, as it may name functions the selection leaves out.
func (s *session) selectionChanged() {
	s.prof, s.fragment, s.cmpProfiles = nil, nil, nil
}

// expKey identifies a loaded experiment: its data, at its place in the list.
type expKey struct {
	d *experiment.Data
	i int
}

// expIndex returns the index of loaded experiment i (from 0), made on first use.
func (s *session) expIndex(i int) *analysis.ExpIndex {
	k := expKey{s.exps[i], i}
	if x, ok := s.indexes[k]; ok {
		return x
	}
	if s.indexes == nil || len(s.indexes) > 4*len(s.exps) { // experiments were dropped or reloaded
		s.indexes = map[expKey]*analysis.ExpIndex{}
	}
	x := analysis.NewExpIndex(i, s.exps[i])
	s.indexes[k] = x
	return x
}

// eachEvent calls fn for every event of experiment i that the selection keeps, with the CPU time it
// stands for (clock samples; 0 for tracing events) and the thread time (a clock event's, on or off
// a CPU: its period; 0 for tracing events).
func (s *session) eachEvent(i int, fn func(ev *analysis.EventInfo, cpu, thread int64)) {
	x := s.expIndex(i)
	d := x.Data()
	all := s.sel.isAll()
	var base *analysis.Profile // for a filter on call stacks: each event's stack
	if s.sel.stacks {
		if _, err := s.profile(); err == nil {
			base = s.base
		}
	}
	var ev analysis.EventInfo
	for _, k := range analysis.Kinds {
		var stacks, raws []int32
		if base != nil {
			stacks, raws = base.EventStacks(i, k.ID), base.EventRaws(i, k.ID)
		}
		var cpus, threads []int64
		if k.CPUTime != nil {
			cpus = k.CPUTime(x)
		}
		if k.ID == analysis.DataClock {
			threads = x.ClockPeriods()
		}
		for j, n := 0, k.Len(d); j < n; j++ {
			x.Event(k.ID, j, &ev)
			if j < len(stacks) && stacks[j] >= 0 {
				ev.Stack, ev.Raw, ev.Prof = stacks[j], raws[j], base
			}
			if !all && !s.sel.match(&ev) {
				continue
			}
			var cpu, thread int64
			if cpus != nil {
				cpu = cpus[j]
			}
			if threads != nil {
				thread = threads[j]
			}
			fn(&ev, cpu, thread)
		}
	}
}

// The select commands.

func (s *session) sampleSelect(args []string) error {
	return s.selectItems("sample_select", args, &s.sel.samples, func(i int) int { return len(s.expIndex(i).Samples()) })
}

func (s *session) threadSelect(args []string) error {
	return s.selectItems("thread_select", args, &s.sel.threads, func(i int) int { return len(s.expIndex(i).Threads()) })
}

func (s *session) lwpSelect(args []string) error {
	return s.selectItems("lwp_select", args, &s.sel.lwps, func(i int) int { return len(s.expIndex(i).Threads()) })
}

func (s *session) cpuSelect(args []string) error {
	return s.selectItems("cpu_select", args, &s.sel.cpus, func(i int) int { return len(cpusOf(s.exps[i])) })
}

// selectItems sets one of the selections and shows, in text mode, what it selects in each experiment.
func (s *session) selectItems(cmd string, args []string, dst *selSpec, total func(i int) int) error {
	spec := ""
	if len(args) > 0 {
		spec = args[0]
	}
	sp, err := parseSelSpec(spec, len(s.exps))
	if err != nil {
		return usagef("%s %s: %v; expected all, or [experiments:]list such as 1,3-5 or 2:1-4+3:all", cmd, spec, err)
	}
	*dst = sp
	s.selectionChanged()
	if !s.text() {
		return nil
	}
	t := &report.Table{Columns: []report.Column{
		{Title: "Exp", Key: "exp", Kind: report.Text},
		{Title: "Sel", Key: "sel", Kind: report.Text, Left: true},
		{Title: "Total", Key: "total", Kind: report.Count, Value: true},
	}}
	for i := range s.exps {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{
			{Text: strconv.Itoa(i + 1)}, {Text: sp.forExp(int64(i + 1))}, {Value: int64(total(i))}}})
	}
	return s.table(t)
}

func (s *session) experimentSelect(args []string) error {
	spec := strings.Join(strings.Fields(strings.Join(args, "")), "")
	m, err := parseIDSet(spec)
	if err == nil {
		err = checkExps(m, len(s.exps))
	}
	if err != nil {
		return usagef("experiment_select %s: %v; expected all, or a list of experiment ids such as 1,3-5", spec, err)
	}
	s.sel.exps, s.sel.expsSet = m, true
	s.selectionChanged()
	if !s.text() {
		return nil
	}
	return s.experimentList(nil)
}

// filters sets the filter expression; none, or nothing, removes it.
func (s *session) filters(args []string) error {
	text := strings.TrimSpace(strings.Join(args, " "))
	var sets []*funcSet
	if text == "" || strings.EqualFold(text, "none") {
		s.sel.filter, s.sel.filterText, s.sel.stacks = nil, "", false
	} else {
		c, err := compileFilter(text, &filterEnv{style: &s.style, ctx: &s.ctx})
		if err != nil {
			return usagef("filters %s: %v", clip(text, 80), err)
		}
		s.sel.filter, s.sel.filterText, s.sel.stacks = c.eval, text, c.stacks
		sets = c.sets
	}
	s.selectionChanged()
	if len(sets) > 0 && len(s.exps) > 0 { // a misspelt name selects nothing: say so
		if _, err := s.profile(); err == nil {
			for _, fs := range sets {
				if fs.resolve(s.base); len(fs.list) == 0 {
					fmt.Fprintf(s.stderr, "er print: warning: filters: %s names no function of the loaded experiments (functions lists them): it matches none\n", fs.what)
				}
			}
		}
	}
	if s.text() {
		if s.sel.filterText == "" {
			s.printf("Current filter: none\n")
		} else {
			s.printf("Current filter: %s\n", s.sel.filterText)
		}
	}
	return nil
}

// clip shortens s to at most n bytes and says how long it was, for an error that quotes input.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}

// cpusOf lists the CPUs of an experiment's clock samples.
func cpusOf(d *experiment.Data) []uint32 {
	seen := map[uint32]bool{}
	var cpus []uint32
	ck := d.ClockTable()
	for i := range ck.Len() {
		if c := uint32(ck.CPUAt(i)); !seen[c] {
			seen[c] = true
			cpus = append(cpus, c)
		}
	}
	sort.Slice(cpus, func(a, b int) bool { return cpus[a] < cpus[b] })
	return cpus
}

// Filter expressions.

// evalFn computes an expression for one event; a condition is true when not 0.
type evalFn func(ev *analysis.EventInfo) int64

// filterField is a name usable in filter expressions.
type filterField struct {
	name string
	help string
	get  evalFn
}

var filterFields = []filterField{
	{"EXPID", "experiment id, from 1, in load order (experiment_list; experiment_select)",
		func(ev *analysis.EventInfo) int64 { return int64(ev.Exp + 1) }},
	{"PID", "process id", func(ev *analysis.EventInfo) int64 { return int64(ev.Pid) }},
	{"LWPID", "thread id, as Linux numbers threads (thread_list's TID; lwp_select)",
		func(ev *analysis.EventInfo) int64 { return int64(ev.Tid) }},
	{"THRID", "thread number in its experiment, from 1 (thread_list's Thread; thread_select)",
		func(ev *analysis.EventInfo) int64 { return int64(ev.Thread) }},
	{"CPUID", "CPU the event was taken on; -1 when the event records none (cpu_list; cpu_select)",
		func(ev *analysis.EventInfo) int64 { return ev.CPU }},
	{"SAMPLE", "sample number (sample_list; sample_select)", func(ev *analysis.EventInfo) int64 { return int64(ev.Sample) }},
	{"TSTAMP", "time of the event, ns since the experiment's start (for a traced call, when it returned)",
		func(ev *analysis.EventInfo) int64 { return ev.Time }},
	{"TSTAMP_LO", "start of the event, ns: TSTAMP - EVT_TIME", func(ev *analysis.EventInfo) int64 { return ev.Time - ev.Dur }},
	{"TSTAMP_HI", "end of the event, ns: TSTAMP", func(ev *analysis.EventInfo) int64 { return ev.Time }},
	{"EVT_TIME", "duration of the event, ns: a synchronization wait, an I/O call; 0 for others",
		func(ev *analysis.EventInfo) int64 { return ev.Dur }},
	{"OMPSTATE", analysis.OMPStateHelp, analysis.OMPState},
}

// lookupField returns the field named name, nil for none, and, for a field of some kinds' events
// (analysis.Kind.Columns), which kinds' (nil for a field of every event).
func lookupField(name string) (*filterField, []bool) {
	for i := range filterFields {
		if strings.EqualFold(filterFields[i].name, name) {
			return &filterFields[i], nil
		}
	}
	// A field of one or more kinds' events (analysis.Kind.Columns): a filter that names it selects
	// none of the other kinds' events (compileFilter), which read 0 in it.
	cols := make([]int, len(analysis.Kinds))
	kinds := make([]bool, len(analysis.Kinds))
	var f *filterField
	for _, k := range analysis.Kinds {
		cols[k.ID] = k.Col(name)
		kinds[k.ID] = cols[k.ID] >= 0
		if cols[k.ID] >= 0 && f == nil {
			f = &filterField{name: k.Columns[cols[k.ID]].Name}
		}
	}
	if f != nil {
		// The column of the last experiment and kind, bound to its table: a filter reads one
		// kind's events of one experiment after another.
		var lastData *experiment.Data
		var lastKind analysis.DataKind
		var get func(i int) int64
		f.get = func(ev *analysis.EventInfo) int64 {
			if int(ev.Kind) >= len(cols) || cols[ev.Kind] < 0 || ev.Data == nil {
				return 0
			}
			if get == nil || ev.Data != lastData || ev.Kind != lastKind {
				lastData, lastKind = ev.Data, ev.Kind
				get = analysis.Kinds[ev.Kind].Columns[cols[ev.Kind]].Of(ev.Data)
			}
			return get(ev.Index)
		}
	}
	return f, kinds
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tName
	tOp
	tStr // "text", with \" and \\ inside; INSTK's name as written
)

type token struct {
	kind tokKind
	text string
	num  int64
	str  string // a string's text
	pos  int    // byte offset in the expression, from 0
}

// operators, longest first where one is a prefix of another.
var operators = []string{"||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "<", ">", "!", "~", "+", "-", "*", "/", "%",
	"&", "|", "^", "?", ":", "(", ")", ","}

func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (isAlnum(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(src[i:], "0x")) {
				j++
			}
			n, err := parseNumber(src[i:j])
			if err != nil {
				return nil, fmt.Errorf("at column %d: %v", i+1, err)
			}
			toks = append(toks, token{kind: tNum, text: src[i:j], num: n, pos: i})
			i = j
		case isAlnum(c):
			j := i
			for j < len(src) && isAlnum(src[j]) {
				j++
			}
			toks = append(toks, token{kind: tName, text: src[i:j], pos: i})
			i = j
			if strings.EqualFold(toks[len(toks)-1].text, "INSTK") {
				more, next, err := lexInstk(src, i)
				if err != nil {
					return nil, err
				}
				toks, i = append(toks, more...), next
			}
		case c == '"':
			t, next, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			toks, i = append(toks, t), next
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if c == '=' {
					return nil, fmt.Errorf("at column %d: \"=\" is not an operator; compare with ==", i+1)
				}
				return nil, fmt.Errorf("at column %d: unexpected %q", i+1, src[i:i+1])
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

// lexString reads the string in double quotes at src[i]: \" is a quote, \\ a backslash, and a
// backslash before anything else stays (a regular expression's \. or \d).
func lexString(src string, i int) (token, int, error) {
	var b strings.Builder
	for j := i + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			return token{kind: tStr, text: src[i : j+1], str: b.String(), pos: i}, j + 1, nil
		case c == '\\' && j+1 < len(src) && (src[j+1] == '"' || src[j+1] == '\\'):
			b.WriteByte(src[j+1])
			j++
		default:
			b.WriteByte(c)
		}
	}
	return token{}, 0, fmt.Errorf("at column %d: the string does not end: a \" is missing", i+1)
}

// lexInstk reads INSTK's argument after the name, which ends at src[i]: "(name)" where the name
// is everything up to the parenthesis that closes the first (C++ names hold parentheses, commas
// and operators), or a string in double quotes. It returns the tokens "(", the name, ")".
func lexInstk(src string, i int) ([]token, int, error) {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i >= len(src) || src[i] != '(' {
		return nil, i, nil // the parser says what is missing
	}
	open := i
	j := i + 1
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	if j < len(src) && src[j] == '"' {
		return []token{{kind: tOp, text: "(", pos: open}}, j, nil
	}
	depth := 1
	for k := j; k < len(src); k++ {
		switch src[k] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				name := strings.TrimSpace(src[j:k])
				return []token{{kind: tOp, text: "(", pos: open}, {kind: tStr, text: name, str: name, pos: j},
					{kind: tOp, text: ")", pos: k}}, k + 1, nil
			}
		}
	}
	return nil, 0, fmt.Errorf("at column %d: INSTK's ( is not closed", open+1)
}

func isAlnum(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseNumber reads a decimal or 0x hexadecimal integer, or a decimal number with a fraction or an
// exponent whose value is whole (1.5e9).
func parseNumber(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return n, nil
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, fmt.Errorf("%s is not a whole number: fields are integers (TSTAMP is in nanoseconds)", s)
	}
	return int64(f), nil
}

// maxFilterDepth bounds how deeply a filter expression nests: parentheses, unary operators, ?: and
// IN lists inside one another, and chains of binary operators (which evaluate recursively). Without
// it, 200,000 parentheses overflow the Go stack.
const maxFilterDepth = 1000

// exprParser is a precedence-climbing parser of C expressions with C's precedence, and the
// operators IN, SOME IN and ORDERED IN (stackfilter.go).
type exprParser struct {
	toks  []token
	i     int
	src   string
	nest  int // parentheses, unary operators, ?: and IN lists open around the current token
	env   *filterEnv
	memos []*stackMemo // of the stack operations
	sets  []*funcSet   // FNAME and INSTK
	kinds []bool       // the kinds whose events have every kind's field named (lookupField); nil: all
}

// node is a compiled subexpression and the depth of its evaluation: 0 for a number or a field.
// A scalar has f; a list or a set has items. stk says it depends on the event's call stack, event
// on its other fields.
type node struct {
	f     evalFn
	d     int
	kind  nodeKind
	items []setItem
	stk   bool
	event bool
	open  bool  // an expression of the stack alone whose value is not remembered yet (seal)
	modes uint8 // the view modes of the stacks it reads (USTACK, XSTACK, MSTACK: 1 << analysis.ViewMode)
}

// compiledFilter is a filter expression compiled.
type compiledFilter struct {
	eval   evalFn
	stacks bool         // it looks at call stacks: its events need theirs (analysis.EventInfo.Stack)
	memos  []*stackMemo // the stack operations' values by stack
	sets   []*funcSet   // FNAME and INSTK, to say which name no function
}

// parseFilter compiles a filter expression, FNAME matching long names.
func parseFilter(src string) (evalFn, error) {
	c, err := compileFilter(src, nil)
	if err != nil {
		return nil, err
	}
	return c.eval, nil
}

// compileFilter compiles a filter expression whose FNAMEs match names in env's style.
func compileFilter(src string, env *filterEnv) (*compiledFilter, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = &filterEnv{}
	}
	p := &exprParser{toks: toks, src: src, env: env}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "expected an operator")
	}
	if err := p.scalar(n, toks[0]); err != nil {
		return nil, err
	}
	if len(p.sets) > maxFilterSets {
		return nil, fmt.Errorf("the expression has %d FNAME and INSTK terms; at most %d are allowed (each is matched against every function's name): "+
			"join names into one regular expression, FNAME(\"a|b|c\") SOME IN USTACK", len(p.sets), maxFilterSets)
	}
	n = p.seal(n)
	eval := n.f
	if kinds := p.kinds; kinds != nil {
		// A filter on a field of some kinds' events selects only events of those kinds: "HSIZE <
		// 100" the small allocations, not every clock sample too.
		all := eval
		eval = func(ev *analysis.EventInfo) int64 {
			if int(ev.Kind) >= len(kinds) || !kinds[ev.Kind] {
				return 0
			}
			return all(ev)
		}
	}
	return &compiledFilter{eval: eval, stacks: n.stk, memos: p.memos, sets: p.sets}, nil
}

// maxFilterSets bounds the FNAME and INSTK terms of a filter expression: each is matched against
// the name of every function of the profile, and looked for in every distinct stack.
const maxFilterSets = 1000

// combine is the node of the operation that build makes of the evaluations of ns, starting at
// token t. An operation on the call stack alone (stk, not event) is not remembered per stack in
// each of its parts but in the largest such expression (seal): a filter of 200 FNAME(...) SOME IN
// USTACK terms joined by || looks up one value per event, where it looked up 200.
func (p *exprParser) combine(t token, build func(f ...evalFn) evalFn, ns ...node) (node, error) {
	n, err := p.join(t, nil, ns...)
	if err != nil {
		return node{}, err
	}
	fs := make([]evalFn, len(ns))
	for i, c := range ns {
		if n.stk && !n.event {
			fs[i] = c.f // not sealed: this node remembers the whole
		} else {
			fs[i] = p.seal(c).f
		}
	}
	n.f = build(fs...)
	n.open = n.stk && !n.event
	return n, nil
}

// seal makes n, when it is an expression of the call stack alone that nothing remembers yet,
// remember its value for each stack.
func (p *exprParser) seal(n node) node {
	if !n.open {
		return n
	}
	m := &stackMemo{env: p.env, modes: n.modes}
	p.memos = append(p.memos, m)
	f := n.f
	n.f = func(ev *analysis.EventInfo) int64 { return m.get(ev, f) }
	n.open = false
	return n
}

// scalar checks that n, which starts at token t, is a number, not a list, a set or a stack.
func (p *exprParser) scalar(n node, t token) error {
	if n.kind == scalarNode {
		return nil
	}
	return p.errAt(t, fmt.Sprintf("%s is not a number: compare it with IN, SOME IN or ORDERED IN (FNAME(\"f\") SOME IN USTACK)", n.kind))
}

func (p *exprParser) peek() token { return p.toks[p.i] }
func (p *exprParser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *exprParser) errAt(t token, what string) error {
	if t.kind == tEOF {
		return fmt.Errorf("the expression ends too soon: %s", what)
	}
	return fmt.Errorf("at column %d (%q): %s", t.pos+1, t.text, what)
}

// tooDeep is the error for an expression nesting deeper than maxFilterDepth at token t.
func (p *exprParser) tooDeep(t token) error {
	return p.errAt(t, fmt.Sprintf("the expression nests deeper than %d levels (parentheses, unary operators, ?:, IN lists, "+
		"or a chain of binary operators); write it with fewer levels, or split it", maxFilterDepth))
}

// enter opens one more nesting level at token t; leave closes it.
func (p *exprParser) enter(t token) error {
	if p.nest++; p.nest > maxFilterDepth {
		return p.tooDeep(t)
	}
	return nil
}

func (p *exprParser) leave() { p.nest-- }

// join is the node of f over subexpressions ns, one level deeper than the deepest, or the error
// for one too deep at token t.
func (p *exprParser) join(t token, f evalFn, ns ...node) (node, error) {
	d := 0
	for _, n := range ns {
		d = max(d, n.d)
	}
	if d+1 > maxFilterDepth {
		return node{}, p.tooDeep(t)
	}
	n := node{f: f, d: d + 1}
	for _, m := range ns {
		n.stk, n.event, n.modes = n.stk || m.stk, n.event || m.event, n.modes|m.modes
	}
	return n, nil
}

func (p *exprParser) isOp(ops ...string) (string, bool) {
	t := p.peek()
	if t.kind != tOp {
		return "", false
	}
	for _, o := range ops {
		if t.text == o {
			return o, true
		}
	}
	return "", false
}

// expr := cond; cond := lor ['?' expr ':' cond].
func (p *exprParser) expr() (node, error) {
	start := p.peek()
	cn, err := p.binary(0)
	if err != nil {
		return node{}, err
	}
	if _, ok := p.isOp("?"); !ok {
		return cn, nil
	}
	if err := p.scalar(cn, start); err != nil {
		return node{}, err
	}
	q := p.next()
	if err := p.enter(q); err != nil {
		return node{}, err
	}
	defer p.leave()
	at := p.peek()
	an, err := p.expr()
	if err != nil {
		return node{}, err
	}
	if err := p.scalar(an, at); err != nil {
		return node{}, err
	}
	if _, ok := p.isOp(":"); !ok {
		return node{}, p.errAt(p.peek(), "expected : of ?:")
	}
	p.next()
	bt := p.peek()
	bn, err := p.expr()
	if err != nil {
		return node{}, err
	}
	if err := p.scalar(bn, bt); err != nil {
		return node{}, err
	}
	return p.combine(q, func(f ...evalFn) evalFn {
		c, a, b := f[0], f[1], f[2]
		return func(ev *analysis.EventInfo) int64 {
			if c(ev) != 0 {
				return a(ev)
			}
			return b(ev)
		}
	}, cn, an, bn)
}

// levels are the binary operators from the loosest to the tightest, as in C.
var levels = [][]string{{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

const relLevel = 6 // where "x IN (list)" binds

func (p *exprParser) binary(level int) (node, error) {
	if level == len(levels) {
		return p.unary()
	}
	lt := p.peek()
	l, err := p.binary(level + 1)
	if err != nil {
		return node{}, err
	}
	for {
		if level == relLevel {
			n, ok, err := p.stackOpAt(l)
			if err != nil {
				return node{}, err
			}
			if ok {
				l = n
				continue
			}
		}
		op, ok := p.isOp(levels[level]...)
		if !ok {
			return l, nil
		}
		if err := p.scalar(l, lt); err != nil {
			return node{}, err
		}
		t := p.next()
		rt := p.peek()
		r, err := p.binary(level + 1)
		if err != nil {
			return node{}, err
		}
		if err := p.scalar(r, rt); err != nil {
			return node{}, err
		}
		if l, err = p.combine(t, func(f ...evalFn) evalFn { return binaryOp(op, f[0], f[1]) }, l, r); err != nil {
			return node{}, err
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func binaryOp(op string, l, r evalFn) evalFn {
	switch op {
	case "||":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) != 0 || r(ev) != 0) }
	case "&&":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) != 0 && r(ev) != 0) }
	case "|":
		return func(ev *analysis.EventInfo) int64 { return l(ev) | r(ev) }
	case "^":
		return func(ev *analysis.EventInfo) int64 { return l(ev) ^ r(ev) }
	case "&":
		return func(ev *analysis.EventInfo) int64 { return l(ev) & r(ev) }
	case "==":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) == r(ev)) }
	case "!=":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) != r(ev)) }
	case "<":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) < r(ev)) }
	case "<=":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) <= r(ev)) }
	case ">":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) > r(ev)) }
	case ">=":
		return func(ev *analysis.EventInfo) int64 { return b2i(l(ev) >= r(ev)) }
	case "<<":
		return func(ev *analysis.EventInfo) int64 { return l(ev) << (uint64(r(ev)) & 63) }
	case ">>":
		return func(ev *analysis.EventInfo) int64 { return l(ev) >> (uint64(r(ev)) & 63) }
	case "+":
		return func(ev *analysis.EventInfo) int64 { return l(ev) + r(ev) }
	case "-":
		return func(ev *analysis.EventInfo) int64 { return l(ev) - r(ev) }
	case "*":
		return func(ev *analysis.EventInfo) int64 { return l(ev) * r(ev) }
	case "/":
		return func(ev *analysis.EventInfo) int64 {
			d := r(ev)
			if d == 0 || d == -1 {
				return l(ev) * d // x/0 is 0; x/-1 without overflowing a trap
			}
			return l(ev) / d
		}
	case "%":
		return func(ev *analysis.EventInfo) int64 {
			d := r(ev)
			if d == 0 || d == -1 {
				return 0
			}
			return l(ev) % d
		}
	}
	panic("unknown operator " + op)
}

// unary := ('!' | '-' | '+' | '~') unary | primary.
func (p *exprParser) unary() (node, error) {
	if op, ok := p.isOp("!", "-", "+", "~"); ok {
		t := p.next()
		if err := p.enter(t); err != nil {
			return node{}, err
		}
		defer p.leave()
		at := p.peek()
		en, err := p.unary()
		if err != nil {
			return node{}, err
		}
		if err := p.scalar(en, at); err != nil {
			return node{}, err
		}
		switch op {
		case "!":
			return p.combine(t, func(f ...evalFn) evalFn {
				e := f[0]
				return func(ev *analysis.EventInfo) int64 { return b2i(e(ev) == 0) }
			}, en)
		case "-":
			return p.combine(t, func(f ...evalFn) evalFn {
				e := f[0]
				return func(ev *analysis.EventInfo) int64 { return -e(ev) }
			}, en)
		case "~":
			return p.combine(t, func(f ...evalFn) evalFn {
				e := f[0]
				return func(ev *analysis.EventInfo) int64 { return ^e(ev) }
			}, en)
		}
		return en, nil
	}
	return p.primary()
}

// primary := number | field | LEAF | USTACK | XSTACK | MSTACK | FNAME '(' string ')' |
// INSTK '(' name ')' | '(' expr { ',' expr } ')'.
func (p *exprParser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		n := t.num
		return node{f: func(*analysis.EventInfo) int64 { return n }}, nil
	case tStr:
		return node{}, p.errAt(t, `a string goes in FNAME("regexp") or INSTK("name")`)
	case tName:
		switch strings.ToUpper(t.text) {
		case "FNAME", "INSTK":
			return p.fname(t)
		case "LEAF":
			return node{f: leafOf, stk: true}, nil
		case "USTACK", "XSTACK", "MSTACK":
			return node{kind: stackNode, stk: true}, nil
		}
		f, kinds := lookupField(t.text)
		if f == nil {
			return node{}, fmt.Errorf("at column %d: unknown field %q; the fields are %s (describe says more)", t.pos+1, t.text, fieldNames())
		}
		if kinds != nil {
			if p.kinds == nil {
				p.kinds = slices.Clone(kinds)
			}
			for k := range p.kinds {
				p.kinds[k] = p.kinds[k] && kinds[k]
			}
		}
		return node{f: f.get, event: true}, nil
	case tOp:
		if t.text == "(" {
			if err := p.enter(t); err != nil {
				return node{}, err
			}
			defer p.leave()
			e, err := p.expr()
			if err != nil {
				return node{}, err
			}
			if _, ok := p.isOp(","); ok {
				return p.list(t, e)
			}
			if _, ok := p.isOp(")"); !ok {
				return node{}, p.errAt(p.peek(), "expected )")
			}
			p.next()
			return e, nil
		}
	}
	return node{}, p.errAt(t, "expected a number, a field or (")
}

// list parses the rest of "(e, e, ...)" after its first item first, at the comma: a list of
// numbers and sets of functions, for the left of IN, SOME IN or ORDERED IN. The items after the
// first bind tighter than those operators, so that the operator may come inside the parentheses, as
// the Oracle manual writes it: (FNAME("a"), FNAME("b") IN USTACK) is ((FNAME("a"), FNAME("b")) IN USTACK).
func (p *exprParser) list(open token, first node) (node, error) {
	ns := []node{first}
	for {
		if _, ok := p.isOp(","); !ok {
			break
		}
		p.next()
		e, err := p.binary(relLevel + 1)
		if err != nil {
			return node{}, err
		}
		ns = append(ns, e)
	}
	n, err := p.listOf(open, ns)
	if err != nil {
		return node{}, err
	}
	if op, ok, err := p.stackOpAt(n); err != nil {
		return node{}, err
	} else if ok {
		n = op
	}
	if _, ok := p.isOp(")"); !ok {
		return node{}, p.errAt(p.peek(), "expected , or ) in the list")
	}
	p.next()
	return n, nil
}

// listOf is the list node of ns, whose parenthesis is open.
func (p *exprParser) listOf(open token, ns []node) (node, error) {
	var items []setItem
	for _, e := range ns {
		switch e.kind {
		case scalarNode:
			items = append(items, setItem{val: e.f})
		case setNode:
			items = append(items, e.items...)
		default:
			return node{}, p.errAt(open, fmt.Sprintf("the list holds %s; a list holds numbers and FNAME(...)", e.kind))
		}
	}
	n, err := p.join(open, nil, ns...)
	n.kind, n.items = listNode, items
	return n, err
}

func fieldNames() string {
	names := make([]string, len(filterFields))
	for i, f := range filterFields {
		names[i] = f.name
	}
	return strings.Join(append(names, kindFieldNames()...), ", ")
}

// kindFieldNames lists the fields of the kinds' events (analysis.Kind.Columns), each once.
func kindFieldNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, k := range analysis.Kinds {
		for _, c := range k.Columns {
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// describe lists the fields of filter expressions, and what each experiment recorded of them.
func (s *session) describe(_ []string) error {
	s.printf("Fields of filter expressions (names are case-insensitive):\n")
	w := 0
	for _, f := range filterFields {
		w = max(w, len(f.name))
	}
	for _, f := range filterFields {
		s.printf("%s", wrapHelp(fmt.Sprintf("  %-*s  %s", w, f.name, f.help), w+4))
	}
	s.printf("\nFields of one kind's events (a filter that names one selects none of the other kinds' events):\n")
	for _, k := range analysis.Kinds {
		for _, c := range k.Columns {
			w = max(w, len(c.Name))
		}
	}
	for _, k := range analysis.Kinds {
		for _, c := range k.Columns {
			s.printf("%s", wrapHelp(fmt.Sprintf("  %-*s  %s: %s", w, c.Name, k.Title, c.Help), w+4))
		}
	}
	s.printf("\nOperators, as in C and with C's precedence: || && | ^ & == != < <= > >= << >> + - * / %% ! ~ ?:,\n")
	s.printf("and x IN (a, b, ...). Numbers are integers: 42, 0x2a, 1.5e9.\n")
	s.printf("\nCall stacks: USTACK, XSTACK, MSTACK (the event's stack in the user, expert and machine view modes, whatever\n")
	s.printf("viewmode shows; the same for native code), LEAF (the leaf function's id of the stack viewmode shows),\n")
	s.printf("FNAME(\"regexp\") (the functions whose whole name, as the name command shows names, matches), function\n")
	s.printf("ids (printmode json's id); L IN S (every function of L is in S), L SOME IN S (one is), L ORDERED IN S\n")
	s.printf("(L's items are consecutive frames, callers first); INSTK(name): the function named name is on the stack\n")
	s.printf("viewmode shows. Examples: FNAME(\"work.*\") SOME IN USTACK, (FNAME(\"main\"), FNAME(\"work\")) ORDERED IN\n")
	s.printf("USTACK, LEAF IN (FNAME(\"memcpy\")), INSTK(main).\n")
	for i, d := range s.exps {
		prog := ""
		if len(d.Log.Command) > 0 {
			prog = d.Log.Command[0]
		}
		s.printf("\nExperiment %d: %s [%s, PID %d]\n", i+1, s.dirs[i], prog, d.Log.Pid)
		x := s.expIndex(i)
		var ev analysis.EventInfo
		some := false
		for _, k := range analysis.Kinds {
			n := k.Len(d)
			if n == 0 {
				continue
			}
			some = true
			lo := make([]int64, len(filterFields))
			hi := make([]int64, len(filterFields))
			for j := 0; j < n; j++ {
				x.Event(k.ID, j, &ev)
				for f := range filterFields {
					v := filterFields[f].get(&ev)
					if j == 0 || v < lo[f] {
						lo[f] = v
					}
					if j == 0 || v > hi[f] {
						hi[f] = v
					}
				}
			}
			s.printf("  %s: %d events\n", k.Title, n)
			for f, ff := range filterFields {
				switch {
				case ff.name == "CPUID" && !k.HasCPU, // -1: no CPU recorded
					(ff.name == "EVT_TIME" || ff.name == "TSTAMP_LO") && !k.Timed, // 0, and TSTAMP
					ff.name == "TSTAMP_HI",              // TSTAMP
					ff.name == "OMPSTATE" && hi[f] == 0: // not an OpenMP program
					continue
				}
				s.printf("    %-*s  %s\n", w, ff.name, valueRange(lo[f], hi[f]))
			}
			for _, c := range k.Columns {
				var lo, hi int64
				for j := 0; j < n; j++ {
					v := c.Get(d, j)
					if j == 0 || v < lo {
						lo = v
					}
					if j == 0 || v > hi {
						hi = v
					}
				}
				s.printf("    %-*s  %s\n", w, c.Name, valueRange(lo, hi))
			}
		}
		if !some {
			s.printf("  no events\n")
		}
	}
	return nil
}

// valueRange prints "lo", or "lo to hi".
func valueRange(lo, hi int64) string {
	rng := strconv.FormatInt(lo, 10)
	if hi != lo {
		rng += " to " + strconv.FormatInt(hi, 10)
	}
	return rng
}

// wrapHelp breaks line at spaces before column 100, continuing at column indent, and ends it with a
// newline.
func wrapHelp(line string, indent int) string {
	var b strings.Builder
	for len(line) > 100 {
		cut := strings.LastIndexByte(line[:100], ' ')
		if cut <= indent {
			break
		}
		b.WriteString(line[:cut] + "\n")
		line = strings.Repeat(" ", indent) + line[cut+1:]
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Sample usage.

// sampleUsage is the usage of an experiment's processes during one sample, from the overview.
type sampleUsage struct {
	known              bool // a sample point ends the sample
	user, system       int64
	minflt, majflt     int64
	volcs, involcs     int64
	rss                int64 // at the end of the sample, all processes
	threads            int64
	memUnknown         bool // a process's point at the end recorded no RSS or thread count (gprofng's)
	processes          int
	startAt, endAt     int64
	startLbl, endLabel string
}

// samplesUsage returns the usage in each sample of experiment i (indexed like ExpIndex.Samples):
// each process's change between the points that bound the sample, added up. What a process used
// before its first point in the experiment is in no sample.
func (s *session) samplesUsage(i int) []sampleUsage {
	x := s.expIndex(i)
	samples := x.Samples()
	out := make([]sampleUsage, len(samples))
	closes := map[uint32]int{} // point number -> index of the sample it ends
	for k, sp := range samples {
		out[k].startAt, out[k].endAt, out[k].startLbl, out[k].endLabel = sp.Start, sp.End, sp.StartLabel, sp.EndLabel
		if !sp.Open {
			closes[uint32(sp.EndPoint)] = k
			out[k].known = true
		}
	}
	// Each point's usage is counted from the point before it: what a process used before its
	// experiment's first point (before its exec began this image, or before er attached) is not in
	// the experiment, and an exec image's first point holds what the image before it used (issue 12).
	recs := append([]experiment.OverviewSample(nil), x.Data().Overview...)
	sort.SliceStable(recs, func(a, b int) bool {
		return recs[a].Pid < recs[b].Pid || recs[a].Pid == recs[b].Pid && recs[a].Time < recs[b].Time
	})
	var prev experiment.OverviewSample
	for j, o := range recs {
		if j == 0 || o.Pid != recs[j-1].Pid {
			prev = o // the process's first point: its usage so far is not the sample's
		}
		if k, ok := closes[o.Sample]; ok {
			u := &out[k]
			u.user = sat.Add(u.user, sat.Sub(o.UserNS, prev.UserNS))
			u.system = sat.Add(u.system, sat.Sub(o.SystemNS, prev.SystemNS))
			u.minflt = sat.Add(u.minflt, sat.Sub(o.MinFlt, prev.MinFlt))
			u.majflt = sat.Add(u.majflt, sat.Sub(o.MajFlt, prev.MajFlt))
			u.volcs = sat.Add(u.volcs, sat.Sub(o.VolCtxSw, prev.VolCtxSw))
			u.involcs = sat.Add(u.involcs, sat.Sub(o.InvolCtxSw, prev.InvolCtxSw))
			if samples[k].EndPoint == int(o.Sample) {
				u.rss = sat.Add(u.rss, o.RSSBytes)
				u.threads = sat.Add(u.threads, int64(o.NumThreads))
				u.memUnknown = u.memUnknown || o.MemoryUnknown
				u.processes++
			}
		}
		prev = o
	}
	return out
}

// sampleDetail prints the usage in the selected samples, added up, then in each, as gprofng's
// sample_detail.
func (s *session) sampleDetail(args []string) error {
	ids, err := s.selectExps("sample_detail", args)
	if err != nil {
		return err
	}
	for _, i := range ids {
		exp := int64(i + 1)
		s.printf("Experiment %d: %s\n", exp, s.dirs[i])
		if !s.sel.expSelected(exp) {
			s.printf("  not selected (experiment_select)\n\n")
			continue
		}
		samples := s.expIndex(i).Samples()
		usage := s.samplesUsage(i)
		var sum sampleUsage
		var picked []int
		first := true
		for k, sp := range samples {
			if !s.sel.samples.has(exp, int64(sp.Number)) {
				continue
			}
			picked = append(picked, k)
			u := usage[k]
			if first {
				sum.startAt, sum.startLbl = u.startAt, u.startLbl
				first = false
			}
			sum.endAt, sum.endLabel = u.endAt, u.endLabel
			sum.known = sum.known || u.known
			sum.user = sat.Add(sum.user, u.user)
			sum.system = sat.Add(sum.system, u.system)
			sum.minflt = sat.Add(sum.minflt, u.minflt)
			sum.majflt = sat.Add(sum.majflt, u.majflt)
			sum.volcs = sat.Add(sum.volcs, u.volcs)
			sum.involcs = sat.Add(sum.involcs, u.involcs)
			sum.rss, sum.threads, sum.processes, sum.memUnknown = u.rss, u.threads, u.processes, u.memUnknown
		}
		if len(picked) == 0 {
			s.printf("  no sample selected (sample_select %s)\n\n", s.sel.samples.forExp(exp))
			continue
		}
		s.printf("\n  Aggregated statistics for the selected samples (%s)\n\n", s.sel.samples.forExp(exp))
		s.printUsage(sum, 0)
		s.printf("\n  Individual samples\n")
		for _, k := range picked {
			s.printf("\n")
			s.printUsage(usage[k], samples[k].Number)
		}
		s.printf("\n")
	}
	return nil
}

// printUsage prints one sample's usage (n > 0) or the sum of several (n = 0).
func (s *session) printUsage(u sampleUsage, n int) {
	var rows [][2]string
	if n > 0 {
		rows = append(rows, [2]string{"Sample Number", strconv.Itoa(n)})
	}
	label := func(l string) string {
		if l == "" {
			return "-"
		}
		return l
	}
	dur := u.endAt - u.startAt
	rows = append(rows,
		[2]string{"Start Label", label(u.startLbl)},
		[2]string{"End Label", label(u.endLabel)},
		[2]string{"Start Time (sec.)", secondsMS(u.startAt)},
		[2]string{"End Time (sec.)", secondsMS(u.endAt)},
		[2]string{"Duration (sec.)", secondsMS(dur)})
	if !u.known {
		rows = append(rows, [2]string{"Process Times", "not recorded: no sample point ends the sample"})
	} else {
		rows = append(rows,
			[2]string{"User CPU (sec.)", fmt.Sprintf("%s (%5.1f%% of the duration)", secondsMS(u.user), percent(u.user, dur))},
			[2]string{"System CPU (sec.)", fmt.Sprintf("%s (%5.1f%% of the duration)", secondsMS(u.system), percent(u.system, dur))},
			[2]string{"Minor Page Faults", strconv.FormatInt(u.minflt, 10)},
			[2]string{"Major Page Faults", strconv.FormatInt(u.majflt, 10)},
			[2]string{"Voluntary Context Switches", strconv.FormatInt(u.volcs, 10)},
			[2]string{"Involuntary Context Switches", strconv.FormatInt(u.involcs, 10)})
		if u.memUnknown {
			rows = append(rows, [2]string{"Resident Set Size at the end", "not recorded (by gprofng)"},
				[2]string{"Threads at the end", "not recorded (by gprofng)"})
		} else {
			rows = append(rows, [2]string{"Resident Set Size at the end (MB)", fmt.Sprintf("%.1f", float64(u.rss)/(1<<20))},
				[2]string{"Threads at the end", strconv.FormatInt(u.threads, 10)})
		}
	}
	w := 0
	for _, r := range rows {
		w = max(w, len(r[0]))
	}
	for _, r := range rows {
		s.printf("    %*s: %s\n", w, r[0], r[1])
	}
}
