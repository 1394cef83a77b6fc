package perfabitest

import (
	"bytes"
	"testing"
)

// TestEncode: the header holds the type, misc and size; fields follow little-endian, a string
// NUL-padded to 8 bytes.
func TestEncode(t *testing.T) {
	got := Encode(9, 0x2002, uint32(7), uint32(8), uint64(0x0102030405060708), "ab", []byte{1, 2})
	want := []byte{9, 0, 0, 0, 0x02, 0x20, 34, 0,
		7, 0, 0, 0, 8, 0, 0, 0,
		8, 7, 6, 5, 4, 3, 2, 1,
		'a', 'b', 0, 0, 0, 0, 0, 0,
		1, 2}
	if !bytes.Equal(got, want) {
		t.Errorf("Encode = %v\nwant     %v", got, want)
	}
}
