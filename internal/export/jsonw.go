package export

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// jsonWriter writes JSON a value at a time, as encoding/json writes the same values (strings
// with HTML's <, > and & escaped, floats in the shortest form that reads back), so that a file of
// millions of stacks or events is never whole in memory.
type jsonWriter struct {
	w   *bufio.Writer
	buf []byte // scratch for a number
}

func newJSONWriter(w io.Writer) *jsonWriter {
	return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10), buf: make([]byte, 0, 32)}
}

// raw writes s as it is: punctuation and keys.
func (j *jsonWriter) raw(s string) { j.w.WriteString(s) }

// int writes v.
func (j *jsonWriter) int(v int64) {
	j.buf = strconv.AppendInt(j.buf[:0], v, 10)
	j.w.Write(j.buf)
}

// uint writes v.
func (j *jsonWriter) uint(v uint64) {
	j.buf = strconv.AppendUint(j.buf[:0], v, 10)
	j.w.Write(j.buf)
}

// float writes f as encoding/json does: the shortest decimal that reads back as f, in exponent form
// below 1e-6 and from 1e21 (f is finite: a time).
func (j *jsonWriter) float(f float64) {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(j.buf[:0], f, format, -1, 64)
	if format == 'e' { // e-07 -> e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	j.buf = b
	j.w.Write(b)
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string: quotes, backslashes and control characters escaped (\n, \r, \t,
// \b and \f short), <, > and &, U+2028 and U+2029 as \u escapes, invalid UTF-8 as U+FFFD.
func (j *jsonWriter) str(s string) {
	w := j.w
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(c)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[c>>4])
				w.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

// flush writes what is buffered, and returns the first error of any write.
func (j *jsonWriter) flush() error { return j.w.Flush() }
