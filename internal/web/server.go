// Package web is the Analyzer: a local web GUI over experiments, served with net/http, whose
// hand-written JavaScript page is embedded in the binary and whose views are computed on the server.
package web

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"er/internal/analysis"
	"er/internal/erprint"
)

//go:embed static
var static embed.FS

// Server serves the Analyzer over the experiments it was opened on. One Server holds one analysis
// state (metrics, sort, filter) shared by every page that talks to it, as a single-user tool.
type Server struct {
	mu  sync.Mutex
	eng *erprint.Engine
	cmp []*erprint.Engine // one engine per argument, for comparing; nil with one argument

	rangeNS *[2]int64 // the time range selected in the timeline; nil for none
	expr    string    // the filter expression entered; "" for none

	// base is the profile of every event, before any filter: the timeline shows it whatever the
	// filter, so that a range can be chosen again.
	base  *analysis.Profile
	tl    *timeline       // the timeline index of base
	ids   map[funcKey]int // the current profile's functions by identity, to map base's to them
	idsOf *analysis.Profile
	tree  *treeView // the call tree of the current profile, with sorted children
	dur   int64     // duration(), once computed
	ends  []int64   // each experiment's end or last event, as duration() computes them

	// static is set while WriteStatic records responses: the page then sorts and searches locally.
	static bool
}

// Open loads the experiments (and groups) named by args, as er print does.
func Open(args []string) (*Server, error) {
	eng, err := erprint.NewEngine(args)
	if err != nil {
		return nil, err
	}
	s := &Server{eng: eng}
	if s.base, err = eng.Profile(); err != nil {
		return nil, err
	}
	eng.KeepEvents(false)
	if len(args) > 1 {
		for _, a := range args {
			e, err := erprint.NewEngine([]string{a})
			if err != nil {
				return nil, err
			}
			s.cmp = append(s.cmp, e)
		}
	}
	return s, nil
}

// Handler is the HTTP handler of the Analyzer: the page under /, its data under /api/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	for path, h := range s.routes() {
		mux.HandleFunc("GET "+path, s.jsonHandler(h))
	}
	mux.HandleFunc("POST /api/filter", s.jsonHandler(s.setFilter))
	mux.HandleFunc("POST /api/metrics", s.jsonHandler(s.setMetrics))
	return localOnly(mux)
}

// routes are the GET endpoints: each answers a view's data as JSON.
func (s *Server) routes() map[string]func(r *http.Request) (any, error) {
	return map[string]func(r *http.Request) (any, error){
		"/api/overview":  s.overview,
		"/api/functions": s.functions,
		"/api/callers":   s.callers,
		"/api/tree":      s.calltree,
		"/api/flame":     s.flame,
		"/api/source":    s.source,
		"/api/disasm":    s.disasm,
		"/api/timeline":  s.timeline,
		"/api/event":     s.event,
		"/api/table":     s.table,
		"/api/compare":   s.compare,
	}
}

// apiError is an error answered to the page with a status code.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// jsonHandler runs h under the server's lock and writes its answer as JSON; an error becomes
// {"error": "..."} with status 400 for a bad request, 422 for an analysis that failed.
func (s *Server) jsonHandler(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		v, err := h(r)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			code := http.StatusUnprocessableEntity
			var ae *apiError
			if errors.As(err, &ae) {
				code = ae.code
			}
			w.WriteHeader(code)
			v = map[string]string{"error": err.Error()}
		}
		json.NewEncoder(w).Encode(v)
	}
}

// localOnly refuses requests whose Host is not a loopback name or address, so that a web page
// elsewhere cannot reach the server through DNS rebinding, and sets headers that keep the page
// from being framed or sniffed.
func localOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback() && !allowedHost(ip)) {
			http.Error(w, "er analyzer: requests must name a loopback host", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
		h.ServeHTTP(w, r)
	})
}

// allowedHost accepts an address the server was explicitly told to bind (--bind), set by Serve.
var allowedHost = func(ip net.IP) bool { return false }

// Serve listens on addr ("127.0.0.1:0" for a free loopback port), calls ready with the page's
// URL once listening, and serves until the listener fails.
func (s *Server) Serve(addr string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	if !tcp.IP.IsLoopback() {
		bound := tcp.IP
		allowedHost = func(ip net.IP) bool { return bound.IsUnspecified() || ip.Equal(bound) }
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)) + "/"
	if ready != nil {
		ready(url)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// intParam reads an integer query parameter, def when absent.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badRequest("parameter %s=%q is not an integer", name, v)
	}
	return n, nil
}
