// Package expfiles handles experiment directories and experiment groups as whole objects on disk.
package expfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"er/internal/regfile"
)

// Name suffixes and the first line of a group file.
const (
	ExperimentSuffix = ".er"
	GroupSuffix      = ".erg"
	GroupHeader      = "#analyzer experiment group"
)

// maxGroupSize is the largest group file read: 16 MiB holds some 100,000 experiments' paths.
const maxGroupSize = 16 << 20

// groupEntry is one experiment line of a group file.
type groupEntry struct {
	line int    // 1-based line number in the group file
	name string // as written, trimmed
	path string // resolved: relative names are joined to the group file's directory
}

// IsGroup reports whether path is an experiment group: a regular file (or a link to one) whose
// name ends in .erg and whose first line is GroupHeader.
func IsGroup(path string) bool {
	if !strings.HasSuffix(filepath.Clean(path), GroupSuffix) {
		return false
	}
	f, _, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(GroupHeader)+2)
	n, _ := io.ReadFull(f, b)
	first, _, _ := bytes.Cut(b[:n], []byte("\n"))
	return headerLine(string(first))
}

// headerLine reports whether line is the group header (trailing blanks and a CR allowed).
func headerLine(line string) bool {
	return strings.TrimRight(line, " \t\r") == GroupHeader
}

// checkGroupName checks that path names a group file.
func checkGroupName(path string) error {
	if !strings.HasSuffix(filepath.Clean(path), GroupSuffix) {
		return fmt.Errorf("%s: not an experiment group: the name of a group file must end in %s", path, GroupSuffix)
	}
	return nil
}

// parseGroup reads a group file and checks its format, not whether its experiments exist.
func parseGroup(path string) ([]groupEntry, error) {
	if err := checkGroupName(path); err != nil {
		return nil, err
	}
	data, err := regfile.ReadFile(path, maxGroupSize, "a group file")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such experiment group", path)
		}
		return nil, fmt.Errorf("experiment group %s: %w", filepath.Clean(path), err)
	}
	lines := strings.Split(string(data), "\n")
	if len(data) == 0 || !headerLine(lines[0]) {
		first := lines[0]
		if len(first) > 60 {
			first = first[:60] + "..."
		}
		return nil, fmt.Errorf("%s:1: not an experiment group: the first line is %q; a group file starts with the line %q",
			path, first, GroupHeader)
	}
	dir := filepath.Dir(path)
	var entries []groupEntry
	for i, raw := range lines[1:] {
		n := i + 2
		name := strings.TrimSpace(raw)
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		if strings.ContainsRune(name, 0) {
			return nil, fmt.Errorf("%s:%d: the line holds a NUL byte; a group file holds one experiment path a line", path, n)
		}
		clean := filepath.Clean(name)
		switch {
		case strings.HasSuffix(clean, GroupSuffix):
			return nil, fmt.Errorf("%s:%d: %q is an experiment group; a group lists experiments, not other groups", path, n, name)
		case !strings.HasSuffix(clean, ExperimentSuffix) || filepath.Base(clean) == ExperimentSuffix:
			return nil, fmt.Errorf("%s:%d: %q is not an experiment name (experiment names end in %s); fix or delete the line",
				path, n, name, ExperimentSuffix)
		}
		p := clean
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		entries = append(entries, groupEntry{line: n, name: name, path: p})
	}
	return entries, nil
}

// ReadGroup reads the experiment group file at path and returns the paths of its experiments, in the
// file's order. A relative path in the file is taken relative to the group file's directory; the
// returned paths are usable from the current directory. Blank lines and lines starting with # after the
// first are skipped. It is an error for a line to name something other than an existing experiment,
// or to name an experiment a second time; the error gives the line number.
func ReadGroup(path string) ([]string, error) {
	entries, err := parseGroup(path)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]int{}
	for _, e := range entries {
		if err := checkMember(path, e); err != nil {
			return nil, err
		}
		key := sameFileKey(e.path)
		if first, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed again (first on line %d); delete one of the lines", path, e.line, e.name, first)
		}
		seen[key] = e.line
		out = append(out, e.path)
	}
	return out, nil
}

// checkMember checks that a group's entry names an existing experiment.
func checkMember(group string, e groupEntry) error {
	shown := e.name
	if e.path != filepath.Clean(e.name) {
		shown = fmt.Sprintf("%s (%s)", e.name, e.path)
	}
	fi, err := os.Stat(e.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s:%d: %s: no such experiment; relative names are taken from the group file's directory", group, e.line, shown)
	case err != nil:
		return fmt.Errorf("%s:%d: %w", group, e.line, err)
	case !fi.IsDir():
		return fmt.Errorf("%s:%d: %s: not an experiment: it is not a directory", group, e.line, shown)
	case !IsExperiment(e.path):
		return fmt.Errorf("%s:%d: %s: not an experiment: it has no log.xml", group, e.line, shown)
	}
	return nil
}

// sameFileKey identifies a file for duplicate detection: its device and inode when it exists,
// else its absolute path.
func sameFileKey(path string) string {
	if fi, err := os.Stat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// AppendGroup adds the experiment exp to the group file group, creating the group file (with its
// header) when it does not exist. exp is written relative to the group file's directory when it lies
// in that directory or below it, else as an absolute path. An experiment already listed is not added
// again. exp must be named like an experiment (ending in .er); it need not exist yet. Concurrent
// appends to one group (several er collect runs) are serialized with a file lock.
func AppendGroup(group, exp string) error {
	if err := checkGroupName(group); err != nil {
		return err
	}
	clean := filepath.Clean(exp)
	if !strings.HasSuffix(clean, ExperimentSuffix) || filepath.Base(clean) == ExperimentSuffix {
		return fmt.Errorf("cannot add %s to experiment group %s: an experiment's name ends in %s", exp, group, ExperimentSuffix)
	}
	if strings.ContainsAny(clean, "\n\r\x00") || clean != strings.TrimSpace(clean) {
		return fmt.Errorf("cannot add %q to experiment group %s: a group file cannot hold a path with a line break or leading or trailing blanks", exp, group)
	}
	name, err := groupRelative(group, clean)
	if err != nil {
		return fmt.Errorf("cannot add %s to experiment group %s: %w", exp, group, err)
	}
	if err := regfile.Check(group); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	// Without blocking, and only a regular file: a FIFO put there in the meantime is refused.
	f, err := os.OpenFile(group, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("experiment group %s: %w", group, &regfile.NotRegularError{Path: group, Mode: fi.Mode()})
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("experiment group %s: locking: %w", group, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGroupSize+1))
	if err != nil {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	if len(data) > maxGroupSize {
		return fmt.Errorf("experiment group %s: %w", group, &regfile.TooLargeError{Path: group, Size: fi.Size(), Limit: maxGroupSize, What: "a group file"})
	}
	var add []byte
	if len(data) == 0 {
		add = append(add, GroupHeader+"\n"...)
	} else {
		entries, err := parseGroup(group)
		if err != nil {
			return err
		}
		resolved := name
		if !filepath.IsAbs(name) {
			resolved = filepath.Join(filepath.Dir(group), name)
		}
		key := sameFileKey(resolved)
		for _, e := range entries {
			if sameFileKey(e.path) == key {
				return nil // already listed
			}
		}
		if data[len(data)-1] != '\n' {
			add = append(add, '\n')
		}
	}
	add = append(add, name+"\n"...)
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	if _, err := f.Write(add); err != nil {
		return fmt.Errorf("experiment group %s: %w", group, err)
	}
	return f.Close()
}

// groupRelative is how exp is written in group: relative to the group's directory when exp lies in it
// or below it, else absolute.
func groupRelative(group, exp string) (string, error) {
	absExp, err := filepath.Abs(exp)
	if err != nil {
		return "", err
	}
	absDir, err := filepath.Abs(filepath.Dir(group))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absExp)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return absExp, nil
	}
	return rel, nil
}
