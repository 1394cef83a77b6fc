package gprofng

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Packet types of gprofng's data files (the first 16 bits' companion in each packet's header).
const (
	pcktEmpty  = 0     // padding
	pcktFrame  = 11    // data.frameinfo: a frame-info uid and its stacks
	pcktUID    = 17    // data.frameinfo: a partial stack by uid
	pcktClosed = 65535 // closes a block
)

// chunk is the unit in which gprofng writes its data files: a packet size of 0 means that the
// rest of the chunk is empty.
const chunk = 16384

// FormatError is damage in a gprofng experiment file: which file, at which byte offset, what is
// wrong.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s (the gprofng experiment is damaged, or was written by a version that er cannot read)", e.File, e.Offset, e.Msg)
}

// ReadPackets reads the packets of a gprofng data file of size bytes from r, calling fn with each
// packet's offset, type and bytes (header included; valid only during the call). Each packet
// starts with its size (16 bits, a multiple of 4, the header included) and its type (16 bits);
// empty packets and a size of 0 (the rest of a 16 KiB chunk is empty) are skipped. A last packet
// that the file ends in the middle of (an experiment still being written, or cut) is not read:
// warn says so. Damage is a *FormatError.
func ReadPackets(file string, r io.Reader, size int64, fn func(off int64, typ int, p []byte) error) (warn string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 1<<16)
	var off int64
	for off < size {
		if size-off < 4 {
			return fmt.Sprintf("%s: %d bytes at offset %d are not a whole packet header; ignored", file, size-off, off), nil
		}
		if _, err := io.ReadFull(br, buf[:4]); err != nil {
			return "", fmt.Errorf("%s: offset %d: %w", file, off, err)
		}
		n := int64(binary.LittleEndian.Uint16(buf))
		typ := int(binary.LittleEndian.Uint16(buf[2:]))
		if n == 0 {
			next := min((off/chunk+1)*chunk, size)
			if _, err := br.Discard(int(next - off - 4)); err != nil {
				return "", fmt.Errorf("%s: offset %d: %w", file, off, err)
			}
			off = next
			continue
		}
		if n%4 != 0 || n < 4 {
			return "", &FormatError{file, off, fmt.Sprintf("packet size %d is not a multiple of 4", n)}
		}
		if off+n > size {
			return fmt.Sprintf("%s: last packet at offset %d is incomplete (%d of %d bytes); ignored", file, off, size-off, n), nil
		}
		if _, err := io.ReadFull(br, buf[4:n]); err != nil {
			return "", fmt.Errorf("%s: offset %d: %w", file, off, err)
		}
		if typ != pcktEmpty && typ != pcktClosed {
			if err := fn(off, typ, buf[:n]); err != nil {
				return "", err
			}
		}
		off += n
	}
	return "", nil
}

// value reads field f of packet p as an integer: INT32 sign-extended, UINT32, INT64, UINT64.
func value(p []byte, f Field) (uint64, error) {
	w := 8
	if f.Type == "INT32" || f.Type == "UINT32" {
		w = 4
	}
	switch f.Type {
	case "INT32", "UINT32", "INT64", "UINT64":
	default:
		return 0, fmt.Errorf("field %s has type %q, not an integer", f.Name, f.Type)
	}
	if f.Offset+w > len(p) {
		return 0, fmt.Errorf("field %s at offset %d is beyond the %d-byte packet", f.Name, f.Offset, len(p))
	}
	switch f.Type {
	case "INT32":
		return uint64(int64(int32(binary.LittleEndian.Uint32(p[f.Offset:])))), nil
	case "UINT32":
		return uint64(binary.LittleEndian.Uint32(p[f.Offset:])), nil
	}
	return binary.LittleEndian.Uint64(p[f.Offset:]), nil
}

// text reads a STRING field: the bytes from its offset to the first NUL or the packet's end.
func text(p []byte, f Field) string {
	if f.Offset >= len(p) {
		return ""
	}
	s := p[f.Offset:]
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

// Record is a data packet decoded by its layout: the value of each integer field, the text of
// each string field.
type Record struct {
	Kind   int
	Ints   map[string]uint64
	Texts  map[string]string
	Offset int64 // in the file
}

// Int returns the field's value as an int64, negative where the collector wrote a negative value
// (0 when the layout has no such field).
func (r *Record) Int(name string) int64 { return int64(r.Ints[name]) }

// decode decodes packet p with its layout.
func decode(file string, off int64, d *PacketDesc, p []byte) (Record, error) {
	r := Record{Kind: d.Kind, Ints: make(map[string]uint64, len(d.Fields)), Offset: off}
	for _, f := range d.Fields {
		if f.Type == "STRING" {
			if r.Texts == nil {
				r.Texts = map[string]string{}
			}
			r.Texts[f.Name] = text(p, f)
			continue
		}
		v, err := value(p, f)
		if err != nil {
			return Record{}, &FormatError{file, off, fmt.Sprintf("packet of kind %d: %v", d.Kind, err)}
		}
		r.Ints[f.Name] = v
	}
	return r, nil
}
