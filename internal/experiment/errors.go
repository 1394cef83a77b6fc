package experiment

import (
	"errors"
	"fmt"
)

// ErrNotExperiment is what errors.Is finds in Open's error when the path is not an experiment: it
// is not a directory, or holds none of an experiment's files. The error's text names the path:
// callers show it as it is. (A path that does not exist gives the *fs.PathError of os.Stat.)
var ErrNotExperiment = errors.New("not an experiment")

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
