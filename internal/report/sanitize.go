package report

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// Text that comes from an experiment or a binary (function, file and object names, comments, source
// lines, command lines) may hold control characters; written raw to a terminal, an escape sequence
// clears the screen, retitles the window or worse. In text output they are shown as escapes instead:
// newline and carriage return as \n and \r (tab stays), another C0 control character, DEL or a byte
// that is not UTF-8 as \xNN, a C1 control character (U+0080 to U+009F) as \u00NN.

// suspect reports whether the byte c needs a look: a control byte, DEL, or a byte of a
// multi-byte sequence (which may be C1 or not UTF-8). Tab is left alone (source lines are indented
// with it), and newline too when keepLines.
func suspect(c byte, keepLines bool) bool {
	if c < 0x20 {
		return c != '\t' && (!keepLines || c != '\n')
	}
	return c >= 0x7f
}

// appendEscaped appends s to b with its control characters but tab escaped (newline too unless
// keepLines).
func appendEscaped(b []byte, s []byte, keepLines bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if !suspect(c, keepLines) {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			default:
				b = appendHex(b, `\x`, uint64(c), 2)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendHex(b, `\x`, uint64(c), 2)
		case r <= 0x9f:
			b = appendHex(b, `\u`, uint64(r), 4)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

func appendHex(b []byte, prefix string, v uint64, digits int) []byte {
	b = append(b, prefix...)
	h := strconv.FormatUint(v, 16)
	for range digits - len(h) {
		b = append(b, '0')
	}
	return append(b, h...)
}

// needsEscape reports whether s holds anything that Clean (keepLines false) or SafeWriter (true)
// would change.
func needsEscape(s []byte, keepLines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if !suspect(c, keepLines) {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return true
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 || r <= 0x9f {
			return true
		}
		i += n
	}
	return false
}

// Clean returns s for one line of text: every control character but tab escaped, newline too.
func Clean(s string) string {
	if !needsEscape([]byte(s), false) {
		return s
	}
	return string(appendEscaped(nil, []byte(s), false))
}

// SafeWriter escapes the control characters of what is written through it, except tab and newline,
// so that text output (tables, listings, messages) cannot drive the terminal it is shown on.
type SafeWriter struct {
	w   io.Writer
	buf []byte
}

// NewSafeWriter returns a SafeWriter writing to w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

// Write writes p, escaped, and returns len(p) when all of it was written. A UTF-8 sequence cut by
// the end of p is escaped byte by byte: the writers of er print write whole strings.
func (sw *SafeWriter) Write(p []byte) (int, error) {
	if !needsEscape(p, true) {
		return sw.w.Write(p)
	}
	sw.buf = appendEscaped(sw.buf[:0], p, true)
	if _, err := sw.w.Write(sw.buf); err != nil {
		return 0, err
	}
	if cap(sw.buf) > 64<<10 {
		sw.buf = nil
	}
	return len(p), nil
}
