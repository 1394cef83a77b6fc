package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
//
// The report is no more open than the most private file it holds the contents of (reportMode):
// with a source file of mode 0600, data.js is 0600 and a directory it makes 0700. It returns what
// made the report private, nil when it is not.
func (s *Server) WriteStatic(dir string) (*Privacy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.static = true
	defer func() { s.static = false }()
	data := map[string]any{}
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
			return e.h(s, req)
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
		return nil, err
	}
	if err := record("/api/processes", "/api/processes"); err != nil {
		return nil, err
	}
	if err := record("/api/functions", "/api/functions?limit=0"); err != nil {
		return nil, err
	}
	ft := data["/api/functions"].(*table)
	dirs, _ := s.eng.Experiments()
	held := slices.Clone(dirs) // the files whose contents the report holds
	prof, err := s.eng.Profile()
	if err != nil {
		return nil, err
	}
	for i, r := range ft.Rows {
		if i > staticFuncs {
			break
		}
		for _, v := range []string{"callers", "source", "disasm"} {
			path := fmt.Sprintf("/api/%s?f=%d", v, r.ID)
			record(path, path) // an error (no source) is recorded for the page to show
			if t, ok := data[path].(*table); ok && v == "disasm" {
				data[path] = hotInstructions(t, staticContext)
				if fn := &prof.Functions[r.ID]; r.ID > 0 && fn.Object > 0 && fn.Object < len(prof.Objects) {
					held = append(held, prof.Objects[fn.Object].Path)
				}
			}
		}
	}
	if err := record("/api/tree?node=0&hot=1", "/api/tree?node=0&hot=1"); err != nil {
		return nil, err
	}
	tv, err := s.treeIndex()
	if err != nil {
		return nil, err
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
		return nil, err
	}
	tl := fmt.Sprintf("/api/timeline?t0=0&t1=%d&w=%d", s.duration(), staticTimeline)
	if err := record(tl, tl); err != nil {
		return nil, err
	}
	// The timeline's hover and click: the event nearest each pixel, with its call stack.
	evs, err := s.eventsByPixel(0, s.duration(), staticTimeline)
	if err != nil {
		return nil, err
	}
	data["timeline-events"] = evs
	for cmd := range tableCommands {
		path := "/api/table?cmd=" + cmd
		record(path, path)
	}
	for cmd := range indexTables {
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
		return nil, err
	}
	buf.WriteString(";\n")
	held = append(held, s.eng.SourcesRead()...)
	pv := reportMode(held)
	if err := makeReportDir(dir, pv); err != nil {
		return nil, err
	}
	if err := writeReportFile(dir, "data.js", buf.Bytes(), pv.File); err != nil {
		return nil, err
	}
	err = fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "data.js" {
			return err
		}
		b, err := static.ReadFile(path)
		if err != nil {
			return err
		}
		return writeReportFile(dir, d.Name(), b, pv.File)
	})
	if err != nil {
		return nil, err
	}
	if pv.File == reportFileMode {
		return nil, nil
	}
	return &pv, nil
}

// reportFileMode is the mode of a report's files when what it holds is readable by every user; the
// umask applies, as it would to any file created.
const reportFileMode = 0o644

// Privacy is how open a static report is, and why: the mode of its files (a directory it makes
// adds the search bits), and the most private file it holds the contents of.
type Privacy struct {
	File    fs.FileMode // the report's files
	Because string      // the file that closed it most, "" when none did
	Mode    fs.FileMode // that file's mode
}

// reportMode is the mode the report's files may have when they hold the contents of the files
// (and directories) held: readable by the group, and by others, only when every one of them is.
// A directory counts as readable when it can be read and searched. Files that cannot be examined
// (gone since) close nothing.
func reportMode(held []string) Privacy {
	pv := Privacy{File: reportFileMode &^ fs.FileMode(umask())}
	for _, p := range held {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		m := fi.Mode().Perm()
		group, other := m&0o040 != 0, m&0o004 != 0
		if fi.IsDir() {
			group, other = group && m&0o010 != 0, other && m&0o001 != 0
		}
		was := pv.File
		if !group {
			pv.File &^= 0o070
		}
		if !other {
			pv.File &^= 0o007
		}
		if pv.File != was {
			pv.Because, pv.Mode = p, m
		}
	}
	return pv
}

// umask is the process's file mode creation mask, from /proc/self/status (022 when it cannot be
// read there).
func umask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	return 0o022
}

// dirMode is the mode of a directory holding files of mode m: each class that may read them may
// also search it.
func dirMode(m fs.FileMode) fs.FileMode { return m | 0o700 | (m&0o044)>>2 }

// makeReportDir makes the report's directory, no more open than its files (pv); an existing one
// that is more open is left as it is, and said so.
func makeReportDir(dir string, pv Privacy) error {
	want := dirMode(pv.File)
	err := os.Mkdir(dir, want)
	if errors.Is(err, fs.ErrExist) {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if open := fi.Mode().Perm() &^ want; open&0o055 != 0 && pv.Because != "" {
			fmt.Fprintf(reportWarnings, "er analyzer: warning: --html %s: the directory is mode %04o, more open than the report's files (%04o, as %s is %04o): "+
				"other users can list it, but not read the report; chmod %04o %s to hide it\n", dir, fi.Mode().Perm(), pv.File, pv.Because, pv.Mode, want, dir)
		}
		return nil
	}
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(dir, want); err != nil {
			return err
		}
	}
	return os.Chmod(dir, want) // exactly: Mkdir cut want by the umask, which cut it already
}

// reportWarnings is where WriteStatic's warnings go.
var reportWarnings io.Writer = os.Stderr

// writeReportFile replaces dir/name with data through a new file of mode perm renamed over it: a
// symlink or a hard link already there (with --force) is replaced, and what it points to is never
// written.
func writeReportFile(dir, name string, data []byte, perm fs.FileMode) error {
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
		err = os.Chmod(tmp, perm)
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
