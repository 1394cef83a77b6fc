// Package contracttest compiles and runs the C programs that print the collector library's side of the Go↔C contract, for the tests that check it.
package contracttest

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Field is a struct field's offset and size, in bytes.
type Field struct{ Off, Size int }

// Output is what a contract program printed: lines "struct NAME SIZE", "field STRUCT.NAME OFFSET
// SIZE", "const NAME VALUE" and "string NAME VALUE".
type Output struct {
	Structs map[string]int
	Fields  map[string]Field
	Consts  map[string]uint64
	Strings map[string]string
}

// Run compiles the C program src with gcc and parses what it prints. It skips the test when there
// is no gcc, and fails it when src does not compile or prints anything else.
func Run(t testing.TB, src string) *Output {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the Go<->C contract is not checked")
	}
	bin := filepath.Join(t.TempDir(), "contract")
	if out, err := exec.Command(gcc, "-std=gnu11", "-Wall", "-Werror", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", src, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running %s: %v", src, err)
	}
	return Parse(t, src, out)
}

// Parse parses the output out of the contract program src.
func Parse(t testing.TB, src string, out []byte) *Output {
	t.Helper()
	c := &Output{Structs: map[string]int{}, Fields: map[string]Field{}, Consts: map[string]uint64{}, Strings: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("%s printed %q: %v", src, sc.Text(), err)
			}
			return v
		}
		switch {
		case len(f) == 3 && f[0] == "struct":
			c.Structs[f[1]] = int(num(f[2]))
		case len(f) == 4 && f[0] == "field":
			c.Fields[f[1]] = Field{int(num(f[2])), int(num(f[3]))}
		case len(f) == 3 && f[0] == "const":
			c.Consts[f[1]] = num(f[2])
		case len(f) == 3 && f[0] == "string":
			c.Strings[f[1]] = f[2]
		default:
			t.Fatalf("%s printed %q: want struct, field, const or string", src, sc.Text())
		}
	}
	return c
}

var (
	cComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	cArray   = regexp.MustCompile(`\[[^]]*\]`)
)

// StripComments removes the C comments of a header's text.
func StripComments(text string) string { return cComment.ReplaceAllString(text, "") }

// FieldNames returns the names of the fields that the body of a C struct declares, arrays and
// pointers included: "uint32_t a, b; char name[16];" gives a, b and name.
func FieldNames(body string) []string {
	var out []string
	for _, decl := range strings.Split(body, ";") {
		decl = strings.TrimSpace(cArray.ReplaceAllString(decl, ""))
		if decl == "" {
			continue
		}
		names := strings.Split(decl, ",")
		if w := strings.Fields(names[0]); len(w) > 0 {
			names[0] = w[len(w)-1]
		}
		for _, n := range names {
			out = append(out, strings.TrimLeft(strings.TrimSpace(n), "*"))
		}
	}
	return out
}
