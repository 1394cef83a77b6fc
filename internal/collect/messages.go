package collect

import (
	"bytes"
	"io"

	"er/internal/report"
)

// messageWriter is er collect's stderr: each write is one message, and what it holds of the target
// (load objects' paths, command names, program paths, which the target's author chose) is shown
// with its control characters escaped (report.Clean: "\x1b", "\n"), so that a message can neither
// drive the terminal nor forge a line of its own. The newline that ends a write is kept.
type messageWriter struct{ w io.Writer }

func (m messageWriter) Write(p []byte) (int, error) {
	line, nl := bytes.CutSuffix(p, []byte("\n"))
	clean := report.Clean(string(line))
	if nl {
		clean += "\n"
	}
	if _, err := io.WriteString(m.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}
