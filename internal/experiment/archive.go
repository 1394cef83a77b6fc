package experiment

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"er/internal/regfile"
)

// Archive file layout: the usual file header (kind archive, variable-size
// records), then a block holding one object record, then blocks of symbol records.
const (
	archiveSuffix        = ".ar"
	archiveObjectFixed   = 24      // size, mtime, nsegments, nsymbols
	archiveSegmentSize   = 32      // vaddr, offset, filesz, memsz
	archiveSymbolFixed   = 21      // addr, size, kind, name length
	maxArchiveNameLength = 64      // bytes of the load object's base name kept in ArchiveName
	maxArchiveString     = 1 << 20 // bytes of a string: a path, build id, kind or symbol name
	maxArchiveSegments   = 1<<16 - 1
)

// ArchiveName is the file name under archives/ for the load object at path:
// its base name, made safe, and a short hash of the full path.
func ArchiveName(path string) string {
	base := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base = path[i+1:]
	}
	safe := []byte(base)
	for i, c := range safe {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-' || c == '+'
		if !ok || i == 0 && c == '.' {
			safe[i] = '_'
		}
	}
	if len(safe) > maxArchiveNameLength {
		safe = safe[:maxArchiveNameLength]
	}
	if len(safe) == 0 {
		safe = []byte("_")
	}
	sum := sha256.Sum256([]byte(path))
	return fmt.Sprintf("%s.%x%s", safe, sum[:4], archiveSuffix)
}

// WriteArchive writes a to expDir/archives/ArchiveName(a.Path), replacing
// any earlier archive of the same load object. The symbols are stored sorted
// by address (a is not changed); a symbol name longer than the format allows (1 MiB) is cut.
func WriteArchive(expDir string, a *Archive) error {
	b, err := prepareArchive(a)
	if err != nil {
		return err
	}
	dir := filepath.Join(expDir, ArchivesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(dir, ArchiveName(a.Path), encodeArchive(b))
}

// prepareArchive checks a against the format's limits and returns it with its symbols sorted by
// address and names longer than the format allows cut (a is not changed).
func prepareArchive(a *Archive) (*Archive, error) {
	for _, s := range []string{a.Path, a.BuildID, a.Kind} {
		if len(s) > maxArchiveString {
			return nil, fmt.Errorf("experiment: archive of %.80q: a string of %d bytes; an archive holds at most %d", a.Path, len(s), maxArchiveString)
		}
	}
	if len(a.Segments) > maxArchiveSegments {
		return nil, fmt.Errorf("experiment: archive of %s: %d segments; an archive holds at most %d", a.Path, len(a.Segments), maxArchiveSegments)
	}
	b := *a
	long := slices.ContainsFunc(b.Symbols, func(s Symbol) bool { return len(s.Name) > maxArchiveString })
	if sorted := slices.IsSortedFunc(b.Symbols, compareSymbols); !sorted || long {
		b.Symbols = slices.Clone(b.Symbols)
		if !sorted {
			slices.SortStableFunc(b.Symbols, compareSymbols)
		}
	}
	for i, s := range b.Symbols {
		if len(s.Name) > maxArchiveString {
			b.Symbols[i].Name = s.Name[:maxArchiveString]
		}
	}
	return &b, nil
}

// WriteArchiveFile writes a to file, replacing it atomically, sorted and cut as WriteArchive does.
func WriteArchiveFile(file string, a *Archive) error {
	b, err := prepareArchive(a)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Dir(file), filepath.Base(file), encodeArchive(b))
}

// ReadArchive reads one archive file (a regular file: anything else is an error).
func ReadArchive(file string) (*Archive, error) {
	f, fi, err := regfile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readArchive(file, f, fi.Size())
}

func compareSymbols(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) }

func appendString(b []byte, s string) []byte {
	b = le.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// encodeArchive renders a as an archive file.
func encodeArchive(a *Archive) []byte {
	b := appendFileHeader(nil, kindArchive)
	start := len(b)
	b = append(b, make([]byte, blockHeaderSize)...)
	b = le.AppendUint64(b, uint64(a.Size))
	b = le.AppendUint64(b, uint64(a.Mtime))
	b = le.AppendUint32(b, uint32(len(a.Segments)))
	b = le.AppendUint32(b, uint32(len(a.Symbols)))
	b = appendString(b, a.Path)
	b = appendString(b, a.BuildID)
	b = appendString(b, a.Kind)
	for _, s := range a.Segments {
		b = le.AppendUint64(b, s.Vaddr)
		b = le.AppendUint64(b, s.Offset)
		b = le.AppendUint64(b, s.Filesz)
		b = le.AppendUint64(b, s.Memsz)
	}
	sealBlock(b[start:], 1)
	for i := 0; i < len(a.Symbols); {
		start = len(b)
		b = append(b, make([]byte, blockHeaderSize)...)
		n := uint32(0)
		for ; i < len(a.Symbols) && len(b)-start < blockTarget; i++ {
			s := a.Symbols[i]
			b = le.AppendUint64(b, s.Addr)
			b = le.AppendUint64(b, s.Size)
			b = append(b, byte(s.Kind))
			b = appendString(b, s.Name)
			n++
		}
		sealBlock(b[start:], n)
	}
	return b
}

// archiveHint tells what to do about a damaged archive.
const archiveHint = "delete the file; `er archive` writes it again from the load object if that is unchanged"

// decodeArchive parses an archive file held in data.
func decodeArchive(name string, data []byte) (*Archive, error) {
	return readArchive(name, bytes.NewReader(data), int64(len(data)))
}

// readArchive reads an archive file r of size bytes.
func readArchive(name string, ra io.ReaderAt, size int64) (*Archive, error) {
	br, err := newBlockReader(name, ra, size, kindArchive, true)
	if err != nil {
		return nil, err
	}
	off, count, p, ok, err := br.next()
	if err != nil {
		return nil, err
	}
	bad := func(at int64, format string, args ...any) error {
		return formatErrorf(name, at, archiveHint, format, args...)
	}
	if !ok {
		return nil, bad(off, "no object record")
	}
	if count != 1 {
		return nil, bad(off, "first block holds %d records, want 1 object record", count)
	}
	r := reader{p: p, base: off + blockHeaderSize}
	a := &Archive{}
	a.Size = int64(r.u64())
	a.Mtime = int64(r.u64())
	nseg := r.u32()
	nsym := r.u32()
	a.Path = r.str()
	a.BuildID = r.str()
	a.Kind = r.str()
	if r.err == nil && uint64(nseg) > uint64(r.left())/archiveSegmentSize {
		return nil, bad(r.at(), "%d segments do not fit in the %d bytes left in the block", nseg, r.left())
	}
	for range nseg {
		a.Segments = append(a.Segments, Segment{Vaddr: r.u64(), Offset: r.u64(), Filesz: r.u64(), Memsz: r.u64()})
	}
	if r.err != nil {
		return nil, bad(r.at(), "object record: %v", r.err)
	}
	if r.left() != 0 {
		return nil, bad(r.at(), "%d bytes after the object record", r.left())
	}
	a.Segments = slices.Clip(a.Segments)
	if nsym > 0 {
		a.Symbols = make([]Symbol, 0, min(uint64(nsym), uint64(dataBytes(ra, size))/archiveSymbolFixed))
	}
	for {
		off, count, p, ok, err := br.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		// The names are slices of one string of the block: one allocation a block, not one a
		// symbol (a kernel's 200,000 symbols took most of a short collection's CPU time).
		r := reader{p: p, base: off + blockHeaderSize, s: string(p)}
		for range count {
			s := Symbol{Addr: r.u64(), Size: r.u64(), Kind: SymbolKind(r.u8())}
			s.Name = r.str()
			if r.err != nil {
				return nil, bad(r.at(), "symbol record %d: %v", len(a.Symbols)+1, r.err)
			}
			if n := len(a.Symbols); n > 0 && a.Symbols[n-1].Addr > s.Addr {
				return nil, bad(r.at(), "symbol %q at %#x follows %q at %#x: symbols must be sorted by address",
					s.Name, s.Addr, a.Symbols[n-1].Name, a.Symbols[n-1].Addr)
			}
			a.Symbols = append(a.Symbols, s)
		}
		if r.left() != 0 {
			return nil, bad(r.at(), "%d bytes after the block's %d symbol records", r.left(), count)
		}
	}
	if uint64(len(a.Symbols)) != uint64(nsym) {
		return nil, bad(br.off, "%d symbol records, the object record says %d", len(a.Symbols), nsym)
	}
	return a, nil
}

// reader decodes little-endian values from a payload; after the first
// shortage it returns zeros and keeps the error.
type reader struct {
	p    []byte // the payload, whole: reading moves pos only (no pointer is written per value)
	base int64  // file offset of the payload's first byte
	pos  int    // the next byte of p
	err  error
	s    string // when not empty, the payload as a string: str returns slices of it
}

// at is the file offset of the next byte.
func (r *reader) at() int64 { return r.base + int64(r.pos) }

func (r *reader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(r.left()) {
		r.err = fmt.Errorf("need %d bytes, %d left in the block", n, r.left())
		return nil
	}
	b := r.p[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b
}

// left is the number of bytes not read yet.
func (r *reader) left() int { return len(r.p) - r.pos }

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return le.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return le.Uint64(b)
	}
	return 0
}

func (r *reader) str() string {
	n := r.u32()
	b := r.take(uint64(n))
	if r.s != "" && b != nil {
		return r.s[r.pos-len(b) : r.pos]
	}
	return string(b)
}
