// Package perfabitest builds raw perf records for the tests of the packages that decode them.
package perfabitest

import (
	"encoding/binary"
	"fmt"
)

// Encode builds a raw perf record of type typ: an 8-byte header (with misc and the record's size),
// then each field in order: a uint32 or uint64 little-endian, an int as a uint64, a []byte as is,
// a string NUL-padded to 8 bytes.
func Encode(typ uint32, misc uint16, fields ...any) []byte {
	b := make([]byte, 8, 64)
	for _, f := range fields {
		switch v := f.(type) {
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		case int:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		case []byte:
			b = append(b, v...)
		case string:
			b = append(b, v...)
			b = append(b, 0)
			for len(b)%8 != 0 {
				b = append(b, 0)
			}
		default:
			panic(fmt.Sprintf("perfabitest.Encode: a field of type %T", f))
		}
	}
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint16(b[4:], misc)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(b)))
	return b
}
