package jitdump

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// file builds a jitdump file: its header, then the records.
func file(flags uint64, recs ...[]byte) []byte {
	h := binary.LittleEndian.AppendUint32(nil, magic)
	h = binary.LittleEndian.AppendUint32(h, 1)
	h = binary.LittleEndian.AppendUint32(h, headerSize)
	h = binary.LittleEndian.AppendUint32(h, 62)
	h = binary.LittleEndian.AppendUint32(h, 0)
	h = binary.LittleEndian.AppendUint32(h, 4242)
	h = binary.LittleEndian.AppendUint64(h, 1)
	h = binary.LittleEndian.AppendUint64(h, flags)
	for _, r := range recs {
		h = append(h, r...)
	}
	return h
}

func record(id uint32, ts uint64, body []byte) []byte {
	r := binary.LittleEndian.AppendUint32(nil, id)
	r = binary.LittleEndian.AppendUint32(r, uint32(recHeader+len(body)))
	r = binary.LittleEndian.AppendUint64(r, ts)
	return append(r, body...)
}

func load(ts, addr uint64, name string, code []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 4242)
	b = binary.LittleEndian.AppendUint32(b, 4243)
	b = binary.LittleEndian.AppendUint64(b, addr) // vma
	b = binary.LittleEndian.AppendUint64(b, addr)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(code)))
	b = binary.LittleEndian.AppendUint64(b, 7) // code index
	b = append(append(b, name...), 0)
	return record(recCodeLoad, ts, append(b, code...))
}

func move(ts, from, to, size uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 4242)
	b = binary.LittleEndian.AppendUint32(b, 4243)
	b = binary.LittleEndian.AppendUint64(b, to)
	b = binary.LittleEndian.AppendUint64(b, from)
	b = binary.LittleEndian.AppendUint64(b, to)
	b = binary.LittleEndian.AppendUint64(b, size)
	b = binary.LittleEndian.AppendUint64(b, 7)
	return record(recCodeMove, ts, b)
}

func TestRead(t *testing.T) {
	b := file(0,
		load(100, 0x1000, "JS:~alpha x.js:1:1", []byte{0x55, 0xc3}),
		record(4, 110, make([]byte, 24)), // unwinding information: stepped over
		load(120, 0x2000, "JS:*beta x.js:5:1", []byte{0x90, 0x90, 0xc3}),
		move(130, 0x2000, 0x3000, 3),
		load(140, 0x1000, "JS:*alpha x.js:1:1", []byte{0xc3}), // over alpha's first code
		load(150, 0x4000, "cut", []byte{1, 2, 3, 4})[:30],     // the last record, cut short
	)
	got, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{
		{Name: "JS:~alpha x.js:1:1", Addr: 0x1000, Size: 2, Load: 100, Unload: 140, Code: []byte{0x55, 0xc3}},
		{Name: "JS:*beta x.js:5:1", Addr: 0x2000, Size: 3, Load: 120, Unload: 130, Code: []byte{0x90, 0x90, 0xc3}},
		{Name: "JS:*beta x.js:5:1", Addr: 0x3000, Size: 3, Load: 130, Code: []byte{0x90, 0x90, 0xc3}},
		{Name: "JS:*alpha x.js:1:1", Addr: 0x1000, Size: 1, Load: 140, Code: []byte{0xc3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	good := file(0, load(1, 0x1000, "f", []byte{0xc3}))
	for _, c := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"magic", append([]byte{1, 2, 3, 4}, good[4:]...), "no jitdump magic"},
		{"version", append(append(append([]byte{}, good[:4]...), 2, 0, 0, 0), good[8:]...), "version 2"},
		{"tsc", file(1, load(1, 0x1000, "f", []byte{0xc3})), "time-stamp counter"},
		{"short header", good[:20], "its header"},
		{"record size", file(0, []byte{0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), "a record of 4 bytes"},
		{"code too big", file(0, func() []byte { r := load(1, 0x1000, "f", []byte{0xc3}); r[40] = 9; return r }()), "does not fit"},
	} {
		_, err := Read(bytes.NewReader(c.b), int64(len(c.b)))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(file(0, load(100, 0x1000, "a", []byte{0x55, 0xc3}), move(130, 0x1000, 0x3000, 2)))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, _ := Read(bytes.NewReader(b), int64(len(b)))
		for _, fn := range fs {
			if uint64(len(fn.Code)) != fn.Size || fn.Size == 0 || fn.Unload != 0 && fn.Unload < fn.Load {
				t.Fatalf("function %+v", fn)
			}
		}
	})
}
