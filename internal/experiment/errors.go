package experiment

import "fmt"

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
