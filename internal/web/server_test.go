package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"er/internal/erprint"
)

// testServer opens the test experiment and serves it.
func testServer(t *testing.T) (*Server, *httptest.Server, string) {
	t.Helper()
	exp := writeTestExperiment(t, t.TempDir())
	s, err := Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tokened(s))
	t.Cleanup(ts.Close)
	return s, ts, exp
}

// get fetches path and decodes its JSON into v, failing unless the status is want.
func get(t *testing.T, ts *httptest.Server, path string, want int, v any) {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
}

func post(t *testing.T, ts *httptest.Server, path, body string, want int, v any) {
	t.Helper()
	resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: status %d, want %d: %s", path, body, resp.StatusCode, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
	}
}

// printRows runs er print -printmode json with args and returns its first table's rows: each row's
// name and its values in ns (times) or counts, by column key.
func printRows(t *testing.T, args ...string) []printRow {
	t.Helper()
	var out, errb bytes.Buffer
	if code := erprint.Main(append([]string{"-printmode", "json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("er print %v: exit %d: %s", args, code, errb.String())
	}
	var doc []struct { // one document: an entry per command, with its tables
		Tables []struct {
			Columns []struct {
				Key string `json:"key"`
			} `json:"columns"`
			Rows []struct {
				Name  string `json:"name"`
				Cells []struct {
					V int64 `json:"v"`
				} `json:"cells"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc) == 0 || len(doc[0].Tables) == 0 {
		t.Fatalf("%v: %s", err, out.String())
	}
	tbl := doc[0].Tables[0]
	var rows []printRow
	for _, r := range tbl.Rows {
		pr := printRow{name: r.Name, v: map[string]int64{}}
		for j, c := range tbl.Columns {
			pr.v[c.Key] = r.Cells[j].V
		}
		rows = append(rows, pr)
	}
	return rows
}

type printRow struct {
	name string
	v    map[string]int64
}

func rowNames(rows []row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func findRow(t *testing.T, rows []row, name string) row {
	t.Helper()
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %v", name, rowNames(rows))
	return row{}
}

// TestLocalOnly checks that a request naming another host is refused (DNS rebinding), and that the
// page's headers forbid framing.
func TestLocalOnly(t *testing.T) {
	s, _, _ := testServer(t)
	h := tokened(s)
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:80": 200,
		"evil.example:8080": 403, "10.0.0.1": 403, "": 403} {
		req := httptest.NewRequest("GET", "/api/overview", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: status %d, want %d", host, rec.Code, want)
		}
		if want == 200 && rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("Host %q: no X-Frame-Options", host)
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<nav id="tabs">`) {
		t.Errorf("the page: %d %.200s", rec.Code, rec.Body.String())
	}
}
