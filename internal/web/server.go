// Package web is the Analyzer: a local web GUI over experiments, served with net/http, whose
// hand-written JavaScript page is embedded in the binary and whose views are computed on the server.
package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"er/internal/analysis"
	"er/internal/erprint"
)

//go:embed static
var static embed.FS

// Server is one view of the Analyzer onto the experiments it was opened on: the metrics, sort and
// filter of one page. Each page (a client, named by the X-Er-Client header it sends) gets a Server
// of its own, which shares the experiments, their analysis and the token with every other view
// (shared); requests of different pages run at the same time, those of one page take turns. The
// Server that Open returns is the view of requests that name no client (curl, scripts).
type Server struct {
	mu  sync.Mutex        // this view's: its requests take turns
	eng *erprint.Engine   // this view's er print session (a fork of shared.tmpl)
	cmp []*erprint.Engine // one engine per argument, for comparing; nil with one argument

	rangeNS *[2]int64 // the time range selected in the timeline; nil for none
	expr    string    // the filter expression entered; "" for none

	ids   map[funcKey]int // the current profile's functions by identity, to map base's to them
	idsOf *analysis.Profile
	tree  *treeView // the call tree of the current profile, with sorted children

	// static is set while WriteStatic records responses: the page then sorts and searches locally.
	static bool

	sh *shared
}

// shared is what every view of one Analyzer has in common. What it holds does not change once
// served (Serve sets bound before), but for the two indexes made on first use, which tlMu and
// procsMu guard, and the views, which their set guards.
type shared struct {
	tmpl    *erprint.Engine   // the session every view forks; never used otherwise
	tmplCmp []*erprint.Engine // the same for comparing

	// base is the profile of every event, before any filter: the timeline shows it whatever the
	// filter, so that a range can be chosen again.
	base *analysis.Profile
	dur  int64   // the span of the experiments (duration)
	ends []int64 // each experiment's end or last event

	tlMu    sync.Mutex
	tl      *timeline // the timeline index of base, once made
	procsMu sync.Mutex
	procs   *procTree // the process tree, once made

	// bound is the address Serve listens on when it is not a loopback one: requests may name it.
	bound net.IP
	// token is what every request must carry (tokenParam or tokenHeader), as Jupyter's does.
	token string
	views viewSet
}

// Open loads the experiments (and groups) named by args, as er print does.
func Open(args []string) (*Server, error) {
	tmpl, err := erprint.NewEngine(args)
	if err != nil {
		return nil, err
	}
	sh := &shared{tmpl: tmpl, token: newToken()}
	if sh.base, err = tmpl.Profile(); err != nil {
		return nil, err
	}
	tmpl.KeepEvents(false)
	if len(args) > 1 {
		for _, a := range args {
			e, err := erprint.NewEngine([]string{a})
			if err != nil {
				return nil, err
			}
			sh.tmplCmp = append(sh.tmplCmp, e)
		}
	}
	_, exps := tmpl.Experiments()
	for _, d := range exps {
		last := d.LastTime()
		sh.ends = append(sh.ends, max(d.Log.EndTime, last))
		sh.dur = max(sh.dur, d.Log.EndTime, satAdd(last, 1))
	}
	sh.views.def = sh.newView()
	return sh.views.def, nil
}

// newView is a view of the experiments with the default metrics, sort and no filter.
func (sh *shared) newView() *Server {
	v := &Server{sh: sh, eng: sh.tmpl.Fork()}
	for _, e := range sh.tmplCmp {
		v.cmp = append(v.cmp, e.Fork())
	}
	return v
}

// Token is what every request to the Handler must carry: the query parameter token, or the header
// X-Er-Token.
func (s *Server) Token() string { return s.sh.token }

// Handler is the HTTP handler of the Analyzer: the page under /, its data under /api/. Every
// request must carry the token; each is answered by the view of the client it names.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /{$}", s.sh.page)
	mux.HandleFunc("GET /index.html", s.sh.page)
	for path, e := range routes {
		mux.HandleFunc("GET "+path, s.sh.jsonHandler(path, e))
	}
	mux.HandleFunc("POST /api/filter", s.sh.jsonHandler("/api/filter", endpoint{h: (*Server).setFilter}))
	mux.HandleFunc("POST /api/metrics", s.sh.jsonHandler("/api/metrics", endpoint{h: (*Server).setMetrics}))
	mux.HandleFunc("POST /api/viewmode", s.sh.jsonHandler("/api/viewmode", endpoint{h: (*Server).setViewMode}))
	return recoverPanics(s.sh.guard(mux))
}

// endpoint is a GET endpoint: the query parameters it takes, and what answers it in a view.
type endpoint struct {
	params []string
	h      func(s *Server, r *http.Request) (any, error)
}

// routes are the GET endpoints: each answers a view's data as JSON.
var routes = map[string]endpoint{
	"/api/overview":  {nil, (*Server).overview},
	"/api/functions": {[]string{"sort", "q", "limit"}, (*Server).functions},
	"/api/callers":   {[]string{"f"}, (*Server).callers},
	"/api/tree":      {[]string{"node", "hot"}, (*Server).calltree},
	"/api/flame":     {[]string{"root"}, (*Server).flame},
	"/api/source":    {[]string{"f"}, (*Server).source},
	"/api/disasm":    {[]string{"f"}, (*Server).disasm},
	"/api/timeline":  {[]string{"t0", "t1", "w"}, (*Server).timeline},
	"/api/event":     {[]string{"row", "t", "tol"}, (*Server).event},
	"/api/table":     {[]string{"cmd"}, (*Server).table},
	"/api/compare":   {[]string{"metric"}, (*Server).compare},
	"/api/diffflame": {[]string{"metric"}, (*Server).diffFlame},
	"/api/processes": {nil, (*Server).processes},
}

// apiError is an error answered to the page with a status code; gone marks the answer to a page
// whose view was dropped ({"view": "gone"}).
type apiError struct {
	code int
	msg  string
	gone bool
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// jsonHandler answers endpoint path with e as JSON: it checks the query, reads a POST's body whole
// (before taking the lock, so that a slow client holds up no one else), runs e and encodes its
// answer under the server's lock (the answer may share the server's state) and writes it. An error
// becomes {"error": "..."} with status 400 for a bad request, 413 for a body too large, 415 for a
// body that is not JSON, 422 for an analysis that failed and 500 for a panic (recovered, logged,
// the lock released).
func (sh *shared) jsonHandler(path string, e endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := sh.views.of(r, sh)
		if err != nil {
			writeJSON(w, nil, err)
			return
		}
		b, err := v.answer(w, r, path, e)
		writeJSON(w, b, err)
	}
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, path string, e endpoint) ([]byte, error) {
	if err := checkQuery(r, path, e.params); err != nil {
		return nil, err
	}
	if r.Method == http.MethodPost {
		if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
			return nil, &apiError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("POST %s: the body must be JSON, sent with Content-Type: application/json", path)}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, &apiError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("POST %s: the body is over %d bytes", path, maxBody)}
			}
			return nil, badRequest("POST %s: reading the body: %v", path, err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return s.locked(r, func(r *http.Request) (any, error) { return e.h(s, r) })
}

// locked runs h under the view's lock, released however h ends, and encodes its answer; a panic
// becomes a 500 error, logged with its stack. A GET whose client went away while it waited for the
// lock is not worked out (a page that was closed or reloaded leaves its requests queued), and an
// analysis (a filter being evaluated) stops when the client goes away. The lock is the view's
// alone: other pages' requests do not wait for it.
func (s *Server) locked(r *http.Request, h func(r *http.Request) (any, error)) (b []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet && r.Context().Err() != nil {
		return nil, &apiError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s %s: the client went away before its turn", r.Method, r.URL)}
	}
	s.setContext(r.Context())
	defer s.setContext(nil)
	defer func() {
		if p := recover(); p != nil {
			log.Printf("er analyzer: internal error serving %s %s: %v\n%s", r.Method, r.URL, p, debug.Stack())
			b, err = nil, &apiError{code: http.StatusInternalServerError, msg: fmt.Sprintf("internal error: %v (please report it with the request: %s %s)", p, r.Method, r.URL)}
		}
	}()
	// A new view's first profile: computed before the endpoint runs, so that the warnings it prints
	// go nowhere rather than into the text of the view asked for.
	if err := s.settle(); err != nil {
		return nil, err
	}
	v, err := h(r)
	if err != nil {
		return nil, err
	}
	if b, err = json.Marshal(v); err != nil {
		return nil, &apiError{code: http.StatusInternalServerError, msg: fmt.Sprintf("internal error: encoding the answer: %v", err)}
	}
	return b, nil
}

// writeJSON writes the answer b, or err as {"error": "..."} with its status.
func writeJSON(w http.ResponseWriter, b []byte, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if err != nil {
		code = http.StatusUnprocessableEntity
		ans := map[string]string{"error": err.Error()}
		var ae *apiError
		if errors.As(err, &ae) {
			code = ae.code
			if ae.gone {
				ans["view"] = "gone"
			}
		}
		b, _ = json.Marshal(ans)
	}
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// recoverPanics answers 500 to a request whose handler panicked (outside an endpoint's own
// recovery: the page's files), and logs it; a connection aborted on purpose stays aborted.
func recoverPanics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Printf("er analyzer: internal error serving %s %s: %v\n%s", r.Method, r.URL, p, debug.Stack())
				http.Error(w, "er analyzer: internal error", http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// guard refuses requests whose Host is not a loopback name or address, so that a web page
// elsewhere cannot reach the server through DNS rebinding; requests without the token (403: another
// user of the machine, a page of another site); and requests to /api/ that a page of another site
// made. It sets headers that keep the page from being framed, sniffed or named in a Referer, and
// takes the token out of the query, so that no endpoint sees it.
func (sh *shared) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		api := strings.HasPrefix(r.URL.Path, "/api/")
		refuse := func(msg string) {
			if api {
				writeJSON(w, nil, &apiError{code: http.StatusForbidden, msg: msg})
				return
			}
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, msg, http.StatusForbidden)
		}
		if host != "localhost" && (ip == nil || !ip.IsLoopback() && !sh.allowedHost(ip)) {
			refuse("er analyzer: requests must name a loopback host")
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
		if !sh.authorized(r) {
			refuse("er analyzer: the request does not carry this server's token: open the URL that er analyzer printed, " +
				"with its ?token=; other users of the machine cannot read the experiments")
			return
		}
		if api {
			if why := crossSite(r); why != "" {
				refuse("er analyzer: " + why + ": only the Analyzer's own page may ask for its data")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// crossSite says why r comes from a page of another site, or "": the browser names the site in
// Sec-Fetch-Site, and a POST's origin in Origin. Requests from no page (curl) carry neither.
func crossSite(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "the request comes from a page of another site (Sec-Fetch-Site: " + clip(site) + ")"
	}
	if o := r.Header.Get("Origin"); o != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return "the request comes from a page of another origin (Origin: " + clip(o) + ")"
		}
	}
	return ""
}

// allowedHost accepts an address the server was explicitly told to bind (--bind).
func (sh *shared) allowedHost(ip net.IP) bool {
	return sh.bound != nil && (sh.bound.IsUnspecified() || ip.Equal(sh.bound))
}

// Serve listens on addr ("127.0.0.1:0" for a free loopback port), calls ready with the page's
// URL (with the token) once listening, and whether other machines can connect (the address it bound is not a
// loopback one), and serves until stop is closed (nil: never) or the listener fails.
func (s *Server) Serve(addr string, ready func(url string, exposed bool), stop <-chan struct{}) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	if !tcp.IP.IsLoopback() {
		s.sh.bound = tcp.IP
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)) + "/?" + tokenParam + "=" + s.sh.token
	if ready != nil {
		ready(url, !tcp.IP.IsLoopback())
	}
	srv := newHTTPServer(s.Handler(), defaultTimeouts)
	if stop != nil {
		go func() {
			<-stop
			srv.Close()
		}()
	}
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// timeouts bound how long a connection may take over each part of a request.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts is what the Analyzer's server allows: 10 s for a request's headers, 30 s for the
// whole request, 5 minutes from its end to the answer's last byte (the analysis of a large
// experiment included), 2 minutes for an idle connection kept alive.
var defaultTimeouts = timeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 5 * time.Minute, idle: 2 * time.Minute}

// maxHeaderBytes bounds a request's headers, its URL included.
const maxHeaderBytes = 64 << 10

// newHTTPServer is the http.Server of the Analyzer: a client too slow sending its request
// (slowloris) or reading its answer is cut off, rather than held, with its goroutine, forever.
func newHTTPServer(h http.Handler, to timeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: to.readHeader, ReadTimeout: to.read,
		WriteTimeout: to.write, IdleTimeout: to.idle, MaxHeaderBytes: maxHeaderBytes}
}
