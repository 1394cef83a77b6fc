package perfdata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"er/internal/perfabi"
)

// Compression is the COMPRESSED feature of a file recorded with perf record -z.
type Compression struct {
	Version, Type, Level, Ratio uint32
	MmapLen                     uint32 // the size of the ring buffers perf record compressed from
}

// compressZstd is the feature's type for zstd, the only compression perf writes.
const compressZstd = 1

// Limits on what a damaged or hostile file can make the reader hold.
const (
	// maxWindow is the largest zstd window accepted: the reference decoder's default limit (2^27),
	// and the window of zstd's highest level (perf record -z 22; its default, level 1, uses 512 KiB).
	maxWindow = 1 << 27
	// maxBlock is the most one zstd block decompresses to.
	maxBlock = 128 << 10
	// defaultOutLimit bounds what one COMPRESSED record may decompress to where the file has no
	// COMPRESSED feature to say how large perf's ring buffers were.
	defaultOutLimit = 64 << 20
	// maxRatio bounds the data decompressed from a file's COMPRESSED records, all of them together,
	// to that many bytes per compressed byte (plus bytesSlack). zstd can reach 32768 (a block of
	// one byte repeated); perf record -z reached 650 here at its default level with the largest
	// stack copies (--call-graph dwarf,65528 of a loop), 11 with -g.
	maxRatio = 4096
	// maxRecordsPerByte bounds the records decompressed, to that many per compressed byte (plus
	// recordsSlack): what they cost to read is by the record, and a hostile file of 8-byte records at
	// zstd's highest ratio would hold 4096 for each byte. perf record's data holds 0.2 here (-F
	// 20000 of a loop, without call chains: 48-byte samples that differ in their times).
	maxRecordsPerByte = 4
	// bytesSlack and recordsSlack are what the bounds allow beyond the ratios: the first blocks.
	bytesSlack   = 1 << 20
	recordsSlack = 1 << 16
)

// errStarved is what the decoder's input returns when the data holds no more compressed bytes
// before a record that is not compressed.
var errStarved = errors.New("no more compressed data before the next record")

// zstream is the data of a file's COMPRESSED (and COMPRESSED2) records, decompressed as perf
// does: the records' payloads are one zstd stream (perf record flushes its compressor after each
// read of a ring buffer, so a record ends at the end of a zstd block, and one frame may span the
// whole file), and what they decompress to is one stream of records, where a record may begin in
// one COMPRESSED record's data and end in the next one's. The records decompressed are read in the
// place of the COMPRESSED records, before the records that follow these in the file.
//
// The decoder reads its input from the zstream (Read): the payload of the COMPRESSED record last
// read, then, where a block continues, the next record of the file if it is a COMPRESSED one. It
// is asked for more output only while input is left, and each of its reads returns at most one
// block, so every block of a COMPRESSED record is decompressed before the records after it are read.
type zstream struct {
	rd   *Reader
	dec  *zstd.Decoder
	buf  []byte // one block's output
	in   []byte // the compressed bytes of the record at inOff that the decoder has not read
	size int    // that record's compressed bytes

	inOff    int64  // the offset of the COMPRESSED record read last
	outSince int64  // bytes decompressed since it was read
	limit    int64  // the most one COMPRESSED record may decompress to
	err      error  // an error reading the file for the decoder's input
	pend     []byte // decompressed bytes; those from pos on are not yet read as records
	pos      int
	skip     uint64 // decompressed bytes to discard first: the data of an AUXTRACE record
	total    int64  // bytes decompressed before pend
	moved    int64  // bytes compact moved: less than a record (64 KiB) per block decompressed
	blocks   int64  // blocks decompressed

	inTotal, outTotal, records int64 // compressed bytes loaded, bytes decompressed, records read: for maxRatio and maxRecordsPerByte
}

// feed adds a COMPRESSED record (its header h and bytes buf) to the decompressed stream.
func (rd *Reader) feed(h perfabi.Header, buf []byte) error {
	f := rd.f
	if f.Compression.Type != compressZstd && f.Features[FeatCompressed] {
		return f.errorf(h.Offset, "%s record: the COMPRESSED feature says the data was compressed with method %d, not zstd (1), the only one perf writes",
			RecordName(h.Type), f.Compression.Type)
	}
	payload, err := compressedPayload(h, buf)
	if err != nil {
		return f.errorf(h.Offset, "%s record of %d bytes: %v", RecordName(h.Type), h.Size, err)
	}
	if rd.z == nil {
		z := &zstream{rd: rd, buf: make([]byte, maxBlock+1), limit: defaultOutLimit}
		if n := int64(f.Compression.MmapLen); n > 0 {
			// A read of a ring buffer holds at most its size; where the compressed data of one
			// read spans two records, the second may complete the first's last block.
			z.limit = 2*n + maxBlock
		}
		dec, err := zstd.NewReader(z, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(maxWindow))
		if err != nil {
			return err
		}
		z.dec = dec
		rd.z = z
	}
	rd.z.load(h.Offset, payload)
	return nil
}

// compressedPayload returns the zstd data of a COMPRESSED record (after its header) or a
// COMPRESSED2 record (after its header and data_size, up to the padding that aligns it to 8 bytes).
func compressedPayload(h perfabi.Header, buf []byte) ([]byte, error) {
	if h.Type == RecordCompressed {
		return buf[8:], nil
	}
	if len(buf) < 16 {
		return nil, errors.New("no room for its data size")
	}
	n := binary.LittleEndian.Uint64(buf[8:])
	if n > uint64(len(buf)-16) {
		return nil, fmt.Errorf("its data size %d is more than the %d bytes after its header", n, len(buf)-16)
	}
	return buf[16 : 16+n], nil
}

// load makes a COMPRESSED record's payload the decoder's input.
func (z *zstream) load(off int64, payload []byte) {
	z.inOff, z.in, z.size, z.outSince = off, payload, len(payload), 0
	z.inTotal += int64(len(payload))
}

// Read gives the decoder its input: the compressed data of the record read last and, where that is
// all read, of the next record in the file if it is a COMPRESSED one.
func (z *zstream) Read(p []byte) (int, error) {
	for len(z.in) == 0 {
		if z.err != nil {
			return 0, z.err
		}
		rd := z.rd
		hb, err := rd.r.Peek(8)
		if err != nil {
			return 0, errStarved
		}
		if t := parseHeader(hb, rd.off).Type; t != RecordCompressed && t != RecordCompressed2 {
			return 0, errStarved
		}
		h, buf, err := rd.readRaw()
		if err == nil {
			var payload []byte
			if payload, err = compressedPayload(h, buf); err == nil {
				z.load(h.Offset, payload)
				continue
			}
			err = rd.f.errorf(h.Offset, "%s record of %d bytes: %v", RecordName(h.Type), h.Size, err)
		}
		z.err = err
		return 0, err
	}
	n := copy(p, z.in)
	z.in = z.in[n:]
	return n, nil
}

// next returns the next record of the decompressed data, or nil when it holds no whole record and
// no compressed data is left to decompress. The records are read from pend by offset (pos); only
// the part of a record that a block leaves for the next is moved, to pend's front (see compact).
func (z *zstream) next() (perfabi.Record, error) {
	f := z.rd.f
	for {
		if z.skip > 0 {
			n := min(z.skip, uint64(len(z.pend)-z.pos))
			z.pos += int(n)
			z.skip -= n
		}
		if rest := z.pend[z.pos:]; z.skip == 0 && len(rest) >= 8 {
			h := parseHeader(rest, z.inOff)
			at := z.total + int64(z.pos)
			if h.Size < 8 {
				return nil, f.errorf(z.inOff, "the record at byte %d of the data decompressed from the COMPRESSED records (this one last) says it has %d bytes, fewer than its 8-byte header",
					at, h.Size)
			}
			if len(rest) >= int(h.Size) {
				buf := make([]byte, h.Size)
				copy(buf, rest)
				z.pos += int(h.Size)
				rec, err := f.decode(h, buf)
				if err != nil {
					return nil, f.errorf(z.inOff, "%s record of %d bytes at byte %d of the data decompressed from the COMPRESSED records (this one last): %v",
						RecordName(h.Type), h.Size, at, err)
				}
				z.skip = trailing(h.Type, buf)
				if z.records++; z.records > maxRecordsPerByte*z.inTotal+recordsSlack {
					return nil, f.errorf(z.inOff, "the data decompressed from the COMPRESSED records (this one last) holds more than %d records (%d for each of their %d compressed bytes, and %d): "+
						"perf record's holds about one for each 5 bytes; the file is damaged or made to exhaust its reader, and is not read further",
						z.records-1, maxRecordsPerByte, z.inTotal, recordsSlack)
				}
				return rec, nil
			}
		}
		if len(z.in) == 0 {
			return nil, nil
		}
		z.compact()
		if err := z.decompress(); err != nil {
			return nil, err
		}
	}
}

// compact moves what is left of pend after pos, less than a record, to its front.
func (z *zstream) compact() {
	left := len(z.pend) - z.pos
	z.total += int64(z.pos)
	z.moved += int64(left)
	copy(z.pend, z.pend[z.pos:])
	z.pend, z.pos = z.pend[:left], 0
}

// decompress appends the output of the decoder's next block to pend.
func (z *zstream) decompress() error {
	n, err := z.dec.Read(z.buf)
	z.blocks++
	z.pend = append(z.pend, z.buf[:n]...)
	z.outSince += int64(n)
	z.outTotal += int64(n)
	if z.outTotal > maxRatio*z.inTotal+bytesSlack {
		return z.rd.f.errorf(z.inOff, "the data of the COMPRESSED records (this one last) decompresses to more than %d bytes (%d for each of their %d compressed bytes, and %d): "+
			"perf record's compresses to a sixth of that at most; the file is damaged or made to exhaust its reader, and is not read further",
			maxRatio*z.inTotal+bytesSlack, maxRatio, z.inTotal, bytesSlack)
	}
	if z.outSince > z.limit {
		return z.rd.f.errorf(z.inOff, "%s record: its data decompresses to more than %d bytes, more than perf record compresses at once (the COMPRESSED feature's ring buffers of %d bytes)",
			RecordName(RecordCompressed), z.limit, z.rd.f.Compression.MmapLen)
	}
	switch {
	case err == nil:
		return nil
	case z.err == io.EOF: // a stream in pipe mode cut inside a COMPRESSED record: its data is lost
		z.in = nil
		return nil
	case z.err != nil:
		return z.err
	case errors.Is(err, errStarved):
		// The decoder looked for a frame after one that ended with an empty block, and the
		// compressed data stops here for now: the next COMPRESSED record starts a new frame.
		z.in = nil
		return z.dec.Reset(z)
	}
	return z.rd.f.errorf(z.inOff, "%s record: its zstd data is damaged at or before byte %d of its %d: %v",
		RecordName(RecordCompressed), z.size-len(z.in), z.size, err)
}

// atEnd is the end of the data section: an error if the decompressed data ends inside a record.
func (z *zstream) atEnd() error {
	if left := len(z.pend) - z.pos; (left > 0 || z.skip > 0) && z.rd.f.Pipe { // a stream cut short
		rd := z.rd
		if rd.cut == nil {
			rd.cut = &Cut{}
		}
		rd.cut.Pending, rd.cut.PendingAt = int64(left), z.total+int64(z.pos)
		z.dec.Close()
		return io.EOF
	}
	if left := len(z.pend) - z.pos; left > 0 || z.skip > 0 {
		return z.rd.f.errorf(z.inOff, "the data decompressed from the %s records ends inside a record (%d bytes of it at byte %d): the file was cut short",
			RecordName(RecordCompressed), left, z.total+int64(z.pos))
	}
	z.dec.Close()
	return io.EOF
}
