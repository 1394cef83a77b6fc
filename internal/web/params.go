package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// minTime and maxTime bound the times of the timeline: any int64, its arithmetic saturating.
const (
	minTime = -1 << 63
	maxTime = 1<<63 - 1
)

// Bounds of what a request may ask for: every parameter is checked against them before any work,
// and a request outside them is answered 400 with the parameter and what is allowed.
const (
	maxParamLen  = 1024       // bytes of one parameter's value (a search, a sort key)
	maxLimit     = 10_000_000 // rows of the function list (0: all)
	maxTolNS     = 1 << 62    // the tolerance of /api/event, in ns (146 years); times may be any int64
	maxBody      = 1 << 16    // bytes of a POST body
	maxFilterLen = 16 << 10   // bytes of a filter expression (erprint bounds its FNAME and INSTK terms)
)

// checkQuery refuses a query that cannot be parsed, names a parameter that endpoint does not
// take, gives one twice, or gives an overlong value.
func checkQuery(r *http.Request, endpoint string, allowed []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("the query of %s cannot be parsed: %v", endpoint, err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := q[name]
		if !slices.Contains(allowed, name) {
			if len(allowed) == 0 {
				return badRequest("parameter %s: %s takes no parameters", clip(name), endpoint)
			}
			return badRequest("parameter %s: %s takes only %s", clip(name), endpoint, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return badRequest("parameter %s is given %d times: give it once", name, len(vs))
		}
		if len(vs[0]) > maxParamLen {
			return badRequest("parameter %s is %d bytes long: at most %d are allowed", name, len(vs[0]), maxParamLen)
		}
	}
	return nil
}

// clip quotes s for a message, shortened to 64 bytes.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

// intParam reads an integer query parameter in [lo, hi], def when absent.
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badRequest("parameter %s=%s is not an integer (%d to %d)", name, clip(v), lo, hi)
	}
	if n < lo || n > hi {
		return 0, badRequest("parameter %s=%d is out of range (%d to %d)", name, n, lo, hi)
	}
	return n, nil
}

// enumParam reads a query parameter that takes one of values, the first when absent.
func enumParam(r *http.Request, name string, values ...string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return values[0], nil
	}
	if !slices.Contains(values, v) {
		return "", badRequest("parameter %s=%s is not one of %s", name, clip(v), strings.Join(values, ", "))
	}
	return v, nil
}

// satAdd is a + b, held at the int64 range instead of wrapping.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case b > 0 && c < a:
		return 1<<63 - 1
	case b < 0 && c > a:
		return -1 << 63
	}
	return c
}
