package gprofng

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// packet builds a packet of type typ whose bytes after the 4-byte header are body.
func packet(typ int, body ...byte) []byte {
	p := make([]byte, 4+len(body))
	binary.LittleEndian.PutUint16(p, uint16(len(p)))
	binary.LittleEndian.PutUint16(p[2:], uint16(typ))
	copy(p[4:], body)
	return p
}

type seen struct {
	off int64
	typ int
	n   int
}

func readAll(t *testing.T, b []byte) ([]seen, string, error) {
	t.Helper()
	var out []seen
	w, err := ReadPackets("f", bytes.NewReader(b), int64(len(b)), func(off int64, typ int, p []byte) error {
		out = append(out, seen{off, typ, len(p)})
		return nil
	})
	return out, w, err
}

func TestReadPackets(t *testing.T) {
	var b []byte
	b = append(b, packet(5, make([]byte, 12)...)...)        // 16 bytes at 0
	b = append(b, packet(pcktEmpty, make([]byte, 4)...)...) // skipped
	b = append(b, make([]byte, 4)...)                       // size 0: the rest of the chunk is empty
	b = append(b, make([]byte, chunk-len(b))...)
	b = append(b, packet(8, make([]byte, 4)...)...) // 8 bytes at 16384
	b = append(b, packet(pcktClosed)...)
	got, w, err := readAll(t, b)
	if err != nil || w != "" {
		t.Fatalf("ReadPackets: %v, %q", err, w)
	}
	want := []seen{{0, 5, 16}, {chunk, 8, 8}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("packets %v, want %v", got, want)
	}
}

func TestReadPacketsCut(t *testing.T) {
	b := append(packet(5, make([]byte, 12)...), packet(5, make([]byte, 12)...)[:10]...)
	got, w, err := readAll(t, b)
	if err != nil || len(got) != 1 || w != "f: last packet at offset 16 is incomplete (10 of 16 bytes); ignored" {
		t.Errorf("ReadPackets: %v, %v, %q", got, err, w)
	}
	_, w, _ = readAll(t, append(packet(5, 1, 2, 3, 4), 9, 9))
	if w != "f: 2 bytes at offset 8 are not a whole packet header; ignored" {
		t.Errorf("warning %q", w)
	}
}

func TestReadPacketsDamage(t *testing.T) {
	b := packet(5, 1, 2, 3, 4)
	b[0] = 7
	_, _, err := readAll(t, b)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Offset != 0 || !strings.Contains(err.Error(), "f: offset 0: packet size 7 is not a multiple of 4") {
		t.Errorf("ReadPackets: %v", err)
	}
}

func TestDecode(t *testing.T) {
	d := &PacketDesc{Kind: 19, Fields: []Field{{"IOFD", 4, "INT32"}, {"IONBYTE", 8, "INT64"}, {"SIZE", 8, "UINT32"}, {"IOFNAME", 16, "STRING"}}}
	p := make([]byte, 24)
	binary.LittleEndian.PutUint32(p[4:], uint32(0xffffffff)) // -1
	binary.LittleEndian.PutUint64(p[8:], 1000)
	copy(p[16:], "a.txt\x00zz")
	r, err := decode("f", 0, d, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Int("IOFD") != -1 || r.Int("IONBYTE") != 1000 || r.Ints["SIZE"] != 1000 || r.Texts["IOFNAME"] != "a.txt" {
		t.Errorf("record %+v", r)
	}
	d.Fields = append(d.Fields, Field{"FAR", 20, "INT64"})
	if _, err := decode("f", 64, d, p); err == nil || !strings.Contains(err.Error(), "f: offset 64: packet of kind 19: field FAR at offset 20 is beyond the 24-byte packet") {
		t.Errorf("decode: %v", err)
	}
	d.Fields = []Field{{"X", 0, "DOUBLE"}}
	if _, err := decode("f", 0, d, p); err == nil || !strings.Contains(err.Error(), `type "DOUBLE", not an integer`) {
		t.Errorf("decode: %v", err)
	}
}

func FuzzReadPackets(f *testing.F) {
	f.Add(packet(5, make([]byte, 12)...))
	f.Add(append(packet(pcktEmpty, 0, 0, 0, 0), make([]byte, 8)...))
	f.Add(append(packet(5, 1, 2, 3, 4), 9, 9))
	f.Add(chainTable(8))
	f.Add(append(append(make([]byte, chunk-4), packet(5, make([]byte, 12)...)...), 0, 0, 0, 0)) // a packet across a chunk's end, then an empty rest
	d := &PacketDesc{Kind: 5, Fields: []Field{{"TSTAMP", 4, "INT64"}, {"N", 8, "INT32"}, {"S", 12, "STRING"}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var last int64 = -1
		_, err := ReadPackets("f", bytes.NewReader(b), int64(len(b)), func(off int64, typ int, p []byte) error {
			if off <= last || off+int64(len(p)) > int64(len(b)) || len(p)%4 != 0 {
				t.Fatalf("packet at %d of %d bytes (after %d) in %d", off, len(p), last, len(b))
			}
			last = off
			_, err := decode("f", off, d, p)
			return err
		})
		var fe *FormatError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("not a FormatError: %v", err)
		}
	})
}
