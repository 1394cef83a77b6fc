package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWriteStatic checks that a static report holds the page and the answers of its views, the
// same as the server gives.
func TestWriteStatic(t *testing.T) {
	s, ts, _ := testServer(t)
	dir := filepath.Join(t.TempDir(), "report")
	if err := s.WriteStatic(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "app.js", "style.css", "data.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "data.js"))
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	start := strings.Index(js, "window.ER_STATIC = ")
	if start < 0 {
		t.Fatalf("data.js: %.200s", js)
	}
	js = strings.TrimSuffix(strings.TrimSpace(js[start+len("window.ER_STATIC = "):]), ";")
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &data); err != nil {
		t.Fatal(err)
	}
	var fl table
	if err := json.Unmarshal(data["/api/functions"], &fl); err != nil {
		t.Fatal(err)
	}
	var live table
	get(t, ts, "/api/functions", 200, &live)
	if len(fl.Rows) != len(live.Rows) || fl.Rows[0].Cells[0].V != live.Rows[0].Cells[0].V {
		t.Errorf("static function list %d rows (total %d), live %d", len(fl.Rows), fl.Rows[0].Cells[0].V, len(live.Rows))
	}
	work := findRow(t, fl.Rows, "work")
	for _, key := range []string{"/api/overview", "/api/flame", "/api/tree?node=0&hot=1", "/api/timeline?t0=0&t1=2000002001&w=1200",
		"/api/table?cmd=thread_list", "/api/callers?f=" + strconv.Itoa(work.ID), "/api/source?f=" + strconv.Itoa(work.ID)} {
		if _, ok := data[key]; !ok {
			t.Errorf("no %s in the report", key)
		}
	}
	// The synthetic program has no file: its source view is an error the page shows.
	if !strings.Contains(string(data["/api/source?f="+strconv.Itoa(work.ID)]), `"error"`) {
		t.Errorf("source of work: %s", data["/api/source?f="+strconv.Itoa(work.ID)])
	}
	var o struct {
		Static bool `json:"static"`
	}
	json.Unmarshal(data["/api/overview"], &o)
	if !o.Static {
		t.Error("the report's overview does not say it is static")
	}
}
