// Package compact writes and reads compact archives: what er print reads of a load object (its used functions' code, an extract of its debug information), kept in an experiment instead of a copy of the object.
package compact

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"

	"er/internal/debuginfo"
	"er/internal/experiment"
	"er/internal/regfile"
	"er/internal/varfield"
)

// File layout (docs/experiment-format.md, "Compact archives"): a 40-byte header, then the body
// compressed as one zstd frame.
const (
	magic      = "ERCOMPCT"
	headerSize = 40
	major      = 1
	minor      = 0
)

// MaxBody is the largest body (uncompressed) a compact archive holds, and MaxFile the largest file
// read: the used code and debug information of a program are a few megabytes.
const (
	MaxBody = 256 << 20
	MaxFile = MaxBody + headerSize
)

// Object is what a compact archive keeps of a load object.
type Object struct {
	Path    string // the load object, as mapped
	BuildID string // its hex GNU build id; "" when it has none
	Size    int64  // its size and modification time (Unix ns) when it was archived
	Mtime   int64
	Chunks  []Chunk // code at link-time addresses, sorted and disjoint
	Debug   []byte  // an extract of its debug information (debuginfo.Extract); nil: it had none
}

// Chunk is code of the load object: the bytes at link-time addresses [Addr, Addr+len(Code)).
type Chunk struct {
	Addr uint64
	Code []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode renders o as a compact archive file. Its chunks must be sorted and disjoint.
func Encode(o *Object) ([]byte, error) {
	var body []byte
	body = varfield.AppendStr(body, o.Path)
	body = varfield.AppendStr(body, o.BuildID)
	body = binary.AppendVarint(body, o.Size)
	body = binary.AppendVarint(body, o.Mtime)
	body = binary.AppendUvarint(body, uint64(len(o.Chunks)))
	var end uint64
	for i, c := range o.Chunks {
		if i > 0 && c.Addr < end || len(c.Code) == 0 {
			return nil, fmt.Errorf("compact: archive of %s: chunk %d at %#x is empty or not after the one before (which ends at %#x)", o.Path, i, c.Addr, end)
		}
		body = binary.AppendUvarint(body, c.Addr-end)
		body = binary.AppendUvarint(body, uint64(len(c.Code)))
		body = append(body, c.Code...)
		end = c.Addr + uint64(len(c.Code))
	}
	if o.Debug == nil {
		body = append(body, 0)
	} else {
		body = append(body, 1)
		body = binary.AppendUvarint(body, uint64(len(o.Debug)))
		body = append(body, o.Debug...)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("compact: archive of %s: %d bytes, more than a compact archive holds (%d)", o.Path, len(body), MaxBody)
	}
	enc, err := encoder()
	if err != nil {
		return nil, err
	}
	z := enc.EncodeAll(body, nil)
	h := make([]byte, headerSize, headerSize+len(z))
	copy(h, magic)
	le := binary.LittleEndian
	le.PutUint16(h[8:], major)
	le.PutUint16(h[10:], minor)
	le.PutUint64(h[16:], uint64(len(z)))
	le.PutUint64(h[24:], uint64(len(body)))
	le.PutUint32(h[32:], crc32.Checksum(z, castagnoli))
	le.PutUint32(h[36:], crc32.Checksum(h[:36], castagnoli))
	return append(h, z...), nil
}

// hint tells what to do about a damaged compact archive.
const hint = "delete it and its line in archives/files.xml, and run er archive again while the load object is unchanged"

// Read reads the compact archive file (a regular file, at most MaxFile bytes).
func Read(file string) (*Object, error) {
	b, err := regfile.ReadFile(file, MaxFile, "a compact archive")
	if err != nil {
		return nil, err
	}
	return Decode(file, b)
}

// Decode parses the compact archive file named name, whose content is b. Damage is an error that
// names the file and the byte offset.
func Decode(name string, b []byte) (*Object, error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s: offset %d: %s; %s", name, off, fmt.Sprintf(format, args...), hint)
	}
	if len(b) < headerSize {
		return nil, bad(0, "%d bytes, shorter than the %d-byte header of a compact archive", len(b), headerSize)
	}
	if string(b[:8]) != magic {
		return nil, bad(0, "not a compact archive (it starts with % x)", b[:8])
	}
	le := binary.LittleEndian
	if crc32.Checksum(b[:36], castagnoli) != le.Uint32(b[36:]) {
		return nil, bad(36, "header checksum mismatch")
	}
	if v := le.Uint16(b[8:]); v != major {
		return nil, bad(8, "format version %d.%d, this er reads version %d", v, le.Uint16(b[10:]), major)
	}
	zlen, blen := le.Uint64(b[16:]), le.Uint64(b[24:])
	if zlen != uint64(len(b)-headerSize) {
		return nil, bad(16, "the header says %d bytes of body, the file has %d", zlen, len(b)-headerSize)
	}
	if blen > MaxBody {
		return nil, bad(24, "a body of %d bytes, more than a compact archive holds (%d)", blen, MaxBody)
	}
	z := b[headerSize:]
	if crc32.Checksum(z, castagnoli) != le.Uint32(b[32:]) {
		return nil, bad(headerSize, "body checksum mismatch")
	}
	dec, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(blen, 1<<20)))
	if err != nil {
		return nil, bad(headerSize, "%v", err)
	}
	defer dec.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(dec, int64(blen)+1)); err != nil {
		return nil, bad(headerSize, "decompressing: %v", err)
	}
	if uint64(buf.Len()) != blen {
		return nil, bad(headerSize, "%d bytes decompressed, the header says %d", buf.Len(), blen)
	}
	o, err := decodeBody(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: in the body: %v; %s", name, err, hint)
	}
	return o, nil
}

// decodeBody parses the uncompressed body.
func decodeBody(b []byte) (*Object, error) {
	d := varfield.Reader{B: b}
	o := &Object{Path: d.Str(), BuildID: d.Str(), Size: d.Varint(), Mtime: d.Varint()}
	n := d.Count(2)
	var end uint64
	for i := 0; i < n && d.Err == nil; i++ {
		addr := end + d.Uvarint()
		if addr < end {
			d.Fail("chunk %d wraps the address space", i)
		}
		code := d.Bytes()
		if len(code) == 0 || addr+uint64(len(code)) < addr {
			d.Fail("chunk %d at %#x is empty or wraps the address space", i, addr)
		}
		o.Chunks = append(o.Chunks, Chunk{Addr: addr, Code: code})
		end = addr + uint64(len(code))
	}
	switch d.Byte() {
	case 0:
	case 1:
		o.Debug = d.Bytes()
	default:
		d.Fail("a debug-information flag other than 0 or 1")
	}
	d.End()
	return o, d.Err
}

// Code returns the bytes at link-time addresses [lo, hi), which one chunk must hold whole.
func (o *Object) Code(lo, hi uint64) ([]byte, error) {
	i := sort.Search(len(o.Chunks), func(i int) bool { return o.Chunks[i].Addr > lo }) - 1
	if hi <= lo || i < 0 || hi > o.Chunks[i].Addr+uint64(len(o.Chunks[i].Code)) {
		return nil, fmt.Errorf("%s: the compact archive does not hold the code at [%#x, %#x): only the used functions' code is archived (er archive -a copy keeps whole copies)", o.Path, lo, hi)
	}
	c := o.Chunks[i]
	return slices.Clone(c.Code[lo-c.Addr : hi-c.Addr]), nil
}

// encoder is the zstd encoder of every Encode, made once: EncodeAll may be called from several
// goroutines at once, and a new encoder for each archive allocated its tables anew (a few MB,
// each page faulted in: a fifth of the encoding's time after a collection).
var encoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(4))
})

// Chunks reads the code of the ranges rs (link-time addresses) that the segments segs hold in
// their file bytes, each range cut at the segments' bounds (as the load object's own file is read:
// a read across two segments fails there too), through read.
func Chunks(rs [][2]uint64, segs []experiment.Segment, read func(lo, hi uint64) ([]byte, error)) []Chunk {
	var cut [][2]uint64
	for _, r := range debuginfo.MergeRanges(rs) {
		for _, s := range segs {
			lo, hi := max(r[0], s.Vaddr), min(r[1], s.Vaddr+s.Filesz)
			if lo < hi {
				cut = append(cut, [2]uint64{lo, hi})
			}
		}
	}
	slices.SortFunc(cut, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var out []Chunk
	for _, r := range cut {
		if n := len(out); n > 0 && r[0] < out[n-1].Addr+uint64(len(out[n-1].Code)) {
			continue // segments that overlap in memory: the first holds it
		}
		if code, err := read(r[0], r[1]); err == nil && uint64(len(code)) == r[1]-r[0] {
			out = append(out, Chunk{Addr: r[0], Code: code})
		}
	}
	return out
}
