package web

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckQuery checks the refusals of a query: unknown, repeated, overlong and unparsable
// parameters, each named in the message.
func TestCheckQuery(t *testing.T) {
	long := strings.Repeat("a", maxParamLen+1)
	for _, c := range []struct {
		query string
		want  string // "" for accepted
	}{
		{"", ""},
		{"f=1", ""},
		{"f=1&g=2", `parameter "g": /api/x takes only f, h`},
		{"f=1&f=2", "parameter f is given 2 times"},
		{"h=" + long, "parameter h is 1025 bytes long"},
		{"f=%zz", "cannot be parsed"},
		{"f=1;h=2", "cannot be parsed"},
	} {
		r := httptest.NewRequest("GET", "/api/x?"+c.query, nil)
		err := checkQuery(r, "/api/x", []string{"f", "h"})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.40q: %v, want %q", c.query, err, c.want)
		}
		var ae *apiError
		if err != nil && (!errors.As(err, &ae) || ae.code != 400) {
			t.Errorf("%.40q: %v is not a 400", c.query, err)
		}
	}
	r := httptest.NewRequest("GET", "/api/overview?x=1", nil)
	if err := checkQuery(r, "/api/overview", nil); err == nil || err.Error() != `parameter "x": /api/overview takes no parameters` {
		t.Errorf("a parameter to an endpoint without any: %v", err)
	}
}

// TestIntParam checks an integer parameter's range, its default and its messages.
func TestIntParam(t *testing.T) {
	for _, c := range []struct {
		query string
		n     int64
		err   string
	}{
		{"", 7, ""},
		{"n=0", 0, ""},
		{"n=10", 10, ""},
		{"n=-1", 0, "parameter n=-1 is out of range (0 to 10)"},
		{"n=11", 0, "parameter n=11 is out of range (0 to 10)"},
		{"n=9223372036854775807", 0, "parameter n=9223372036854775807 is out of range (0 to 10)"},
		{"n=99999999999999999999", 0, `parameter n="99999999999999999999" is not an integer (0 to 10)`},
		{"n=1e3", 0, `parameter n="1e3" is not an integer (0 to 10)`},
	} {
		r := httptest.NewRequest("GET", "/?"+c.query, nil)
		n, err := intParam(r, "n", 7, 0, 10)
		if c.err == "" && (err != nil || n != c.n) || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("%s: %d, %v; want %d, %q", c.query, n, err, c.n, c.err)
		}
	}
}

// TestSatAdd checks the saturating sum at both ends of int64.
func TestSatAdd(t *testing.T) {
	const maxI, minI = 1<<63 - 1, -1 << 63
	for _, c := range [][3]int64{{1, 2, 3}, {maxI, 1, maxI}, {maxI - 1, 1, maxI}, {minI, -1, minI}, {minI, maxI, -1}, {-5, -6, -11}, {maxI, maxI, maxI}} {
		if got := satAdd(c[0], c[1]); got != c[2] {
			t.Errorf("satAdd(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
