package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// The token. Every request must carry it, as Jupyter's do: the URL er analyzer prints has it in its
// query (?token=...), the page reads it from there and sends it with each API call in the header
// X-Er-Token, and the page's own files (index.html names them with the token in their URLs) carry it
// in theirs. Without it a request is refused with 403: other users of the machine can connect to a
// loopback port, but cannot read the experiments (their function names, command lines, sources) or
// change any page's view. There is no cookie: cookies are not kept apart by port, so a server of
// another user on another port of 127.0.0.1 would be sent it.
const (
	tokenParam  = "token"
	tokenHeader = "X-Er-Token"
	tokenBytes  = 16 // 128 random bits, 32 hexadecimal digits
)

// newToken returns a new random token. crypto/rand does not fail on Linux (getrandom); if it did,
// no server could be trusted to run, so it panics.
func newToken() string {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		panic("er analyzer: no random numbers for the token: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// authorized reports whether r carries the token, in its header or its query (compared in constant
// time), and takes the token out of r's query.
func (sh *shared) authorized(r *http.Request) bool {
	tok := r.Header.Get(tokenHeader)
	q, fromQuery := stripParam(r.URL.RawQuery, tokenParam)
	if tok == "" {
		tok = fromQuery
	}
	r.URL.RawQuery = q
	return subtle.ConstantTimeCompare([]byte(tok), []byte(sh.token)) == 1
}

// stripParam removes every parameter name from the raw query q, leaving the others as they were
// written, and returns the first one's value (its escapes undone; "" when it cannot be).
func stripParam(q, name string) (rest, value string) {
	if q == "" {
		return "", ""
	}
	var kept []string
	found := false
	for _, part := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(part, "=")
		if k == name {
			if !found {
				value, found = unescape(v), true
			}
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, "&"), value
}

func unescape(v string) string {
	u, err := url.QueryUnescape(v)
	if err != nil {
		return ""
	}
	return u
}

// page answers index.html with the token in the URLs of the files it loads (style.css, data.js,
// app.js), so that the browser's requests for them carry it.
func (sh *shared) page(w http.ResponseWriter, r *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		http.Error(w, "er analyzer: internal error: no page", http.StatusInternalServerError)
		return
	}
	for _, f := range []string{"style.css", "data.js", "app.js"} {
		b = bytes.ReplaceAll(b, []byte(`="`+f+`"`), []byte(`="`+f+`?`+tokenParam+`=`+sh.token+`"`))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// setContext makes ctx (nil: none) the context of the view's analyses: a filter being evaluated
// stops when the request's client goes away.
func (s *Server) setContext(ctx context.Context) {
	s.eng.SetContext(ctx)
	for _, e := range s.cmp {
		e.SetContext(ctx)
	}
}
