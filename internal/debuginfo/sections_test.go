package debuginfo

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// hdr32 is a 32-bit unit header of the given version and body (after the
// version field).
func hdr32(version uint16, body []byte, rest int) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(2+len(body)+rest))
	b = binary.LittleEndian.AppendUint16(b, version)
	b = append(b, body...)
	return append(b, make([]byte, rest)...)
}

func TestParseUnitHeader(t *testing.T) {
	abbrev4 := []byte{0, 0, 0, 0}
	cases := []struct {
		name    string
		info    []byte
		want    unitHeader
		wantErr string
	}{
		{"v4", hdr32(4, append(abbrev4, 8), 5), unitHeader{end: 4 + 2 + 5 + 5, die: 11, version: 4, code: true}, ""},
		{"v5 compile", hdr32(5, append([]byte{utCompile, 8}, abbrev4...), 3), unitHeader{end: 4 + 2 + 6 + 3, die: 12, version: 5, code: true}, ""},
		{"v5 skeleton", hdr32(5, append(append([]byte{utSkeleton, 8}, abbrev4...), make([]byte, 8)...), 1), unitHeader{end: 4 + 2 + 14 + 1, die: 20, version: 5, code: true}, ""},
		{"v5 type", hdr32(5, append(append([]byte{utType, 8}, abbrev4...), make([]byte, 12)...), 1), unitHeader{end: 4 + 2 + 18 + 1, die: 24, version: 5}, ""},
		{"dwarf64 v4", func() []byte {
			var b []byte
			b = binary.LittleEndian.AppendUint32(b, 0xffffffff)
			b = binary.LittleEndian.AppendUint64(b, 2+8+1+4)
			b = binary.LittleEndian.AppendUint16(b, 4)
			return append(b, make([]byte, 8+1+4)...)
		}(), unitHeader{end: 12 + 15, die: 12 + 2 + 9, version: 4, code: true}, ""},
		{"short", []byte{1, 0}, unitHeader{}, "offset 0x0: truncated unit length"},
		{"past end", hdr32(4, append(abbrev4, 8), 5)[:12], unitHeader{}, "runs past the section end"},
		{"reserved", []byte{0xf0, 0xff, 0xff, 0xff, 0, 0}, unitHeader{}, "reserved unit length"},
		{"version 7", hdr32(7, append(abbrev4, 8), 2), unitHeader{}, "unsupported DWARF version 7"},
		{"unit type", hdr32(5, append([]byte{0x80, 8}, abbrev4...), 2), unitHeader{}, "unknown unit type 0x80"},
		{"header past unit", hdr32(5, []byte{utSkeleton, 8, 0, 0, 0, 0}, 0), unitHeader{}, "truncated unit header"},
	}
	for _, c := range cases {
		got, err := parseUnitHeader(c.info, 0)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
}

// TestUnitsOfRealFile checks the unit table against debug/dwarf's own walk.
func TestUnitsOfRealFile(t *testing.T) {
	for _, v := range variants[:2] {
		exe := inlineExe(t, v)
		in := open(t, exe)
		in.mu.Lock()
		in.listUnits()
		var got []dwarf.Offset
		for _, u := range in.units {
			got = append(got, u.die)
		}
		in.mu.Unlock()
		ef, err := elf.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ef.DWARF()
		ef.Close()
		if err != nil {
			t.Fatal(err)
		}
		var want []dwarf.Offset
		r := d.Reader()
		for {
			e, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				break
			}
			if e.Tag == dwarf.TagCompileUnit {
				want = append(want, e.Offset)
			}
			r.SkipChildren()
		}
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("%s: units at %v, debug/dwarf says %v", v.name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: unit %d at %#x, debug/dwarf says %#x", v.name, i, got[i], want[i])
			}
		}
	}
}

func TestDWARFSection(t *testing.T) {
	exe := inlineExe(t, variants[0])
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if !hasDWARF(ef) || dwarfSection(ef, "line") == nil || dwarfSection(ef, "nonesuch") != nil {
		t.Error("dwarfSection does not find the sections")
	}
	// A stripped debug file keeps code sections as NOBITS; a NOBITS
	// .debug_info does not count.
	for _, s := range ef.Sections {
		if s.Name == ".debug_info" {
			s.Type = elf.SHT_NOBITS
		}
	}
	if hasDWARF(ef) {
		t.Error("a NOBITS .debug_info counts as DWARF")
	}
}

// TestSetDataErrors feeds broken sections to setData.
func TestSetDataErrors(t *testing.T) {
	exe := inlineExe(t, variants[0])
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	secs := map[string][]byte{}
	for _, n := range []string{"abbrev", "info", "str", "line", "line_str"} {
		b, err := dwarfSection(ef, n).Data()
		if err != nil {
			t.Fatal(err)
		}
		secs[n] = b
	}
	ef.Close()
	in := &Info{Path: "x", Source: "x"}
	if err := in.setData("x", secs); err != nil || !in.HasDWARF {
		t.Fatalf("setData: %v", err)
	}
	broken := map[string][]byte{"abbrev": secs["abbrev"], "info": bytes.Repeat([]byte{0xff}, 3)}
	if err := (&Info{}).setData("y", broken); err == nil || !strings.Contains(err.Error(), "y: ") {
		t.Errorf("setData of a 3-byte .debug_info: %v", err)
	}
}

func TestExecRanges(t *testing.T) {
	exe := inlineExe(t, variants[0])
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	in := &Info{execRanges: execRanges(ef)}
	if !in.isCode(text.Addr) || !in.isCode(text.Addr+text.Size-1) || in.isCode(0) || in.isCode(ef.Section(".data").Addr) {
		t.Errorf("isCode wrong with exec ranges %#x", in.execRanges)
	}
	if in := (&Info{}); !in.isCode(0x1000) || in.isCode(0) || in.isCode(^uint64(0)) {
		t.Error("isCode without sections")
	}
}

// FuzzSections builds debug information from arbitrary section contents:
// never a panic.
func FuzzSections(f *testing.F) {
	if _, err := exec.LookPath("gcc"); err == nil {
		for _, v := range variants[:2] {
			exe := build(f, f.TempDir(), "prog", "gcc", "inline.c", v.flags...)
			ef, err := elf.Open(exe)
			if err != nil {
				f.Fatal(err)
			}
			data := func(n string) []byte {
				if s := dwarfSection(ef, n); s != nil {
					b, _ := s.Data()
					return b
				}
				return nil
			}
			f.Add(data("abbrev"), data("info"), data("line"), data("str"), data("line_str"), data("rnglists"), data("ranges"))
			ef.Close()
		}
	}
	f.Fuzz(func(t *testing.T, abbrev, info, line, str, lineStr, rnglists, ranges []byte) {
		in := &Info{Path: "fuzz", Source: "fuzz"}
		secs := map[string][]byte{"abbrev": abbrev, "info": info, "line": line, "str": str, "line_str": lineStr, "rnglists": rnglists, "ranges": ranges}
		if err := in.setData("fuzz", secs); err != nil {
			return
		}
		exercise(in)
	})
}

// TestSectionDataCompressed: the DWARF sections of an object built with gcc -gz=zlib decompress to
// what debug/elf gives, and the object's lines are found through them; a compressed section with
// a damaged stream is an error naming the section, not a panic.
func TestSectionDataCompressed(t *testing.T) {
	p := build(t, "", "inline-gz", "gcc", "inline.c", "-O2", "-g", "-gz=zlib")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ef.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			continue
		}
		n++
		want, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		got, err := sectionData(ef, s, bytes.NewReader(raw))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; debug/elf gives %d", s.Name, len(got), err, len(want))
		}
	}
	if n == 0 {
		t.Fatalf("%s has no compressed section (gcc -gz=zlib)", p)
	}
	in, err := Open(p)
	if err != nil || !in.HasDWARF || len(in.Files()) == 0 {
		t.Fatalf("Open(%s): %v, DWARF %v, files %q", p, err, in != nil && in.HasDWARF, in.Files())
	}
	// The stream of .debug_info damaged past its header.
	info := ef.Section(".debug_info")
	bad := bytes.Clone(raw)
	for i := info.Offset + 30; i < info.Offset+info.FileSize && i < info.Offset+60; i++ {
		bad[i] ^= 0x5a
	}
	if _, err := sectionData(ef, info, bytes.NewReader(bad)); err == nil {
		t.Errorf("a damaged .debug_info decompressed without an error")
	}
	var d Info
	if err := d.load(p, ef, bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), ".debug_info") {
		t.Errorf("load of a damaged .debug_info: %v; want an error naming it", err)
	}
}
