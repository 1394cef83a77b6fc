package perfimport

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"er/internal/perfabi"
	"er/internal/perfdata"
)

// craft builds a perf.data stream in pipe mode for the tests: one cpu-clock event whose samples
// hold ip, pid/tid, time and period, then the records added.
type craft struct{ b []byte }

const craftPid = 4242

func newCraft() *craft {
	c := &craft{}
	c.b = binary.LittleEndian.AppendUint64(c.b, 0x32454c4946524550) // PERFILE2
	c.b = binary.LittleEndian.AppendUint64(c.b, 16)
	a := make([]uint64, 16)
	a[0] = uint64(perfdata.TypeSoftware) | 128<<32
	a[1] = perfdata.SWCPUClock
	a[2] = 1000000 // period: 1 ms
	a[3] = perfabi.SampleIP | perfabi.SampleTID | perfabi.SampleTime | perfabi.SamplePeriod
	c.record(perfdata.RecordHeaderAttr, 0, wordsOf(a...)...)
	return c
}

func wordsOf(w ...uint64) []byte {
	var b []byte
	for _, x := range w {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

// record appends a record of type typ with body (padded to 8 bytes).
func (c *craft) record(typ uint32, misc uint16, body ...byte) {
	for len(body)%8 != 0 {
		body = append(body, 0)
	}
	c.b = binary.LittleEndian.AppendUint32(c.b, typ)
	c.b = binary.LittleEndian.AppendUint16(c.b, misc)
	c.b = binary.LittleEndian.AppendUint16(c.b, uint16(8+len(body)))
	c.b = append(c.b, body...)
}

// comm names process pid.
func (c *craft) comm(pid uint32, name string) {
	body := binary.LittleEndian.AppendUint32(nil, pid)
	body = binary.LittleEndian.AppendUint32(body, pid)
	c.record(perfabi.RecordComm, 0, append(body, name+"\x00"...)...)
}

// mmap maps [addr, addr+n) of the file at path, executable, into process pid.
func (c *craft) mmap(pid uint32, addr, n, pgoff uint64, path string) {
	body := binary.LittleEndian.AppendUint32(nil, pid)
	body = binary.LittleEndian.AppendUint32(body, pid)
	body = append(body, wordsOf(addr, n, pgoff)...)
	c.record(perfabi.RecordMmap, perfabi.CPUModeUser, append(body, path+"\x00"...)...)
}

// sample adds a user-mode sample of process pid at ip, time tm.
func (c *craft) sample(pid uint32, ip, tm uint64) {
	c.record(perfabi.RecordSample, perfabi.CPUModeUser, wordsOf(ip, uint64(pid)|uint64(pid)<<32, tm, 1000000)...)
}

// write writes the stream to a file in a new directory and returns its path.
func (c *craft) write(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "crafted.data")
	writeFile(t, p, c.b)
	return p
}

func writeFile(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
