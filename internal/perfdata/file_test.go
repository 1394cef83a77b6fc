package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"er/internal/perfabi"
)

// The fixtures under testdata were recorded with perf 6.1 on x86-64 (Linux 6.18) from a small busy
// loop (leaf called by main, 20 million iterations):
//
//	fp.data:    perf record -e cpu-clock,page-faults -g -F 1000 -- ./busy
//	dwarf.data: perf record --call-graph dwarf,512 -F 500 -- ./busy
//	pipe.data:  perf record -o - -e cpu-clock -g -F 500 -- ./busy > pipe.data
//
// The values the tests expect are those perf report -D and perf report --header-only print for them.

func open(t *testing.T, name string) *File {
	t.Helper()
	f, err := Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestHeaderAndFeatures(t *testing.T) {
	f := open(t, "fp.data")
	if f.Pipe {
		t.Error("fp.data read as pipe mode")
	}
	if len(f.Attrs) != 2 {
		t.Fatalf("%d events, want 2", len(f.Attrs))
	}
	want := []struct {
		name   string
		config uint64
		ids    []uint64
	}{{"cpu-clock", 0, []uint64{1218925, 1218926}}, {"page-faults", 2, []uint64{1218927, 1218928}}}
	for i, w := range want {
		a := f.Attrs[i]
		if a.Name != w.name || a.Type != TypeSoftware || a.Config != w.config || !a.Freq() || a.SamplePeriod != 1000 {
			t.Errorf("event %d: %s type %d config %d freq %v period %d; want %s type 1 config %d at 1000 Hz",
				i, a.Name, a.Type, a.Config, a.Freq(), a.SamplePeriod, w.name, w.config)
		}
		if len(a.IDs) != 2 || a.IDs[0] != w.ids[0] || a.IDs[1] != w.ids[1] {
			t.Errorf("event %d ids %v, want %v", i, a.IDs, w.ids)
		}
		if wantST := perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SampleCallchain | perfabi.SampleID | perfabi.SamplePeriod; a.SampleType != wantST {
			t.Errorf("event %d sample type %#x, want %#x", i, a.SampleType, wantST)
		}
		if !a.SampleIDAll() {
			t.Errorf("event %d: sample_id_all not set", i)
		}
	}
	if !f.Attrs[0].Clock() || f.Attrs[1].Clock() {
		t.Errorf("Clock(): cpu-clock %v, page-faults %v", f.Attrs[0].Clock(), f.Attrs[1].Clock())
	}
	if f.Hostname != "vm" || f.OSRelease != "6.18.44-fc-v669" || f.PerfVersion != "6.1.187" || f.Arch != "x86_64" {
		t.Errorf("host %q os %q perf %q arch %q", f.Hostname, f.OSRelease, f.PerfVersion, f.Arch)
	}
	if f.NrCPUsOnline != 2 || f.NrCPUsAvail != 2 || f.TotalMemKB != 24684084 {
		t.Errorf("cpus %d/%d, memory %d kB", f.NrCPUsOnline, f.NrCPUsAvail, f.TotalMemKB)
	}
	if got := strings.Join(f.Cmdline, " "); !strings.HasSuffix(got, "-e cpu-clock,page-faults -g -F 1000 -- ./busy") || f.Cmdline[0] != "/usr/bin/perf" {
		t.Errorf("cmdline %q", got)
	}
	if f.FirstSample != 85340190519436 || f.LastSample != 85340224812053 {
		t.Errorf("sample times %d to %d", f.FirstSample, f.LastSample)
	}
	ids := map[string]string{
		"[kernel.kallsyms]": "4a5a9b0affb66c437abcd455d2738af879985fa9",
		"/tmp/pt/busy":      "3272e69c1105d0b17809c0c8c99a1ec9450a9b18",
		"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": "7ebc65e52f2bbea498b4040fa92f7238377aaba9",
		"[vdso]": "e95baaeaec8534edc5df3654182ddf12b19d9b23",
	}
	if len(f.BuildIDs) != len(ids) {
		t.Errorf("%d build ids, want %d", len(f.BuildIDs), len(ids))
	}
	for name, id := range ids {
		if got := f.BuildIDOf(name); got != id {
			t.Errorf("build id of %s: %q, want %s", name, got, id)
		}
	}
	if !f.BuildIDs[0].Kernel || f.BuildIDs[1].Kernel {
		t.Errorf("kernel flags: %v %v", f.BuildIDs[0].Kernel, f.BuildIDs[1].Kernel)
	}
	if f.BuildIDOf("/nowhere") != "" {
		t.Error("a build id for a file the profile does not name")
	}
}

func TestDwarfAttr(t *testing.T) {
	f := open(t, "dwarf.data")
	a := f.Attrs[0]
	if a.Name != "cpu-clock:ppp" || a.SampleRegsUser != 0xff0fff || a.SampleStackUser != 512 || a.Flags&FlagExcludeCCUser == 0 {
		t.Errorf("%s: regs %#x stack %d flags %#x", a.Name, a.SampleRegsUser, a.SampleStackUser, a.Flags)
	}
	if want := perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SampleAddr | perfabi.SampleCallchain | perfabi.SamplePeriod | perfabi.SampleRegsUser | perfabi.SampleStackUser | perfabi.SampleDataSrc; a.SampleType != want {
		t.Errorf("sample type %#x, want %#x", a.SampleType, want)
	}
}

// header builds a file header with the given sections.
func header(attrSize uint64, attrs, data [2]uint64, feats ...int) []byte {
	b := make([]byte, fileHeaderSize)
	le := binary.LittleEndian
	le.PutUint64(b, magic)
	le.PutUint64(b[8:], fileHeaderSize)
	le.PutUint64(b[16:], attrSize)
	le.PutUint64(b[24:], attrs[0])
	le.PutUint64(b[32:], attrs[1])
	le.PutUint64(b[40:], data[0])
	le.PutUint64(b[48:], data[1])
	for _, id := range feats {
		b[72+id/8] |= 1 << (id % 8)
	}
	return b
}

func TestBadFiles(t *testing.T) {
	fp, err := os.ReadFile("testdata/fp.data")
	if err != nil {
		t.Fatal(err)
	}
	swapped := make([]byte, 16)
	binary.BigEndian.PutUint64(swapped, magic)
	binary.BigEndian.PutUint64(swapped[8:], 16)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "offset 0x0: 0 bytes: too short for a perf.data header"},
		{"text", []byte("hello, world, this is not perf"), `magic "hello, w": not a perf.data file`},
		{"big-endian", swapped, "a big-endian perf.data file"},
		{"old format", append([]byte("PERFFILE"), make([]byte, 100)...), "the first format (PERFFILE)"},
		{"header size", append(append([]byte("PERFILE2"), 50, 0, 0, 0, 0, 0, 0, 0), make([]byte, 100)...), "offset 0x8: header size 50"},
		{"data outside", header(136, [2]uint64{104, 0}, [2]uint64{104, 1 << 20}), "offset 0x28: the data section [0x68, +0x100000) lies outside the file's 104 bytes"},
		{"attr size", append(header(10, [2]uint64{104, 10}, [2]uint64{114, 0}), make([]byte, 10)...), "attribute entries of 10 bytes"},
		{"attr partial", append(header(136, [2]uint64{104, 100}, [2]uint64{204, 0}), make([]byte, 100)...), "not a whole number of 136-byte entries"},
		{"feature table", header(136, [2]uint64{104, 0}, [2]uint64{104, 0}, FeatHostname), "offset 0x68: the feature table section [0x68, +0x10) lies outside"},
		{"cut", fp[:2000], "lies outside the file's 2000 bytes"},
	}
	for _, tc := range tests {
		_, err := NewFile(bytes.NewReader(tc.data), int64(len(tc.data)), "bad.data")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.data: ") {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
		var fe *FormatError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FormatError", tc.name, err)
		}
	}
}

func TestOpenNotRegular(t *testing.T) {
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Open(a directory): %v", err)
	}
	if _, err := Open("testdata/missing.data"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing): %v", err)
	}
}
