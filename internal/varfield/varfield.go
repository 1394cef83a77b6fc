// Package varfield reads the fields of er's compact formats from a byte slice: LEB128 numbers, bytes and strings with a length before them, keeping the first error.
package varfield

import (
	"encoding/binary"
	"fmt"
)

// Reader reads fields from B, from Pos on. After the first error every read returns zero values and
// Err says where and what: the byte offset, and what was wrong.
type Reader struct {
	B   []byte
	Pos int
	Err error
}

// Fail records an error at the current offset, unless one is recorded already.
func (d *Reader) Fail(format string, args ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("byte %d: %s", d.Pos, fmt.Sprintf(format, args...))
	}
}

// Left is the number of bytes not read.
func (d *Reader) Left() int { return len(d.B) - d.Pos }

// Uvarint reads an unsigned LEB128 number (encoding/binary's Uvarint).
func (d *Reader) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B[d.Pos:])
	if n <= 0 {
		d.Fail("a number cut short or too long")
		return 0
	}
	d.Pos += n
	return v
}

// Varint reads a signed, zig-zag LEB128 number (encoding/binary's Varint).
func (d *Reader) Varint() int64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Varint(d.B[d.Pos:])
	if n <= 0 {
		d.Fail("a number cut short or too long")
		return 0
	}
	d.Pos += n
	return v
}

// Byte reads one byte.
func (d *Reader) Byte() byte {
	if d.Err != nil {
		return 0
	}
	if d.Pos >= len(d.B) {
		d.Fail("cut short")
		return 0
	}
	d.Pos++
	return d.B[d.Pos-1]
}

// Bytes reads a Uvarint length and that many bytes (a slice of B).
func (d *Reader) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(d.Left()) {
		d.Fail("%d bytes, more than the %d left", n, d.Left())
		return nil
	}
	out := d.B[d.Pos : d.Pos+int(n)]
	d.Pos += int(n)
	return out
}

// Str reads a string as Bytes.
func (d *Reader) Str() string { return string(d.Bytes()) }

// Count reads a Uvarint number of items each at least min bytes long: a number that the bytes left
// cannot hold is an error, found before anything is allocated for the items.
func (d *Reader) Count(min int) int {
	v := d.Uvarint()
	if v > uint64(d.Left())/uint64(min) {
		d.Fail("%d items, more than the %d bytes left hold", v, d.Left())
		return 0
	}
	return int(v)
}

// End records an error if bytes are left.
func (d *Reader) End() {
	if d.Err == nil && d.Pos != len(d.B) {
		d.Fail("%d bytes after the end", len(d.B)-d.Pos)
	}
}

// AppendUvarint appends v as Uvarint reads it.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendStr appends s as Str reads it.
func AppendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
