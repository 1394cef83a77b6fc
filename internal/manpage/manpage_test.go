package manpage

import (
	"strings"
	"testing"
)

func TestRoff(t *testing.T) {
	p := Page{Name: "er-export", Section: 1, Summary: "write profiles for other tools", Source: "er 0.1.0", SeeAlso: []string{"er", "er-print"},
		Help: "Usage: er export -o FILE experiment...\n\nWrites the profile.\n.folded files are folded.\n\n  -o FILE   where\n  -format F  which\nMore text with a \\ backslash.\n"}
	got := p.Roff()
	for _, want := range []string{
		".TH ER\\-EXPORT 1 \"\" \"er 0.1.0\" \"er manual\"\n",
		".SH NAME\ner\\-export \\- write profiles for other tools\n",
		".SH SYNOPSIS\n.nf\ner export \\-o FILE experiment...\n.fi\n",
		"\\&.folded files are folded.\n",
		".nf\n  \\-o FILE   where\n  \\-format F  which\n.fi\nMore text with a \\e backslash.\n",
		".SH SEE ALSO\n.BR er (1),\n.BR er\\-print (1)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}
