package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrNotExperiment is what errors.Is finds in Open's error when the path is not an experiment: it
// is not a directory, or holds none of an experiment's files. The error's text names the path:
// callers show it as it is. (A path that does not exist gives the *fs.PathError of os.Stat.)
var ErrNotExperiment = errors.New("not an experiment")

// ErrGprofng is what errors.Is finds in Open's error when the experiment was recorded by GNU
// gprofng: internal/gprofng reads those.
var ErrGprofng = errors.New("recorded by GNU gprofng")

// gprofngVersion reports whether log.xml's bytes are gprofng's (it writes no XML declaration, and
// its root element is <experiment version="12.4">, closed at once), and its version.
func gprofngVersion(log []byte) (string, bool) {
	const prefix = `<experiment version="`
	b := bytes.TrimLeft(log, " \t\r\n")
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return "", false
	}
	v, _, ok := bytes.Cut(b[len(prefix):], []byte(`"`))
	major, _, _ := bytes.Cut(v, []byte("."))
	n, err := strconv.Atoi(string(major))
	if !ok || err != nil || n < 10 {
		return "", false
	}
	return string(v), true
}

// notExperiment is Open's error for a path that is not an experiment.
type notExperiment struct{ msg string }

func (e *notExperiment) Error() string { return e.msg }

func (e *notExperiment) Unwrap() error { return ErrNotExperiment }

// FormatError reports damage in an experiment file: which file, where, what
// is wrong and what the user can do about it.
type FormatError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damage; -1 when it concerns the whole file
	Msg    string // what is wrong
	Hint   string // what to do; a generic suggestion is used when empty
}

// Error implements error.
func (e *FormatError) Error() string {
	hint := e.Hint
	if hint == "" {
		hint = "the experiment is damaged; record it again"
	}
	if e.Offset < 0 {
		return fmt.Sprintf("%s: %s (%s)", e.File, e.Msg, hint)
	}
	return fmt.Sprintf("%s: offset %d: %s (%s)", e.File, e.Offset, e.Msg, hint)
}

// formatErrorf builds a *FormatError with a formatted message.
func formatErrorf(file string, off int64, hint, format string, args ...any) *FormatError {
	return &FormatError{File: file, Offset: off, Msg: fmt.Sprintf(format, args...), Hint: hint}
}
