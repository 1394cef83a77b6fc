package varfield

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	b := AppendStr(nil, "name")
	b = AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -7)
	b = append(b, 9)
	b = AppendUvarint(b, 2)
	b = append(b, 1, 2) // the two items Count reads
	d := Reader{B: b}
	if s, u, v, c, n := d.Str(), d.Uvarint(), d.Varint(), d.Byte(), d.Count(1); s != "name" || u != 300 || v != -7 || c != 9 || n != 2 || d.Err != nil {
		t.Fatalf("read %q %d %d %d %d, %v", s, u, v, c, n, d.Err)
	}
	d.Pos += 2
	d.End()
	if d.Err != nil {
		t.Errorf("End: %v", d.Err)
	}
	for _, c := range []struct {
		b    []byte
		read func(*Reader)
		want string
	}{
		{[]byte{0x80}, func(d *Reader) { d.Uvarint() }, "byte 0: a number cut short"},
		{[]byte{5, 'a'}, func(d *Reader) { d.Str() }, "byte 1: 5 bytes, more than the 1 left"},
		{[]byte{3, 0}, func(d *Reader) { d.Count(1) }, "3 items, more than the 1 bytes left"},
		{nil, func(d *Reader) { d.Byte() }, "cut short"},
		{[]byte{1, 2}, func(d *Reader) { d.Byte(); d.End() }, "1 bytes after the end"},
	} {
		d := Reader{B: c.b}
		c.read(&d)
		if d.Err == nil || !strings.Contains(d.Err.Error(), c.want) {
			t.Errorf("% x: %v, want %q", c.b, d.Err, c.want)
		}
		if d.Uvarint() != 0 || d.Str() != "" { // after an error, zero values
			t.Errorf("% x: a read after the error gave something", c.b)
		}
	}
}
