// Package manpage turns a command's help text into a man page (roff, man(7) macros).
package manpage

import (
	"fmt"
	"strings"
)

// Page is one man page: a command, its one-line summary, and its help text (the first line its usage).
type Page struct {
	Name    string // "er-collect"
	Section int    // 1
	Summary string // "run a program and record an experiment"
	Help    string
	Source  string // "er 0.1.0"
	SeeAlso []string
}

// Roff renders the page: NAME, SYNOPSIS (the help's usage line), DESCRIPTION (the rest of the help,
// its paragraphs as text and its indented lines kept as they are), SEE ALSO.
func (p Page) Roff() string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %d \"\" %q \"er manual\"\n", strings.ToUpper(escape(p.Name)), p.Section, p.Source)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", escape(p.Name), escape(p.Summary))
	lines := strings.Split(strings.TrimRight(p.Help, "\n"), "\n")
	i := 0
	if len(lines) > 0 && strings.HasPrefix(strings.ToLower(lines[0]), "usage:") {
		fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n%s\n.fi\n", escape(strings.TrimSpace(lines[0][len("usage:"):])))
		i = 1
	}
	b.WriteString(".SH DESCRIPTION\n")
	inPre := false
	for _, l := range lines[i:] {
		pre := strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		switch {
		case strings.TrimSpace(l) == "":
			if inPre {
				b.WriteString(".fi\n")
				inPre = false
			}
			b.WriteString(".PP\n")
			continue
		case pre && !inPre:
			b.WriteString(".nf\n")
			inPre = true
		case !pre && inPre:
			b.WriteString(".fi\n")
			inPre = false
		}
		b.WriteString(escape(l))
		b.WriteByte('\n')
	}
	if inPre {
		b.WriteString(".fi\n")
	}
	if len(p.SeeAlso) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		var refs []string
		for _, s := range p.SeeAlso {
			refs = append(refs, ".BR "+escape(s)+" (1)")
		}
		b.WriteString(strings.Join(refs, ",\n") + "\n")
	}
	return b.String()
}

// escape makes text safe in roff: backslashes as \e, a leading dot or apostrophe protected, '-' as \-.
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
