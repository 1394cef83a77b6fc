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
	"er/internal/safedir"
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
	maxCopiedArchive     = 256 << 20 // bytes of an archive CopyArchive reads (the kernel's is some 6 MB)
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
	root, err := openOrMake(expDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteArchiveTo(root, a)
}

// openOrMake opens the directory dir, made first (with its parents) if it is missing.
func openOrMake(dir string) (*safedir.Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return safedir.Open(dir)
}

// WriteArchiveTo is WriteArchive into the experiment directory root, opened by its caller: nothing
// beneath it is reached through a symbolic link (safedir).
func WriteArchiveTo(root *safedir.Dir, a *Archive) error {
	b, err := prepareArchive(a)
	if err != nil {
		return err
	}
	dir, err := root.MkdirAll(ArchivesDir, 0o755)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.WriteFile(ArchiveName(a.Path), encodeArchive(b), 0o644)
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
	dir, err := safedir.Open(filepath.Dir(file))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.WriteFile(filepath.Base(file), encodeArchive(b), 0o644)
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
	b := appendArchiveHead(nil, a, len(a.Symbols))
	for i := 0; i < len(a.Symbols); {
		start := len(b)
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

// appendArchiveHead appends the file header of an archive and its first block, the object record of
// a with nsym symbols.
func appendArchiveHead(b []byte, a *Archive, nsym int) []byte {
	b = appendFileHeader(b, kindArchive)
	start := len(b)
	b = append(b, make([]byte, blockHeaderSize)...)
	b = le.AppendUint64(b, uint64(a.Size))
	b = le.AppendUint64(b, uint64(a.Mtime))
	b = le.AppendUint32(b, uint32(len(a.Segments)))
	b = le.AppendUint32(b, uint32(nsym))
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
	return b
}

// CopyArchive writes into the experiment expDir the archive file src (one WriteArchiveFile wrote,
// such as a cached archive) as the archive of the load object at path, of size bytes and modified
// at mtime: its object record rewritten with them, its blocks of symbols copied as they are, each
// block's checksums checked. It is what WriteArchive of the decoded file with those fields would
// write, without decoding and encoding its symbols (for libc's 3,800, 1 to 2 ms of a short
// collection's CPU). accept is given src's object record (Path, Size and Mtime src's, no symbols) and
// the number of symbols it says; where it returns false, or src cannot be read, nothing is written
// and CopyArchive returns false.
func CopyArchive(expDir, src, path string, size, mtime int64, accept func(head *Archive, nsym uint32) bool) (bool, error) {
	b, ok, err := copiedArchive(src, path, size, mtime, accept)
	if !ok || err != nil {
		return false, err
	}
	root, err := openOrMake(expDir)
	if err != nil {
		return false, err
	}
	defer root.Close()
	return writeCopiedArchive(root, path, b)
}

// CopyArchiveTo is CopyArchive into the experiment directory root, opened by the caller, as
// WriteArchiveTo's.
func CopyArchiveTo(root *safedir.Dir, src, path string, size, mtime int64, accept func(head *Archive, nsym uint32) bool) (bool, error) {
	b, ok, err := copiedArchive(src, path, size, mtime, accept)
	if !ok || err != nil {
		return false, err
	}
	return writeCopiedArchive(root, path, b)
}

// writeCopiedArchive writes b, the archive of the load object at path, into root's archives/.
func writeCopiedArchive(root *safedir.Dir, path string, b []byte) (bool, error) {
	dir, err := root.MkdirAll(ArchivesDir, 0o755)
	if err != nil {
		return false, err
	}
	defer dir.Close()
	if err := dir.WriteFile(ArchiveName(path), b, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// copiedArchive is the archive file that CopyArchive writes, or false where accept refuses src.
func copiedArchive(src, path string, size, mtime int64, accept func(head *Archive, nsym uint32) bool) ([]byte, bool, error) {
	if len(path) > maxArchiveString {
		return nil, false, fmt.Errorf("experiment: archive of %.80q: a string of %d bytes; an archive holds at most %d", path, len(path), maxArchiveString)
	}
	data, err := regfile.ReadFile(src, maxCopiedArchive, "an archive")
	if err != nil {
		return nil, false, err
	}
	ra := bytes.NewReader(data)
	var head *Archive
	var nsym uint32
	err = scanArchive(src, ra, int64(len(data)), false, func(h *Archive, n uint32) bool {
		head, nsym = h, n
		return false
	}, nil)
	if err != nil {
		return nil, false, err
	}
	if !accept(head, nsym) {
		return nil, false, nil
	}
	// Every block's checksums, and where the symbols begin: after the object record's block.
	br, err := newBlockReader(src, ra, int64(len(data)), kindArchive, true)
	if err != nil {
		return nil, false, err
	}
	symbolsAt := int64(-1)
	var count uint64
	for first := true; ; first = false {
		off, n, _, ok, err := br.next()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			if symbolsAt < 0 {
				symbolsAt = off
			}
			break
		}
		if first {
			continue
		}
		if symbolsAt < 0 {
			symbolsAt = off
		}
		count += uint64(n)
	}
	if count != uint64(nsym) {
		return nil, false, formatErrorf(src, symbolsAt, archiveHint, "%d symbols in the blocks, the object record says %d", count, nsym)
	}
	out := *head
	out.Path, out.Size, out.Mtime = path, size, mtime
	b := appendArchiveHead(make([]byte, 0, len(data)+len(path)), &out, int(nsym))
	b = append(b, data[symbolsAt:]...)
	return b, true, nil
}

// archiveHint tells what to do about a damaged archive.
const archiveHint = "delete the file; `er archive` writes it again from the load object if that is unchanged"

// decodeArchive parses an archive file held in data.
func decodeArchive(name string, data []byte) (*Archive, error) {
	return readArchive(name, bytes.NewReader(data), int64(len(data)))
}

// readArchive reads an archive file r of size bytes.
func readArchive(name string, ra io.ReaderAt, size int64) (*Archive, error) {
	var a *Archive
	err := scanArchive(name, ra, size, true, func(h *Archive, nsym uint32) bool {
		a = h
		if nsym > 0 {
			a.Symbols = make([]Symbol, 0, min(uint64(nsym), uint64(dataBytes(ra, size))/archiveSymbolFixed))
		}
		return true
	}, func(addr, size uint64, kind SymbolKind, name []byte, block string, at int) bool {
		a.Symbols = append(a.Symbols, Symbol{Addr: addr, Size: size, Kind: kind, Name: block[at : at+len(name)]})
		return true
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// ScanArchive reads the archive file's object record, then calls sym for each symbol, in address
// order, without keeping them: name is valid during the call only. It stops early, without error,
// when sym returns false. A reader that keeps a few symbols of many (the kernel's 200,000) allocates
// only those.
func ScanArchive(file string, sym func(addr, size uint64, kind SymbolKind, name []byte) bool) (*Archive, error) {
	f, fi, err := regfile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var a *Archive
	err = scanArchive(file, f, fi.Size(), false, func(h *Archive, _ uint32) bool { a = h; return true },
		func(addr, size uint64, kind SymbolKind, name []byte, _ string, _ int) bool {
			return sym(addr, size, kind, name)
		})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// scanArchive decodes an archive file r of size bytes: head gets the object record (the archive
// without symbols) and the number of symbols it says, then sym each symbol (its name's bytes, and,
// with withBlock, the block as a string and the name's offset in it), until either returns false.
// Every check of the format is made on the symbols scanned.
func scanArchive(name string, ra io.ReaderAt, size int64, withBlock bool, head func(a *Archive, nsym uint32) bool,
	sym func(addr, size uint64, kind SymbolKind, name []byte, block string, at int) bool) error {
	br, err := newBlockReader(name, ra, size, kindArchive, true)
	if err != nil {
		return err
	}
	off, count, p, ok, err := br.next()
	if err != nil {
		return err
	}
	bad := func(at int64, format string, args ...any) error {
		return formatErrorf(name, at, archiveHint, format, args...)
	}
	if !ok {
		return bad(off, "no object record")
	}
	if count != 1 {
		return bad(off, "first block holds %d records, want 1 object record", count)
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
		return bad(r.at(), "%d segments do not fit in the %d bytes left in the block", nseg, r.left())
	}
	for range nseg {
		a.Segments = append(a.Segments, Segment{Vaddr: r.u64(), Offset: r.u64(), Filesz: r.u64(), Memsz: r.u64()})
	}
	if r.err != nil {
		return bad(r.at(), "object record: %v", r.err)
	}
	if r.left() != 0 {
		return bad(r.at(), "%d bytes after the object record", r.left())
	}
	a.Segments = slices.Clip(a.Segments)
	if !head(a, nsym) {
		return nil
	}
	var n uint64
	var last uint64
	var lastName []byte
	for {
		off, count, p, ok, err := br.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r := reader{p: p, base: off + blockHeaderSize}
		block := ""
		if withBlock {
			// The names are slices of one string of the block: one allocation a block, not one
			// a symbol.
			block = string(p)
		}
		for range count {
			addr, size, kind := r.u64(), r.u64(), SymbolKind(r.u8())
			nm := r.take(uint64(r.u32()))
			if r.err != nil {
				return bad(r.at(), "symbol record %d: %v", n+1, r.err)
			}
			if n > 0 && last > addr {
				return bad(r.at(), "symbol %q at %#x follows %q at %#x: symbols must be sorted by address",
					nm, addr, lastName, last)
			}
			n++
			last, lastName = addr, nm
			if !sym(addr, size, kind, nm, block, r.pos-len(nm)) {
				return nil
			}
		}
		if r.left() != 0 {
			return bad(r.at(), "%d bytes after the block's %d symbol records", r.left(), count)
		}
	}
	if n != uint64(nsym) {
		return bad(br.off, "%d symbol records, the object record says %d", n, nsym)
	}
	return nil
}

// reader decodes little-endian values from a payload; after the first
// shortage it returns zeros and keeps the error.
type reader struct {
	p    []byte // the payload, whole: reading moves pos only (no pointer is written per value)
	base int64  // file offset of the payload's first byte
	pos  int    // the next byte of p
	err  error
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
	return string(r.take(uint64(n)))
}
