package objfile

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnxz: streams that xz 5.4.1 wrote (testdata/xz: each check type, preset -9, and three blocks
// with their sizes in the block headers, as `xz -T2` writes them) decompress to the payload.
func TestUnxz(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "xz", "payload.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "xz", "*.xz"))
	if len(files) < 6 {
		t.Fatalf("only %d .xz files in testdata/xz", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := unxz(data, 1<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want the %d bytes of payload.txt", f, len(got), err, len(want))
		}
		// Four bytes of stream padding may follow.
		if got, err := unxz(append(data[:len(data):len(data)], 0, 0, 0, 0), 1<<20); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s with stream padding: %v", f, err)
		}
		if _, err := unxz(data, len(want)-1); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s with a limit of %d bytes: %v", f, len(want)-1, err)
		}
		// Every truncation and every flipped byte is an error, never a panic or a wrong answer.
		for i := range data {
			if _, err := unxz(data[:i], 1<<20); err == nil {
				t.Errorf("%s cut to %d bytes: no error", f, i)
			}
			bad := bytes.Clone(data)
			bad[i] ^= 0x55
			if got, err := unxz(bad, 1<<20); err == nil && !bytes.Equal(got, want) {
				t.Errorf("%s with byte %d changed: wrong data and no error", f, i)
			}
		}
	}
}

// TestUnxzLargeDictionary: a block header asking for a 4 GiB dictionary (code 40) decodes with a
// dictionary no larger than the output may be: a crafted .gnu_debugdata cannot make er allocate it.
func TestUnxzLargeDictionary(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "xz", "payload-crc64.xz"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join("testdata", "xz", "payload.txt"))
	// The block header: size byte, flags 0, filter 0x21, 1 byte of properties, the dictionary code.
	hsize := (int(data[12]) + 1) * 4
	if data[13] != 0 || data[14] != 0x21 || data[15] != 1 {
		t.Fatalf("unexpected block header % x", data[12:12+hsize])
	}
	data[16] = 40
	binary.LittleEndian.PutUint32(data[12+hsize-4:], crc32.ChecksumIEEE(data[12:12+hsize-4]))
	got, err := unxz(data, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%d bytes, %v", len(got), err)
	}
	data[16] = 41
	binary.LittleEndian.PutUint32(data[12+hsize-4:], crc32.ChecksumIEEE(data[12:12+hsize-4]))
	if _, err := unxz(data, 1<<20); err == nil || !strings.Contains(err.Error(), "dictionary size") {
		t.Errorf("code 41: %v", err)
	}
}

// TestUnxzBomb: 64 MiB of zeros (10 KiB of xz) with a limit of 1 MiB stops at the limit.
func TestUnxzBomb(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz not installed")
	}
	cmd := exec.Command("xz", "-T1", "-c")
	cmd.Stdin = bytes.NewReader(make([]byte, 64<<20))
	data, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unxz(data, 1<<20); err == nil || !strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Errorf("%v", err)
	}
}

func FuzzUnxz(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "xz", "*.xz"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\xfd7zXZ\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := unxz(data, 1<<20)
		if err == nil && len(out) > 1<<20 {
			t.Errorf("%d bytes out, limit 1 MiB", len(out))
		}
		if err != nil && !strings.HasPrefix(err.Error(), "xz: ") {
			t.Errorf("error %q", err)
		}
	})
}

// xzEmptyBlocks builds an .xz stream (no check) of n empty blocks, each asking for the dictionary
// of code: LZMA2 data that is only its end marker.
func xzEmptyBlocks(n int, code byte) []byte {
	le := binary.LittleEndian
	b := append([]byte{}, xzMagic...)
	b = append(b, 0, 0)
	b = le.AppendUint32(b, crc32.ChecksumIEEE([]byte{0, 0}))
	for range n {
		hdr := []byte{2, 0, 0x21, 1, code, 0, 0, 0} // 12 bytes with the CRC
		b = append(b, hdr...)
		b = le.AppendUint32(b, crc32.ChecksumIEEE(hdr))
		b = append(b, 0, 0, 0, 0) // the end marker, padded to 4 bytes
	}
	idx := []byte{0, byte(n)} // n < 128
	for range n {
		idx = append(idx, 12+1, 0) // unpadded size: header and end marker; nothing uncompressed
	}
	for len(idx)%4 != 0 {
		idx = append(idx, 0)
	}
	idx = le.AppendUint32(idx, crc32.ChecksumIEEE(idx))
	b = append(b, idx...)
	foot := le.AppendUint32(nil, uint32(len(idx)/4-1))
	foot = append(foot, 0, 0)
	b = le.AppendUint32(b, crc32.ChecksumIEEE(foot))
	b = append(b, foot...)
	return append(b, 'Y', 'Z')
}

// TestUnxzManyBlocks: blocks without their sizes each get a dictionary as large as the output may
// still grow; those of all the blocks together are bounded (2 limits and 1 MiB), so that a stream
// of many tiny blocks cannot make er allocate and clear the limit once per block.
func TestUnxzManyBlocks(t *testing.T) {
	for _, n := range []int{1, 3} {
		if out, err := unxz(xzEmptyBlocks(n, 40), 1<<20); err != nil || len(out) != 0 {
			t.Errorf("%d empty blocks: %d bytes, %v", n, len(out), err)
		}
	}
	if _, err := unxz(xzEmptyBlocks(4, 40), 1<<20); err == nil || !strings.Contains(err.Error(), "4 blocks: their dictionaries need more than") {
		t.Errorf("4 empty blocks of 1 MiB dictionaries: %v", err)
	}
	// Small dictionaries: many blocks are fine.
	if _, err := unxz(xzEmptyBlocks(100, 0), 1<<20); err != nil {
		t.Errorf("100 empty blocks of 4 KiB dictionaries: %v", err)
	}
}
