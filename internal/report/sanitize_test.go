package report

import (
	"bytes"
	"testing"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":                "plain name",
		"caf\u00e9 \u4e2d":          "caf\u00e9 \u4e2d",
		"evil\x1b[2J\x07name":       `evil\x1b[2J\x07name`,
		"tab\tnl\ncr\r":             "tab\t" + `nl\ncr\r`,
		"nul\x00del\x7f":            `nul\x00del\x7f`,
		"c1\u009bcsi\u0080":         `c1\u009bcsi\u0080`,
		"latin1 \xe9 \x9b cut\xe4":  `latin1 \xe9 \x9b cut\xe4`,
		"\u00a0nbsp is not control": "\u00a0nbsp is not control",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSafeWriter: what passes through keeps its tabs and newlines, shows every other control
// character escaped, and reports the length written as the caller's.
func TestSafeWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewSafeWriter(&b)
	for _, s := range []string{"line\tone\n", "evil\x1b[2J\x07name\n", "\u009b31m\r\n", "ok\n"} {
		n, err := w.Write([]byte(s))
		if err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	want := "line\tone\n" + `evil\x1b[2J\x07name` + "\n" + `\u009b31m\r` + "\nok\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
