package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tokened is s's Handler for the tests of everything but the token: each request carries it.
func tokened(s *Server) http.Handler {
	h := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(tokenHeader, s.Token())
		h.ServeHTTP(w, r)
	})
}

// otherUserRequests are what another user of the machine tries: every file of the page and every
// endpoint, the POSTs that would change the owner's view, and guessed tokens.
var otherUserRequests = []struct{ method, path, body string }{
	{"GET", "/", ""}, {"GET", "/index.html", ""}, {"GET", "/app.js", ""}, {"GET", "/style.css", ""}, {"GET", "/data.js", ""},
	{"GET", "/api/overview", ""}, {"GET", "/api/functions", ""}, {"GET", "/api/source?f=1", ""}, {"GET", "/api/disasm?f=1", ""},
	{"GET", "/api/callers?f=1", ""}, {"GET", "/api/table?cmd=experiment_list", ""}, {"GET", "/api/processes", ""},
	{"GET", "/api/timeline?t0=0&t1=2000000000&w=100", ""}, {"GET", "/api/nosuch", ""},
	{"POST", "/api/filter", `{"expr":"THRID == 1"}`}, {"POST", "/api/metrics", `{"spec":"e.totalcpu:name"}`},
	{"POST", "/api/viewmode", `{"mode":"machine"}`},
	{"GET", "/api/overview?token=00000000000000000000000000000000", ""}, {"GET", "/?token=", ""},
}

// TestHelperClient is the client that TestOtherUserRefused runs as another user: it sends
// otherUserRequests to $ER_WEB_CLIENT (a URL without the token; with X-Er-Token: $ER_WEB_GUESS when
// set) and prints each status and the start of its body as a line of JSON.
func TestHelperClient(t *testing.T) {
	base := os.Getenv("ER_WEB_CLIENT")
	if base == "" {
		t.Skip("run by TestOtherUserRefused")
	}
	for _, rq := range otherUserRequests {
		req, err := http.NewRequest(rq.method, base+rq.path, strings.NewReader(rq.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if g := os.Getenv("ER_WEB_GUESS"); g != "" {
			req.Header.Set("X-Er-Token", g)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		line, _ := json.Marshal(map[string]any{"method": rq.method, "path": rq.path, "status": resp.StatusCode, "body": string(b)})
		fmt.Println("ANSWER " + string(line))
	}
}

// TestOtherUserRefused serves the test experiment on a loopback port and runs a client as uid
// 65534 (nobody), another user of the machine: every request it makes, for the page's files, the
// views' data and the POSTs that change a view, with no token or a guessed one, is refused with
// 403 and learns nothing of the experiment; the owner's view is unchanged after its POSTs; and the
// same requests with the token, from root, are answered 200.
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a client as another user (uid 65534) needs root")
	}
	s, err := Open([]string{writeTestExperiment(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	urls, stop, done := make(chan string, 1), make(chan struct{}), make(chan error, 1)
	go func() { done <- s.Serve("127.0.0.1:0", func(u string, _ bool) { urls <- u }, stop) }()
	defer func() { close(stop); <-done }()
	printed := <-urls
	u, err := url.Parse(printed)
	if err != nil {
		t.Fatal(err)
	}
	token := u.Query().Get("token")
	if len(token) < 32 {
		t.Errorf("the URL er analyzer prints, %s, has no token of 128 bits (32 hexadecimal digits)", printed)
	}
	base := u.Scheme + "://" + u.Host
	guesses := []string{"", strings.Repeat("0", 32)}
	if token != "" { // the token but its last digit
		last := "0"
		if token[len(token)-1] == '0' {
			last = "1"
		}
		guesses = append(guesses, token[:len(token)-1]+last)
	}
	// The test binary, where nobody may run it.
	dir, err := os.MkdirTemp("", "er-web-other-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "web.test")
	if b, err := os.ReadFile(self); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, guess := range guesses {
		cmd := exec.Command(bin, "-test.run=^TestHelperClient$", "-test.v")
		cmd.Env = append(os.Environ(), "ER_WEB_CLIENT="+base, "ER_WEB_GUESS="+guess)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the client as uid 65534: %v\n%s", err, out)
		}
		n := 0
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "ANSWER ")
			if !ok {
				continue
			}
			var a struct {
				Method, Path, Body string
				Status             int
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			n++
			if a.Status != http.StatusForbidden {
				t.Errorf("as uid 65534, token %q: %s %s: status %d, want 403: %.200s", guess, a.Method, a.Path, a.Status, a.Body)
			}
			for _, secret := range []string{"leafA", "worker", "./prog", "testhost", token} {
				if secret != "" && strings.Contains(a.Body, secret) {
					t.Errorf("as uid 65534, token %q: %s %s: the answer holds %q: %.200s", guess, a.Method, a.Path, secret, a.Body)
				}
			}
		}
		if n != len(otherUserRequests) {
			t.Fatalf("the client as uid 65534 made %d requests of %d:\n%s", n, len(otherUserRequests), out)
		}
	}
	// The owner's view is as it was: no filter, the default metrics.
	var ov struct {
		Filter     filterState `json:"filter"`
		MetricSpec string      `json:"metricSpec"`
	}
	rootGet := func(path string, v any) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Er-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if v != nil {
			json.NewDecoder(resp.Body).Decode(v)
		}
		return resp.StatusCode
	}
	if code := rootGet("/api/overview", &ov); code != 200 || ov.Filter.Text != "" || strings.Contains(ov.MetricSpec, "e.totalcpu:name") {
		t.Errorf("after the other user's POSTs the owner's view has filter %q, metrics %q (status %d)", ov.Filter.Text, ov.MetricSpec, code)
	}
	// The same requests with the token, from root.
	for _, rq := range otherUserRequests {
		if strings.Contains(rq.path, "token=") || rq.path == "/api/nosuch" {
			continue
		}
		req, _ := http.NewRequest(rq.method, base+rq.path, strings.NewReader(rq.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Er-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 200
		if strings.HasPrefix(rq.path, "/api/source") || strings.HasPrefix(rq.path, "/api/disasm") {
			want = 422 // the synthetic program has no file: an answer of the analysis, past the token
		}
		if resp.StatusCode != want {
			t.Errorf("as root with the token: %s %s: status %d, want %d: %.200s", rq.method, rq.path, resp.StatusCode, want, b)
		}
	}
	// The printed URL itself opens the page, its files named with the token.
	resp, err := http.Get(printed)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `src="app.js?token=`+token+`"`) {
		t.Errorf("GET %s: status %d: %.300s", printed, resp.StatusCode, b)
	}
}
