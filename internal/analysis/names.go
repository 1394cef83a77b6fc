package analysis

import (
	"sort"

	"er/internal/objfile"
)

// NameStyle is how function names are shown, as er_print's `name` command sets it.
type NameStyle = objfile.NameStyle

// Name styles.
const (
	NameLong    = objfile.NameLong    // demangled, with parameters: "ns::f(int)"
	NameShort   = objfile.NameShort   // demangled, without parameters or template arguments: "ns::f"
	NameMangled = objfile.NameMangled // the raw symbol: "_ZN2ns1fEi"
)

// ParseNameStyle reads "long", "short" or "mangled".
func ParseNameStyle(s string) (NameStyle, bool) {
	switch s {
	case "long":
		return NameLong, true
	case "short":
		return NameShort, true
	case "mangled":
		return NameMangled, true
	}
	return 0, false
}

// StyleName is the keyword of style s.
func StyleName(s NameStyle) string {
	switch s {
	case NameShort:
		return "short"
	case NameMangled:
		return "mangled"
	}
	return "long"
}

// FuncName is the name of function f in style. Pseudo-functions keep their names.
func (p *Profile) FuncName(f int, style NameStyle) string {
	return FunctionName(&p.Functions[f], style)
}

// FunctionName is the name of fn in style, as Profile.FuncName gives it.
func FunctionName(fn *Function, style NameStyle) string {
	switch fn.Kind {
	case FuncSymbol, FuncPLT, FuncInlined:
		return objfile.Demangle(fn.Name, style)
	}
	return fn.Name
}

// FindFunctions returns the functions on some stack named name in any style (long, short or mangled), ordered by
// load-object name, then address, so that er_print's "name N" numbering is stable.
func (p *Profile) FindFunctions(name string) []int {
	var out []int
	for f := range p.Functions {
		if !p.Used(f) {
			continue
		}
		if p.Functions[f].Name == name || p.FuncName(f, NameLong) == name || p.FuncName(f, NameShort) == name {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &p.Functions[out[i]], &p.Functions[out[j]]
		if oa, ob := p.Objects[a.Object].Name, p.Objects[b.Object].Name; oa != ob {
			return oa < ob
		}
		return a.Addr < b.Addr
	})
	return out
}
