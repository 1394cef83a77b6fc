package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Bounds of a static report: the functions whose callers-callees, source and disassembly it
// holds (the first in the function list), and the call tree nodes it can open (those with at
// least staticNodeShare of the total, up to staticNodes of them).
const (
	staticFuncs     = 40
	staticNodes     = 3000
	staticNodeShare = 0.002
	staticTimeline  = 1200 // bins; app.js's TL_WIDTH_STATIC
	staticContext   = 16   // instructions kept on each side of one with metrics, in a report's disassembly
)

// hotInstructions keeps of a disassembly t the rows with metrics, the staticContext rows on each
// side of them and the rows without values (a function's heading); each run of rows left out
// becomes one row that says how many. A report held the whole disassembly of its functions: one of
// cc1's, 14,865 instructions of which 4 had samples, was 1.9 MB of a make -j2's 7 MB report.
func hotInstructions(t *table, context int) *table {
	hot := func(r row) bool {
		for _, c := range r.Cells {
			if !c.B && c.V != 0 {
				return true
			}
		}
		return false
	}
	heading := func(r row) bool { return len(r.Cells) > 0 && r.Cells[0].B }
	keep := make([]bool, len(t.Rows))
	for i, r := range t.Rows {
		if heading(r) {
			keep[i] = true
		}
		if hot(r) {
			for j := max(0, i-context); j <= min(len(t.Rows)-1, i+context); j++ {
				keep[j] = true
			}
		}
	}
	out := *t
	out.Rows = nil
	for i := 0; i < len(t.Rows); {
		if keep[i] {
			out.Rows = append(out.Rows, t.Rows[i])
			i++
			continue
		}
		j := i
		for j < len(t.Rows) && !keep[j] {
			j++
		}
		blank := make([]cell, len(t.Columns))
		for k := range blank {
			blank[k] = cell{B: true}
		}
		out.Rows = append(out.Rows, row{ID: -1, Name: fmt.Sprintf("... %d instructions without metrics, not in this report (er print -disasm shows them)", j-i), Cells: blank})
		i = j
	}
	return &out
}

// checkReportDir refuses a report directory that exists and is not empty, unless force, and a
// path that is not a directory: a report must not write over files it did not write.
func checkReportDir(dir string, force bool) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--html %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--html %s: not a directory: name a new or empty directory for the report", dir)
	}
	if force {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--html %s: %v", dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	var names []string
	for i, e := range ents {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(ents)-3))
			break
		}
		names = append(names, e.Name())
	}
	return fmt.Errorf("--html %s: the directory is not empty (it holds %s): name a new or empty directory, or give --force to write over its files", dir, strings.Join(names, ", "))
}

// WriteStatic writes a static report of the views into dir: the page, and data.js with the
// answers the page would ask the server for, for the current metrics and filter. It opens
// from the file system in a browser, with no server.
func (s *Server) WriteStatic(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.static = true
	defer func() { s.static = false }()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data := map[string]any{}
	routes := s.routes()
	get := func(path string) (any, error) {
		req, err := http.NewRequest("GET", path, nil)
		if err != nil {
			return nil, err
		}
		e, ok := routes[req.URL.Path]
		if !ok {
			return nil, fmt.Errorf("static report: no endpoint %s", req.URL.Path)
		}
		v, err := func() (v any, err error) {
			defer func() {
				if p := recover(); p != nil {
					v, err = nil, fmt.Errorf("internal error writing %s for the static report: %v", path, p)
				}
			}()
			if err := checkQuery(req, req.URL.Path, e.params); err != nil {
				return nil, err
			}
			return e.h(req)
		}()
		if err != nil {
			v = map[string]string{"error": err.Error()}
		}
		return v, err
	}
	record := func(key, path string) error {
		v, err := get(path)
		data[key] = v
		return err
	}
	if err := record("/api/overview", "/api/overview"); err != nil {
		return err
	}
	if err := record("/api/processes", "/api/processes"); err != nil {
		return err
	}
	if err := record("/api/functions", "/api/functions?limit=0"); err != nil {
		return err
	}
	ft := data["/api/functions"].(*table)
	for i, r := range ft.Rows {
		if i > staticFuncs {
			break
		}
		for _, v := range []string{"callers", "source", "disasm"} {
			path := fmt.Sprintf("/api/%s?f=%d", v, r.ID)
			record(path, path) // an error (no source) is recorded for the page to show
			if t, ok := data[path].(*table); ok && v == "disasm" {
				data[path] = hotInstructions(t, staticContext)
			}
		}
	}
	if err := record("/api/tree?node=0&hot=1", "/api/tree?node=0&hot=1"); err != nil {
		return err
	}
	tv, err := s.treeIndex()
	if err != nil {
		return err
	}
	total := tv.p.Total[tv.metric]
	queue := []int{0}
	for n := 0; len(queue) > 0 && n < staticNodes; n++ {
		node := queue[0]
		queue = queue[1:]
		path := "/api/tree?node=" + strconv.Itoa(node)
		record(path, path)
		for _, c := range tv.children(node, s.eng.FuncName) {
			if len(tv.tr.Children(c)) > 0 && float64(tv.tr.Inclusive(c)[tv.metric]) >= staticNodeShare*float64(total) {
				queue = append(queue, c)
			}
		}
	}
	if err := record("/api/flame", "/api/flame"); err != nil {
		return err
	}
	tl := fmt.Sprintf("/api/timeline?t0=0&t1=%d&w=%d", s.duration(), staticTimeline)
	if err := record(tl, tl); err != nil {
		return err
	}
	// The timeline's hover and click: the event nearest each pixel, with its call stack.
	evs, err := s.eventsByPixel(0, s.duration(), staticTimeline)
	if err != nil {
		return err
	}
	data["timeline-events"] = evs
	for cmd := range tableCommands {
		path := "/api/table?cmd=" + cmd
		record(path, path)
	}
	if len(s.cmp) > 1 {
		record("/api/compare", "/api/compare")
		record("/api/diffflame", "/api/diffflame")
	}
	var buf bytes.Buffer
	buf.WriteString("// er analyzer static report: the answers of the views, by request.\nwindow.ER_STATIC = ")
	if err := json.NewEncoder(&buf).Encode(data); err != nil {
		return err
	}
	buf.WriteString(";\n")
	if err := writeReportFile(dir, "data.js", buf.Bytes()); err != nil {
		return err
	}
	return fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "data.js" {
			return err
		}
		b, err := static.ReadFile(path)
		if err != nil {
			return err
		}
		return writeReportFile(dir, d.Name(), b)
	})
}

// writeReportFile replaces dir/name with data through a new file renamed over it: a symlink or a
// hard link already there (with --force) is replaced, and what it points to is never written.
func writeReportFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %v", filepath.Join(dir, name), err)
	}
	return nil
}
