package compact

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"er/internal/experiment"
)

func sample() *Object {
	return &Object{Path: "/usr/lib/libx.so", BuildID: "0123abcd", Size: 123456, Mtime: 1700000000123456789,
		Chunks: []Chunk{{Addr: 0x1000, Code: []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}}, {Addr: 0x2000, Code: bytes.Repeat([]byte{0x90}, 4000)}},
		Debug:  []byte("ERDI\x01...")}
}

func TestRoundTrip(t *testing.T) {
	for _, o := range []*Object{sample(), {Path: "/a"}} {
		b, err := Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Read(file)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Errorf("read %+v, want %+v", got, o)
		}
	}
	b, _ := Encode(sample())
	if len(b) > 200 {
		t.Errorf("%d bytes for 4 KB of repeated code: the body is not compressed", len(b))
	}
}

// TestEncodeConcurrent: archives encoded by 8 goroutines at once (one encoder serves them all) are
// each the bytes one Encode alone gives.
func TestEncodeConcurrent(t *testing.T) {
	want, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], _ = Encode(sample()) })
	}
	wg.Wait()
	for i, b := range got {
		if !bytes.Equal(b, want) {
			t.Errorf("goroutine %d: %d bytes, not the %d of one Encode alone", i, len(b), len(want))
		}
	}
}

func TestCode(t *testing.T) {
	o := sample()
	if c, err := o.Code(0x1001, 0x1004); err != nil || !bytes.Equal(c, []byte{0x48, 0x89, 0xe5}) {
		t.Errorf("Code inside a chunk: % x, %v", c, err)
	}
	for _, r := range [][2]uint64{{0xfff, 0x1002}, {0x1003, 0x1006}, {0x1005, 0x2001}, {0x3000, 0x3001}, {0x1002, 0x1002}} {
		if _, err := o.Code(r[0], r[1]); err == nil || !strings.Contains(err.Error(), "-a copy") {
			t.Errorf("Code(%#x, %#x): %v, want an error that says what is archived", r[0], r[1], err)
		}
	}
}

func TestChunks(t *testing.T) {
	segs := []experiment.Segment{{Vaddr: 0x1000, Filesz: 0x100, Memsz: 0x100}, {Vaddr: 0x1100, Filesz: 0x80, Memsz: 0x200}}
	var reads [][2]uint64
	read := func(lo, hi uint64) ([]byte, error) {
		reads = append(reads, [2]uint64{lo, hi})
		return make([]byte, hi-lo), nil
	}
	got := Chunks([][2]uint64{{0x10f0, 0x1110}, {0x0, 0x1008}, {0x1170, 0x1300}, {0x1004, 0x100c}}, segs, read)
	want := [][2]uint64{{0x1000, 0x100c}, {0x10f0, 0x1100}, {0x1100, 0x1110}, {0x1170, 0x1180}}
	if !reflect.DeepEqual(reads, want) || len(got) != len(want) {
		t.Errorf("read %x, want %x (cut at the segments' file bytes)", reads, want)
	}
}

func TestDamage(t *testing.T) {
	good, _ := Encode(sample())
	le := binary.LittleEndian
	reseal := func(b []byte) []byte {
		le.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:10], "shorter than the 40-byte header"},
		{"magic", append([]byte("XXXXXXXX"), good[8:]...), "not a compact archive"},
		{"header crc", func() []byte { b := bytes.Clone(good); b[20]++; return b }(), "header checksum"},
		{"version", func() []byte { b := bytes.Clone(good); b[8] = 2; return reseal(b) }(), "format version 2.0"},
		{"cut", good[:len(good)-1], "bytes of body"},
		{"body crc", func() []byte { b := bytes.Clone(good); b[len(b)-1]++; return b }(), "body checksum"},
		{"huge body", func() []byte { b := bytes.Clone(good); le.PutUint64(b[24:], 1<<40); return reseal(b) }(), "more than a compact archive holds"},
		{"body length", func() []byte { b := bytes.Clone(good); le.PutUint64(b[24:], 7); return reseal(b) }(), "decompressed"},
	} {
		_, err := Decode("/e/x.erc", c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/e/x.erc: offset") {
			t.Errorf("%s: %v, want an error naming the file and offset with %q", c.name, err, c.want)
		}
	}
	if _, err := Encode(&Object{Path: "/a", Chunks: []Chunk{{Addr: 2, Code: []byte{1}}, {Addr: 1, Code: []byte{1}}}}); err == nil {
		t.Error("chunks out of order encoded")
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample())
	f.Add(good)
	small, _ := Encode(&Object{Path: "/a", Chunks: []Chunk{{Addr: 1, Code: []byte{2}}}})
	f.Add(small)
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := Decode("fuzz", b)
		if err != nil {
			return
		}
		for _, c := range o.Chunks {
			o.Code(c.Addr, c.Addr+1)
		}
		if _, err := Encode(o); err != nil {
			t.Fatalf("a decoded archive does not encode: %v", err)
		}
	})
}

// FuzzDecodeBody fuzzes the body's decoder behind the checksums, which random bytes seldom pass.
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte("\x02/a\x00\x02\x04\x01\x01\x03\x90\x90\x90\x01\x02ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeBody(b)
		if err != nil {
			return
		}
		if _, err := Encode(o); err != nil {
			t.Fatalf("a decoded body does not encode: %v", err)
		}
	})
}
