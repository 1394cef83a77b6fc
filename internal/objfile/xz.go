package objfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// The .xz container (https://tukaani.org/xz/xz-file-format.txt) is read here and only the LZMA2
// data of its blocks by github.com/ulikunitz/xz/lzma: the library's own xz reader allocates each
// block's dictionary at the size the block header asks for, up to 4 GiB, before it reads a byte of
// the data, and a crafted .gnu_debugdata must not make er allocate gigabytes. Here the dictionary
// is at most what the output may still grow by: no LZMA2 match reaches further back than the
// start of its block.

var xzMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0}

var crc64Table = crc64.MakeTable(crc64.ECMA)

// unxz decompresses data, one .xz stream (LZMA2 blocks with a CRC-32, CRC-64, SHA-256 or no
// check, as `xz` writes and MiniDebugInfo holds), into at most limit bytes. Every check, size and
// CRC of the container is verified; a stream that is malformed, truncated, uses another filter or
// decompresses to more than limit bytes gives an error.
func unxz(data []byte, limit int) ([]byte, error) {
	if len(data) < 12+12 || !bytes.Equal(data[:6], xzMagic) {
		return nil, errors.New("xz: not an xz stream")
	}
	flags := data[6:8]
	if flags[0] != 0 || flags[1]&0xF0 != 0 {
		return nil, fmt.Errorf("xz: unsupported stream flags %02x %02x", flags[0], flags[1])
	}
	if crc32.ChecksumIEEE(flags) != le32(data[8:]) {
		return nil, errors.New("xz: stream header CRC mismatch")
	}
	check := flags[1]
	var checkSize int
	switch check {
	case 0:
	case 1:
		checkSize = 4
	case 4:
		checkSize = 8
	case 10:
		checkSize = 32
	default:
		return nil, fmt.Errorf("xz: unsupported check type %d", check)
	}
	type record struct{ unpadded, uncompressed uint64 }
	var recs []record
	var out []byte
	pos := 12
	dictTotal := int64(0) // the dictionary memory of the blocks so far
	for {
		if pos >= len(data) {
			return nil, errors.New("xz: truncated stream (no index)")
		}
		if data[pos] == 0 {
			break // the index
		}
		hsize := (int(data[pos]) + 1) * 4
		if hsize > len(data)-pos {
			return nil, errors.New("xz: truncated block header")
		}
		hdr := data[pos : pos+hsize-4]
		if crc32.ChecksumIEEE(hdr) != le32(data[pos+hsize-4:]) {
			return nil, fmt.Errorf("xz: block header CRC mismatch at offset %d", pos)
		}
		bf := hdr[1]
		if bf&0x3C != 0 {
			return nil, fmt.Errorf("xz: unsupported block flags %02x", bf)
		}
		if bf&3 != 0 {
			return nil, fmt.Errorf("xz: a chain of %d filters: only LZMA2 alone is supported", bf&3+1)
		}
		p := 2
		compSize, uncSize := int64(-1), int64(-1)
		if bf&0x40 != 0 {
			v, n := vli(hdr[p:])
			if n == 0 || v == 0 || v > uint64(len(data)) {
				return nil, errors.New("xz: bad compressed size in block header")
			}
			compSize, p = int64(v), p+n
		}
		if bf&0x80 != 0 {
			v, n := vli(hdr[p:])
			if n == 0 || v > uint64(limit) {
				return nil, fmt.Errorf("xz: block of %d bytes uncompressed: more than the %d allowed", v, limit)
			}
			uncSize, p = int64(v), p+n
		}
		id, n := vli(hdr[p:])
		if n == 0 {
			return nil, errors.New("xz: bad filter flags")
		}
		p += n
		psize, n := vli(hdr[p:])
		if n == 0 {
			return nil, errors.New("xz: bad filter flags")
		}
		p += n
		if id != 0x21 || psize != 1 || p >= len(hdr) {
			return nil, fmt.Errorf("xz: filter %#x: only LZMA2 is supported", id)
		}
		code := hdr[p]
		p++
		if code > 40 {
			return nil, fmt.Errorf("xz: bad LZMA2 dictionary size code %d", code)
		}
		for _, b := range hdr[p:] {
			if b != 0 {
				return nil, errors.New("xz: non-zero block header padding")
			}
		}
		// The dictionary need not hold more than the block can produce.
		dict := int64(1)<<32 - 1
		if code < 40 {
			dict = int64(2|code&1) << (code/2 + 11)
		}
		dict = min(dict, int64(limit-len(out)))
		if uncSize >= 0 {
			dict = min(dict, uncSize)
		}
		dict = max(dict, lzma.MinDictCap)
		// Each block allocates its own: many small blocks without their sizes in their headers
		// (xz writes one block, or blocks with their sizes) must not allocate limit bytes each.
		if dictTotal += dict; dictTotal > 2*int64(limit)+1<<20 {
			return nil, fmt.Errorf("xz: %d blocks: their dictionaries need more than %d bytes", len(recs)+1, 2*limit+1<<20)
		}

		pos += hsize
		br := bytes.NewReader(data[pos:])
		lr, err := lzma.Reader2Config{DictCap: int(dict)}.NewReader2(br)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		var h hash.Hash
		switch check {
		case 1:
			h = crc32.NewIEEE()
		case 4:
			h = crc64.New(crc64Table)
		case 10:
			h = sha256.New()
		}
		before := len(out)
		if out, err = readAll(out, lr, limit, h); err != nil {
			return nil, err
		}
		csize := len(data) - pos - br.Len()
		produced := len(out) - before
		if compSize >= 0 && int64(csize) != compSize {
			return nil, errors.New("xz: compressed size does not match the block header")
		}
		if uncSize >= 0 && int64(produced) != uncSize {
			return nil, errors.New("xz: uncompressed size does not match the block header")
		}
		pos += csize
		pad := (4 - csize%4) % 4
		if pad+checkSize > len(data)-pos {
			return nil, errors.New("xz: truncated block")
		}
		for _, b := range data[pos : pos+pad] {
			if b != 0 {
				return nil, errors.New("xz: non-zero block padding")
			}
		}
		pos += pad
		sum := data[pos : pos+checkSize]
		ok := true
		switch check {
		case 1:
			ok = le32(sum) == h.(hash.Hash32).Sum32()
		case 4:
			ok = binary.LittleEndian.Uint64(sum) == h.(hash.Hash64).Sum64()
		case 10:
			ok = bytes.Equal(sum, h.Sum(nil))
		}
		if !ok {
			return nil, errors.New("xz: check of the uncompressed data does not match")
		}
		pos += checkSize
		recs = append(recs, record{uint64(hsize + csize + checkSize), uint64(produced)})
	}

	// The index: its records must be the blocks read.
	start := pos
	pos++
	count, n := vli(data[pos:])
	if n == 0 || count != uint64(len(recs)) {
		return nil, errors.New("xz: the index does not list the blocks")
	}
	pos += n
	for _, r := range recs {
		unp, n1 := vli(data[pos:])
		if n1 == 0 {
			return nil, errors.New("xz: malformed index")
		}
		unc, n2 := vli(data[pos+n1:])
		if n2 == 0 || unp != r.unpadded || unc != r.uncompressed {
			return nil, errors.New("xz: the index does not match the blocks")
		}
		pos += n1 + n2
	}
	for (pos-start)%4 != 0 {
		if pos >= len(data) || data[pos] != 0 {
			return nil, errors.New("xz: malformed index padding")
		}
		pos++
	}
	if len(data)-pos < 4+12 {
		return nil, errors.New("xz: truncated stream (no footer)")
	}
	if crc32.ChecksumIEEE(data[start:pos]) != le32(data[pos:]) {
		return nil, errors.New("xz: index CRC mismatch")
	}
	pos += 4
	foot := data[pos : pos+12]
	if crc32.ChecksumIEEE(foot[4:10]) != le32(foot) || string(foot[10:]) != "YZ" ||
		!bytes.Equal(foot[8:10], flags) || (int(le32(foot[4:]))+1)*4 != pos-start {
		return nil, errors.New("xz: bad stream footer")
	}
	pos += 12
	// Stream padding may follow; another stream may not (MiniDebugInfo is one).
	if (len(data)-pos)%4 != 0 || !allZero(data[pos:]) {
		return nil, errors.New("xz: data after the stream")
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// readAll appends what r gives to out, hashing it with h (if any), and fails once out would
// exceed limit bytes.
func readAll(out []byte, r io.Reader, limit int, h hash.Hash) ([]byte, error) {
	var buf [32 << 10]byte
	idle := 0
	for {
		n, err := r.Read(buf[:])
		if n > 0 {
			idle = 0
			if n > limit-len(out) {
				return nil, fmt.Errorf("xz: decompresses to more than %d bytes", limit)
			}
			if h != nil {
				h.Write(buf[:n])
			}
			out = append(out, buf[:n]...)
		} else if err == nil {
			if idle++; idle > 100 {
				return nil, fmt.Errorf("xz: %w", io.ErrNoProgress)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("xz: %w", err)
		}
	}
}

// vli decodes an xz variable-length integer (7 bits a byte, at most 9 bytes, no needless
// trailing zero byte); n is 0 when b does not start with one.
func vli(b []byte) (v uint64, n int) {
	for i := 0; i < 9 && i < len(b); i++ {
		v |= uint64(b[i]&0x7F) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
