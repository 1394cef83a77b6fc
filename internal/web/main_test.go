package web

import (
	"bytes"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMainUsage checks er analyzer's usage errors and its static report.
func TestMainUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "no experiment given"},
		{[]string{"--port", "70000", "x.er"}, 2, "not a port number"},
		{[]string{"--nosuch", "x.er"}, 2, "flag provided but not defined"},
		{[]string{"--no-browser", "/nonexistent/x.er"}, 1, "/nonexistent/x.er"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("er analyzer %v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.msg)
		}
	}
	exp := writeTestExperiment(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "r")
	var out, errb bytes.Buffer
	if code := Main([]string{"--html", dir, exp}, &out, &errb); code != 0 {
		t.Fatalf("--html: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), filepath.Join(dir, "index.html")) {
		t.Errorf("stdout %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data.js")); err != nil {
		t.Error(err)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines; ready is
// closed once the server's URL is written.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready chan struct{}
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, _ := b.b.Write(p)
	if b.ready != nil && strings.Contains(b.b.String(), "http://") {
		close(b.ready)
		b.ready = nil
	}
	return n, nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// serveOnce runs er analyzer with args until it prints its URL, fetches the overview from it,
// stops it and returns its exit code, stdout and stderr.
func serveOnce(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	stdout := &lockedBuffer{ready: make(chan struct{})}
	stderr := &lockedBuffer{}
	stop := make(chan struct{})
	done := make(chan int, 1)
	ready := stdout.ready
	go func() { done <- run(args, stdout, stderr, stop) }()
	select {
	case <-ready:
	case code := <-done:
		return code, stdout.String(), stderr.String()
	}
	// The URL printed carries the token: the same request without it is refused.
	u, err := url.Parse(strings.TrimSpace(strings.TrimPrefix(stdout.String(), "er analyzer: ")))
	if err != nil || u.Query().Get("token") == "" {
		t.Errorf("%v: the URL printed, %q, has no token (%v)", args, stdout.String(), err)
	} else {
		u.Path = "/api/overview"
		bare := *u
		bare.RawQuery = ""
		for _, c := range []struct {
			url  string
			want int
		}{{u.String(), 200}, {bare.String(), 403}} {
			resp, err := http.Get(c.url)
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%v: GET %s: status %d, want %d", args, c.url, resp.StatusCode, c.want)
			}
		}
	}
	close(stop)
	return <-done, stdout.String(), stderr.String()
}

// TestBindWarning checks that --bind warns that other machines can read the experiments exactly
// when it names an address they can reach: localhost, 127.x, ::1 and [::1] are loopback.
func TestBindWarning(t *testing.T) {
	exp := writeTestExperiment(t, t.TempDir())
	ipv6 := true
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		ipv6 = false
	} else {
		ln.Close()
	}
	for _, c := range []struct {
		bind string
		warn bool
		v6   bool
	}{
		{"127.0.0.1", false, false},
		{"localhost", false, false},
		{"127.0.0.2", false, false},
		{"::1", false, true},
		{"[::1]", false, true},
		{"0.0.0.0", true, false},
	} {
		if c.v6 && !ipv6 {
			t.Logf("--bind %s: skipped, this machine has no IPv6 loopback", c.bind)
			continue
		}
		code, stdout, stderr := serveOnce(t, "--bind", c.bind, "--no-browser", exp)
		warned := strings.Contains(stderr, "other machines can read these experiments")
		if code != 0 || warned != c.warn || !strings.Contains(stdout, "http://") {
			t.Errorf("--bind %s: exit %d, warned %v (want %v): stdout %q, stderr %q", c.bind, code, warned, c.warn, stdout, stderr)
		}
	}
}

// TestHTMLRefusesNonEmptyDir checks that --html will not write over the files of a directory that
// is not empty, unless --force: it names the directory, exits 1 and leaves the files alone.
func TestHTMLRefusesNonEmptyDir(t *testing.T) {
	exp := writeTestExperiment(t, t.TempDir())
	dir := t.TempDir()
	mine := filepath.Join(dir, "index.html")
	if err := os.WriteFile(mine, []byte("my own page"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main([]string{"--html", dir, exp}, &out, &errb)
	want := "er analyzer: --html " + dir + ": the directory is not empty (it holds index.html): name a new or empty directory, or give --force to write over its files\n"
	if code != 1 || !strings.HasSuffix(errb.String(), want) {
		t.Errorf("--html into a directory holding index.html: exit %d, stderr %q; want 1 and %q", code, errb.String(), want)
	}
	if b, _ := os.ReadFile(mine); string(b) != "my own page" {
		t.Errorf("index.html was overwritten: %.60q", b)
	}
	file := filepath.Join(dir, "index.html")
	errb.Reset()
	if code := Main([]string{"--html", file, exp}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "--html "+file+": not a directory") {
		t.Errorf("--html naming a file: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"--html", dir, "--force", exp}, &out, &errb); code != 0 {
		t.Fatalf("--html --force: exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(mine); !strings.Contains(string(b), `<nav id="tabs">`) {
		t.Errorf("with --force, index.html is not the report's: %.60q", b)
	}
	// With --force, a link the directory holds is replaced, and what it points to is not written.
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("not the report's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "app.js")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "app.js")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "data.js")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "data.js")); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := Main([]string{"--html", dir, "--force", exp}, &out, &errb); code != 0 {
		t.Fatalf("--html --force over links: exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(outside); string(b) != "not the report's" {
		t.Errorf("--html --force wrote through a link into %s: %.60q", outside, b)
	}
	for _, name := range []string{"app.js", "data.js"} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after --force: %v, %v; want a regular file of the report", name, fi, err)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".*")); len(ents) > 0 {
		t.Errorf("temporary files left: %q", ents)
	}
	empty := t.TempDir()
	errb.Reset()
	if code := Main([]string{"--html", empty, exp}, &out, &errb); code != 0 {
		t.Errorf("--html into an empty directory: exit %d: %s", code, errb.String())
	}
}

// TestBrowserNotGivenToken: the browser is started on a file that sends it on to the URL, never on
// the URL itself, whose token any user of the machine would read in its command line (ps). The
// file is the user's alone (0600) and goes when the server does.
func TestBrowserNotGivenToken(t *testing.T) {
	bin, rec := t.TempDir(), filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + rec + ".tmp && mv " + rec + ".tmp " + rec + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("DISPLAY", ":99")
	const url = "http://127.0.0.1:1234/?token=0123456789abcdef0123456789abcdef"
	var stderr strings.Builder
	done := openBrowser(url, &stderr)
	var args []byte
	for range 600 { // the fake browser runs on its own: wait for what it was given (a guard of 60 s, not a figure)
		if b, err := os.ReadFile(rec); err == nil {
			args = b
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	page, ok := strings.CutPrefix(strings.TrimSpace(string(args)), "file://")
	if !ok || strings.Contains(string(args), "0123456789abcdef") {
		t.Fatalf("the browser was started with %q (stderr %q), want a file:// page without the token", args, stderr.String())
	}
	fi, err := os.Stat(page)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the page given to the browser: %v %v, want mode 0600", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(page)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("the page's directory: %v %v, want mode 0700", di, err)
	}
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), `content="0;url=`+url+`"`) {
		t.Errorf("the page given to the browser does not send it on to %s:\n%s", url, b)
	}
	done()
	if _, err := os.Stat(page); err == nil {
		t.Error("the page given to the browser is still there when the server is done")
	}
}
