package report

import (
	"bytes"
	"testing"
	"unicode/utf8"
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

// FuzzClean: whatever the input, Clean and SafeWriter leave no control character but tab (and
// newline, for SafeWriter), and text without one passes unchanged.
func FuzzClean(f *testing.F) {
	for _, seed := range []string{"plain", "evil\x1b[2J\x07", "\u009b\xff\xc2", "a\tb\nc\r", "caf\u00e9"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if _, err := NewSafeWriter(&b).Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"Clean": Clean(s), "SafeWriter": b.String()} {
			for _, r := range out {
				if r < 0x20 && r != '\t' && (name == "Clean" || r != '\n') || r >= 0x7f && r <= 0x9f {
					t.Fatalf("%s(%q) = %q holds %U", name, s, out, r)
				}
			}
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q is not UTF-8", name, s, out)
			}
		}
		if !needsEscape([]byte(s), false) && Clean(s) != s {
			t.Fatalf("Clean(%q) = %q changed clean text", s, Clean(s))
		}
	})
}
