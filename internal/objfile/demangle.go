package objfile

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// NameStyle is how Demangle shows a name, as er_print's "name long|short|mangled".
type NameStyle int

// Name styles.
const (
	NameLong    NameStyle = iota // the full demangled signature
	NameShort                    // the name without parameters or template arguments
	NameMangled                  // the name as in the symbol table
)

// pltSuffix ends the names of PLT stub symbols.
const pltSuffix = "@plt"

// Demangle returns name, a C++ (_Z), Rust legacy (_ZN...17h<hash>E, shown
// without the hash) or Rust v0 (_R) symbol, in the given style. Names that
// are not mangled, or do not demangle, are returned unchanged; a "@plt"
// suffix is kept. It never panics.
func Demangle(name string, style NameStyle) string {
	if style == NameMangled {
		return name
	}
	base, suffix := name, ""
	if strings.HasSuffix(base, pltSuffix) {
		base, suffix = base[:len(base)-len(pltSuffix)], pltSuffix
	}
	if !strings.HasPrefix(base, "_Z") && !strings.HasPrefix(base, "_R") {
		return name
	}
	var opts []demangle.Option
	if style == NameShort {
		opts = []demangle.Option{demangle.NoParams, demangle.NoTemplateParams, demangle.NoEnclosingParams}
	}
	out, ok := toString(base, opts)
	if !ok {
		return name
	}
	if style == NameShort && strings.HasPrefix(base, "_R") {
		// Rust v0 generic arguments are left as an empty "::<>" or "<>".
		out = strings.ReplaceAll(out, "::<>", "")
		out = strings.ReplaceAll(out, "<>", "")
		if out == "" {
			return name // nothing but generic arguments: keep the symbol rather than show an empty name
		}
	}
	return out + suffix
}

// toString calls the demangler, turning a failure or a panic into ok=false.
func toString(name string, opts []demangle.Option) (out string, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	s, err := demangle.ToString(name, opts...)
	if err != nil || s == "" {
		return "", false
	}
	return s, true
}
