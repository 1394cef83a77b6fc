package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"er/internal/erprint"
	"er/internal/synth"
	"er/internal/web"
)

// printDoc runs er print -printmode json with args in this process and decodes its one document:
// the entries of the commands, each table decoded as generic JSON.
func printDoc(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	all := append([]string{"-printmode", "json"}, args...)
	if code := erprint.Main(all, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("er print %s: exit %d\n%s", strings.Join(all, " "), code, errb.String())
	}
	d := json.NewDecoder(&out)
	var doc []map[string]any
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("er print %s: not a JSON document: %v\n%s", strings.Join(all, " "), err, out.String())
	}
	if _, err := d.Token(); err != io.EOF {
		t.Fatalf("er print %s: more than one JSON document", strings.Join(all, " "))
	}
	return doc
}

// apiGet fetches path from the Analyzer and decodes its JSON.
// analyzerServer serves the Analyzer s for a test, each request carrying its token.
func analyzerServer(t *testing.T, s *web.Server) *httptest.Server {
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Er-Token", s.Token())
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func apiGet(t *testing.T, ts *httptest.Server, path string) map[string]any {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// sameJSON compares what er print and the Analyzer give for a view, field by field.
func sameJSON(t *testing.T, what string, print, api any) {
	t.Helper()
	if path, p, a := firstDiff(print, api, ""); path != "" {
		t.Errorf("%s: er print's JSON is not the Analyzer's: at %s, er print has %s, the Analyzer %s", what, path, p, a)
	}
}

// firstDiff finds where two decoded JSON values differ: the path, and each one's value there.
func firstDiff(a, b any, path string) (string, string, string) {
	show := func(v any) string {
		j, _ := json.Marshal(v)
		return fmt.Sprintf("%.300s", j)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		for k, v := range x {
			if w, ok := y[k]; !ok {
				return path + "." + k, show(v), "nothing"
			} else if p, s1, s2 := firstDiff(v, w, path+"."+k); p != "" {
				return p, s1, s2
			}
		}
		for k, w := range y {
			if _, ok := x[k]; !ok {
				return path + "." + k, "nothing", show(w)
			}
		}
		return "", "", ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			if p, s1, s2 := firstDiff(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, s1, s2
			}
		}
		return "", "", ""
	default:
		if reflect.DeepEqual(a, b) {
			return "", "", ""
		}
	}
	if path == "" {
		path = "."
	}
	return path, show(a), show(b)
}

// keysOf lists the field names of JSON objects in v, with their paths ("tables[].rows[].cells[].v").
func keysOf(v any, path string, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into[path+"."+k] = true
			keysOf(e, path+"."+k, into)
		}
	case []any:
		for _, e := range x {
			keysOf(e, path+"[]", into)
		}
	}
}

// TestPrintJSONIsAnalyzers: er print -printmode json gives each view's tables with the fields and
// the values the Analyzer's API gives for the same view (/api/functions, /api/callers, /api/table,
// /api/source, /api/disasm), on a synthetic experiment and on a real one with I/O tracing. Before,
// er print's rows had "values" by key in seconds and "selected", the Analyzer's "cells" in ns and
// "mark"; er print's columns "percent", the Analyzer's "pct" and "kind".
func TestPrintJSONIsAnalyzers(t *testing.T) {
	t.Run("synthetic", func(t *testing.T) {
		exp := filepath.Join(t.TempDir(), "synth.1.er")
		if err := synth.Write(exp, synth.Spec{Samples: 3000, Functions: 60, Threads: 3, Stacks: 200, Seed: 7, Duration: 3e9}); err != nil {
			t.Fatal(err)
		}
		compareViews(t, exp, nil)
	})
	t.Run("ioprog", func(t *testing.T) {
		needCollect(t)
		exp, r := collectExp(t, nil, "-p", "on", "-i", "on", cprog(t, "ioprog"), t.TempDir())
		if r.code != 0 {
			t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
		}
		compareViews(t, exp, []string{"posix_io", "stdio_io", "main"})
	})
}

// compareViews compares er print's JSON and the Analyzer's for the views of exp; funcs, when
// given, are functions of the program with source lines, whose source and disassembly are compared
// too (with the I/O views).
func compareViews(t *testing.T, exp string, funcs []string) {
	io := funcs != nil
	s, err := web.Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	ts := analyzerServer(t, s)

	// The function list, and the callers-callees of a function (csingle) by its index.
	fl := apiGet(t, ts, "/api/functions")
	doc := printDoc(t, "-functions", exp)
	sameJSON(t, "functions", doc[0]["tables"].([]any)[0], fl)
	keys := map[string]bool{}
	var generic any
	b, _ := json.Marshal(doc)
	json.Unmarshal(b, &generic)
	keysOf(generic, "", keys)
	for _, k := range []string{"[].view", "[].tables", "[].tables[].columns[].key", "[].tables[].columns[].kind", "[].tables[].columns[].pct",
		"[].tables[].rows[].id", "[].tables[].rows[].name", "[].tables[].rows[].cells", "[].tables[].rows[].cells[].v", "[].tables[].rows[].cells[].p",
		"[].tables[].matched", "[].tables[].sort"} {
		if !keys[k] {
			t.Errorf("er print's JSON has no %s", k)
		}
	}
	rows := fl["rows"].([]any)
	checked := 0
	for _, r := range rows[1:] {
		row := r.(map[string]any)
		name, id := row["name"].(string), int(row["id"].(float64))
		if strings.Count(fmt.Sprint(rows), "name:"+name+" ") > 1 || io && !slices.Contains(funcs, name) {
			continue // not a name that says which function, or not one with source
		}
		args := []string{"-csingle", name}
		views := []string{"callers"}
		if io {
			args = append(args, "-source", name, "-disasm", name)
			views = append(views, "source", "disasm")
		}
		doc := printDoc(t, append(args, exp)...)
		for i, v := range views {
			api := apiGet(t, ts, fmt.Sprintf("/api/%s?f=%d", v, id))
			if txt, ok := doc[i]["text"]; ok {
				api["text"] = txt // what the command printed besides its table (the source file's name)
			}
			sameJSON(t, v+" "+name, doc[i]["tables"].([]any)[0], api)
		}
		if checked++; checked == 3 {
			break
		}
	}
	if checked == 0 {
		t.Errorf("no function to compare callers-callees of: %v", rows)
	}

	// Views of several tables, or text: /api/table answers {"tables", "text"} as er print's
	// entries have them, besides the view's name.
	cmds := []string{"thread_list", "cpu_list", "sample_list", "lobjects", "objects", "experiment_list", "statistics", "overview", "lines", "pcs"}
	if io {
		cmds = append(cmds, "iostat", "ioactivity", "iodetail")
	}
	var args []string
	for _, c := range cmds {
		args = append(args, "-"+c)
	}
	doc = printDoc(t, append(args, exp)...)
	if len(doc) != len(cmds) {
		t.Fatalf("%d entries for %d commands", len(doc), len(cmds))
	}
	for i, c := range cmds {
		api := apiGet(t, ts, "/api/table?cmd="+c)
		if doc[i]["view"] != c {
			t.Errorf("entry %d is %v, want %s", i, doc[i]["view"], c)
		}
		delete(doc[i], "view")
		sameJSON(t, c, doc[i], api)
	}
}
