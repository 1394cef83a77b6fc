package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"er/internal/experiment"
	"er/internal/objfile"
	"er/internal/regfile"
	"er/internal/safedir"
)

// Copies of load objects and source files live under an experiment's archives/, beside the
// symbol archives: the copy of a file whose content has SHA-256 S is
// archives/objects/S[:32]/NAME or archives/sources/S[:32]/NAME (NAME: the original's base name
// made safe), and archives/files.xml, the index, records for each copy the original's path, size,
// modification time, build id and SHA-256. A copy keeps the original's modification time.
const (
	IndexFile     = "files.xml" // the index, in archives/
	IndexVersion  = "1.1"       // 1.1 added compact archives
	KindObject    = "object"    // a copy of a load object
	KindSource    = "source"    // a copy of a source file
	KindCompact   = "compact"   // a compact archive of a load object (package compact)
	objectsSubdir = "objects"
	sourcesSubdir = "sources"
	compactSubdir = "compact"
	hashDirLength = 32 // hex digits of the SHA-256 naming a copy's directory
)

// MaxIndexSize is the largest index read: 64 MiB holds some 200,000 copies.
const MaxIndexSize = 64 << 20

// indexHint tells what to do about a damaged index.
const indexHint = "delete it and run `er archive` again to rebuild it"

// Copy is one archived copy of a load object or a source file.
type Copy struct {
	Kind    string // KindObject, KindSource or KindCompact
	Path    string // the original: a load object's path as mapped, a source file's as the debug information names it
	File    string // the copy, relative to archives/, with '/' separators
	Size    int64  // bytes
	Mtime   int64  // the original's modification time when it was copied, Unix ns; the copy has the same
	BuildID string // hex GNU build id of a load object, "" when it has none (and for sources)
	SHA256  string // hex SHA-256 of the content (of a compact archive: of the archive file)
	Length  int64  // a compact archive's bytes (Size is the load object's); 0 for copies
}

// FileSize is the size of c's file in the archives directory.
func (c Copy) FileSize() int64 {
	if c.Kind == KindCompact {
		return c.Length
	}
	return c.Size
}

// Index is the index of the copies in one archives directory.
type Index struct {
	Dir    string // the archives directory
	Copies []Copy // in the order they were added

	root *safedir.Dir // the experiment, where OpenIndex opened it to write into; nil: by path
}

// ReadIndex reads the index of the copies in the experiment expDir. An experiment without
// one has an empty index.
func ReadIndex(expDir string) (*Index, error) {
	ix := &Index{Dir: filepath.Join(expDir, experiment.ArchivesDir)}
	file := filepath.Join(ix.Dir, IndexFile)
	b, err := regfile.ReadFile(file, MaxIndexSize, "an index of copies")
	return ix.decode(file, b, err)
}

// OpenIndex reads the index of the copies in the experiment directory root, opened by the caller,
// to add copies to it: everything the index reads and writes beneath root is reached without
// following a symbolic link (safedir), so that an experiment of another user cannot make er write
// elsewhere. The caller keeps root open while it uses the index.
func OpenIndex(root *safedir.Dir) (*Index, error) {
	ix := &Index{Dir: root.Join(experiment.ArchivesDir), root: root}
	name := path.Join(experiment.ArchivesDir, IndexFile)
	var b []byte
	f, err := root.OpenFile(name)
	if err == nil {
		b, err = regfile.ReadOpened(f, MaxIndexSize, "an index of copies")
		f.Close()
	}
	return ix.decode(root.Join(name), b, err)
}

// decode fills ix from the index file's content b, read with error err.
func (ix *Index) decode(file string, b []byte, err error) (*Index, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return ix, nil
	}
	if err != nil {
		return nil, err
	}
	if ix.Copies, err = decodeIndex(b); err != nil {
		return nil, fmt.Errorf("%s: %v; %s", file, err, indexHint)
	}
	return ix, nil
}

// dirs opens the experiment directory to write into and its archives directory (made if need be),
// and returns a function that closes them: the experiment is the one OpenIndex was given, or, for
// an index read by path, the directory above Dir opened now (made first if it is missing).
func (ix *Index) dirs() (root, archives *safedir.Dir, done func(), err error) {
	root = ix.root
	if root == nil {
		exp := filepath.Dir(ix.Dir)
		if err := os.MkdirAll(exp, 0o755); err != nil {
			return nil, nil, nil, err
		}
		if root, err = safedir.Open(exp); err != nil {
			return nil, nil, nil, err
		}
	}
	if archives, err = root.MkdirAll(experiment.ArchivesDir, 0o755); err != nil {
		if root != ix.root {
			root.Close()
		}
		return nil, nil, nil, err
	}
	return root, archives, func() {
		archives.Close()
		if root != ix.root {
			root.Close()
		}
	}, nil
}

// Write writes the index to its directory atomically.
func (ix *Index) Write() error {
	b, err := encodeIndex(ix.Copies)
	if err != nil {
		return err
	}
	_, dir, done, err := ix.dirs()
	if err != nil {
		return err
	}
	defer done()
	return dir.WriteFile(IndexFile, b, 0o644)
}

// Lookup returns the last copy of kind of the file at path for which match (nil: any) is true
// and whose file is present in the archives directory with its recorded size.
func (ix *Index) Lookup(kind, path string, match func(Copy) bool) (Copy, bool) {
	for i := len(ix.Copies) - 1; i >= 0; i-- {
		c := ix.Copies[i]
		if c.Kind != kind || c.Path != path || match != nil && !match(c) {
			continue
		}
		if st, err := ix.stat(c); err == nil && st.Mode().IsRegular() && st.Size() == c.FileSize() {
			return c, true
		}
	}
	return Copy{}, false
}

// stat describes the file of copy c: beneath the root without links where the index has one.
func (ix *Index) stat(c Copy) (fs.FileInfo, error) {
	if ix.root != nil {
		return ix.root.Lstat(path.Join(experiment.ArchivesDir, c.File))
	}
	return os.Stat(ix.FilePath(c))
}

// FilePath is the path of copy c.
func (ix *Index) FilePath(c Copy) string { return filepath.Join(ix.Dir, filepath.FromSlash(c.File)) }

// Add copies the file at src, of kind KindObject (with its build id) or KindSource, into the
// archives directory and records it in the index (Write saves the index). A file that the index
// already holds, with the same size, modification time and build id, is not copied again unless
// force is set; added says whether it was copied. The file must not change while it is copied.
func (ix *Index) Add(kind, src, buildID string, force bool) (c Copy, added bool, err error) {
	sub := map[string]string{KindObject: objectsSubdir, KindSource: sourcesSubdir}[kind]
	if sub == "" {
		return Copy{}, false, fmt.Errorf("archive: unknown kind of copy %q", kind)
	}
	check := map[string]func(string) error{KindSource: CheckSource, KindObject: CheckObject}[kind]
	if err := check(src); err != nil {
		return Copy{}, false, err
	}
	if err := regfile.Check(src); err != nil {
		return Copy{}, false, err
	}
	st, err := os.Stat(src)
	if err != nil {
		return Copy{}, false, err
	}
	if !force {
		same := func(c Copy) bool {
			return c.Size == st.Size() && c.Mtime == st.ModTime().UnixNano() && c.BuildID == buildID
		}
		if c, ok := ix.Lookup(kind, src, same); ok {
			return c, false, nil
		}
	}
	root, dir, done, err := ix.dirs()
	if err != nil {
		return Copy{}, false, err
	}
	defer done()
	sum, tmp, err := copyToTemp(dir, src, st, kind == KindObject)
	if err != nil {
		return Copy{}, false, err
	}
	defer dir.Remove(tmp) // after the rename, there is nothing left to remove
	st2, err := os.Stat(src)
	if err != nil {
		return Copy{}, false, err
	}
	if st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		return Copy{}, false, fmt.Errorf("%s changed while it was being copied; try again", src)
	}
	c = Copy{Kind: kind, Path: src, Size: st.Size(), Mtime: st.ModTime().UnixNano(), BuildID: buildID, SHA256: sum,
		File: path.Join(sub, sum[:hashDirLength], safeName(src))}
	into, err := root.MkdirAll(path.Join(experiment.ArchivesDir, path.Dir(c.File)), 0o755)
	if err != nil {
		return Copy{}, false, err
	}
	defer into.Close()
	if err := dir.Rename(tmp, into, path.Base(c.File)); err != nil {
		return Copy{}, false, err
	}
	ix.replace(c)
	return c, true, nil
}

// AddCompact writes data, the compact archive of the load object at src (its build id, size and
// modification time those of the file profiled, orig the file's status: its mode and group decide
// the archive's, as a copy's), into the archives directory and records it in the index (Write saves
// the index). One that the index already holds for the same file (build id, size and modification
// time) is kept unless force is set; added says whether it was written.
func (ix *Index) AddCompact(src, buildID string, size, mtime int64, orig fs.FileInfo, data []byte, force bool) (c Copy, added bool, err error) {
	if !force {
		if c, ok := ix.Lookup(KindCompact, src, func(c Copy) bool { return c.Size == size && c.Mtime == mtime && c.BuildID == buildID }); ok {
			return c, false, nil
		}
	}
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	c = Copy{Kind: KindCompact, Path: src, Size: size, Mtime: mtime, BuildID: buildID, SHA256: sum, Length: int64(len(data)),
		File: path.Join(compactSubdir, sum[:hashDirLength], safeName(src))}
	root, dir, done, err := ix.dirs()
	if err != nil {
		return Copy{}, false, err
	}
	defer done()
	into, err := root.MkdirAll(path.Join(experiment.ArchivesDir, path.Dir(c.File)), 0o755)
	if err != nil {
		return Copy{}, false, err
	}
	defer into.Close()
	if err := into.WriteFileWith(path.Base(c.File), 0o600, func(f *os.File) error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		return chmodCopy(f, orig, dir)
	}); err != nil {
		return Copy{}, false, err
	}
	ix.replace(c)
	return c, true, nil
}

// replace records c in the index, in place of an entry of the same kind, path and content.
func (ix *Index) replace(c Copy) {
	kept := ix.Copies[:0]
	for _, o := range ix.Copies {
		if o.Kind != c.Kind || o.Path != c.Path || o.SHA256 != c.SHA256 {
			kept = append(kept, o)
		}
	}
	ix.Copies = append(kept, c)
}

// copyMode is the mode of a copy of a file of status orig, made as a file of group gid in the
// archives directory of mode dir: no one may read the copy who may not read the original, as far as
// its mode says (the archives may be read by others: a 0600 source copied 0644 would be anyone's).
// The copy's owner, who read the original, may read it; its group, where the original grants its
// own group read and the copy's group is the original's (a set-group-ID archives directory gives
// its copies its own group), or everyone may read the original; others, where everyone may read
// the original; never write or execute but the owner's write where the original has it, so never
// more than 0644; and the group and others only where the archives directory lets them read too.
func copyMode(orig fs.FileInfo, gid uint32, dir fs.FileMode) fs.FileMode {
	src := orig.Mode().Perm()
	m := fs.FileMode(0o400) | src&0o200 | src&0o004
	same := false
	if st, ok := orig.Sys().(*syscall.Stat_t); ok {
		same = st.Gid == gid
	}
	if src&0o040 != 0 && (same || src&0o004 != 0) {
		m |= 0o040
	}
	return m & (0o600 | dir.Perm()&0o044)
}

// chmodCopy gives the open file f, a copy of a file of status orig in the archives directory dir,
// its mode (copyMode).
func chmodCopy(f *os.File, orig fs.FileInfo, dir *safedir.Dir) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status to give it a mode by", f.Name())
	}
	dm := fs.FileMode(0o700) // where the directory cannot be examined, the copy is the owner's only
	if di, err := dir.Stat(); err == nil {
		dm = di.Mode()
	}
	return f.Chmod(copyMode(orig, st.Gid, dm))
}

// elfMagic starts every ELF file.
const elfMagic = "\x7fELF"

// copyToTemp copies src, whose status was st, to a new temporary file in dir (made without
// following a link), gives it its mode (copyMode) and src's modification time through its
// descriptor, and returns the SHA-256 of what it copied and the temporary file's name in dir. src
// must be a regular file of st's size (an ELF file where elf is set): one that is not, or has grown
// or shrunk, is an error. The SHA-256 of
// a file that was copied before, unchanged since (the same device, inode, size, modification and
// change times), comes from the cache, and the copy is then made by the kernel
// (copy_file_range): hashing and copying libc's 1.9 MB through this program took some 3 ms of
// every collection whose stacks hold libc.
func copyToTemp(dir *safedir.Dir, src string, st fs.FileInfo, elf bool) (sum, tmp string, err error) {
	size := st.Size()
	in, fi, err := regfile.Open(src)
	if err != nil {
		return "", "", err
	}
	defer in.Close()
	if fi.Size() != size {
		return "", "", fmt.Errorf("%s changed while it was being copied; try again", src)
	}
	if elf {
		magic := make([]byte, len(elfMagic))
		if _, err := in.ReadAt(magic, 0); err != nil || string(magic) != elfMagic {
			return "", "", fmt.Errorf("%s is not an ELF file, so not a load object", src)
		}
	}
	out, tmp, err := dir.CreateTemp(".copy-", ".tmp", 0o600)
	if err != nil {
		return "", "", err
	}
	key := sumCacheFile(src, fi)
	sum = cachedSum(key)
	var h hash.Hash
	var n int64
	if sum != "" {
		n, err = io.Copy(out, io.LimitReader(in, size+1))
	} else {
		h = sha256.New()
		n, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(in, size+1))
	}
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes read, not %d: it changed while it was being copied; try again", n, size)
	}
	if err == nil {
		err = chmodCopy(out, fi, dir)
	}
	if err == nil {
		err = safedir.Chtimes(out, st.ModTime(), st.ModTime())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.Remove(tmp)
		return "", "", fmt.Errorf("copying %s: %w", src, err)
	}
	if h != nil {
		sum = hex.EncodeToString(h.Sum(nil))
		storeSum(key, sum)
	}
	return sum, tmp, nil
}

// safeName is the base name of p with every byte other than A-Z a-z 0-9 . _ - + (and a leading
// '.') replaced by '_', cut to 64 bytes.
func safeName(p string) string {
	b := []byte(path.Base(p))
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+'
		if !ok || i == 0 && c == '.' {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 || string(b) == "_" {
		return "_file"
	}
	return string(b)
}

// FileSHA256 returns the hex SHA-256 of the file's content.
func FileSHA256(file string) (string, error) {
	f, _, err := regfile.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// archiveDirs lists the experiments' directories whose archives hold their copies: each
// experiment's own, then, for a subexperiment, its founder's.
func archiveDirs(dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, e := range []string{d, experiment.FounderDir(d)} {
			if e != "" && !seen[filepath.Clean(e)] {
				seen[filepath.Clean(e)] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// FindObject returns the path of the copy of the load object that archive a describes, kept in
// the archives of the experiments dirs (or of their founders): a copy of a.Path with a's build id
// or, when a has none, with its size and modification time; where there is no whole copy, its
// compact archive (compact true). It returns "" when there is neither; an error when an index
// cannot be read.
func FindObject(dirs []string, a *experiment.Archive) (file string, compact bool, err error) {
	if a == nil {
		return "", false, nil
	}
	match := func(c Copy) bool {
		if a.BuildID != "" {
			return c.BuildID == a.BuildID
		}
		return c.Size == a.Size && c.Mtime == a.Mtime
	}
	var ixs []*Index
	for _, d := range archiveDirs(dirs) {
		ix, err := ReadIndex(d)
		if err != nil {
			return "", false, err
		}
		ixs = append(ixs, ix)
	}
	for _, kind := range []string{KindObject, KindCompact} { // a whole copy holds everything
		for _, ix := range ixs {
			if c, ok := ix.Lookup(kind, a.Path, match); ok {
				return ix.FilePath(c), kind == KindCompact, nil
			}
		}
	}
	return "", false, nil
}

// FindSource returns the copy of the source file named name (as the debug information names
// it) kept in the archives of the experiments dirs (or of their founders), and its path; ok is
// false when there is none. The error says which index cannot be read.
func FindSource(dirs []string, name string) (c Copy, file string, ok bool, err error) {
	for _, d := range archiveDirs(dirs) {
		ix, err := ReadIndex(d)
		if err != nil {
			return Copy{}, "", false, err
		}
		if c, ok := ix.Lookup(KindSource, name, nil); ok {
			return c, ix.FilePath(c), true, nil
		}
	}
	return Copy{}, "", false, nil
}

// SameFile checks that the file at path is the load object that archive a describes: its GNU build
// id equals the archive's, or, when the archive has none, its size and modification time are the
// archive's.
func SameFile(path string, a *experiment.Archive) error {
	if a == nil {
		return errors.New("the experiment has no archive for it to check the file against")
	}
	fh, st, err := regfile.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	if a.BuildID != "" {
		f, err := objfile.NewFile(path, fh)
		if err != nil {
			return err
		}
		id := f.BuildID()
		if id != a.BuildID {
			return fmt.Errorf("%s has changed since the experiment (build id %s, was %s)", path, orNone(id), a.BuildID)
		}
		return nil
	}
	if st.Size() != a.Size || st.ModTime().UnixNano() != a.Mtime {
		return fmt.Errorf("%s has changed since the experiment (size %d, modified %d; was %d, %d)", path, st.Size(), st.ModTime().UnixNano(), a.Size, a.Mtime)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// The index in XML.
type xmlIndex struct {
	XMLName  xml.Name  `xml:"files"`
	Version  string    `xml:"version,attr"`
	Objects  []xmlCopy `xml:"object"`
	Sources  []xmlCopy `xml:"source"`
	Compacts []xmlCopy `xml:"compact"`
}

type xmlCopy struct {
	Path    qstr   `xml:"path,attr"`
	Copy    string `xml:"copy,attr"`
	Size    int64  `xml:"size,attr"`
	Mtime   int64  `xml:"mtime,attr"`
	BuildID string `xml:"buildid,attr,omitempty"`
	SHA256  string `xml:"sha256,attr"`
	Length  int64  `xml:"length,attr,omitempty"`
}

const indexComment = "<!-- copies of load objects and source files; the format is described in docs/experiment-format.md -->\n"

func encodeIndex(copies []Copy) ([]byte, error) {
	x := xmlIndex{Version: IndexVersion}
	for _, c := range copies {
		xc := xmlCopy{Path: qstr(c.Path), Copy: c.File, Size: c.Size, Mtime: c.Mtime, BuildID: c.BuildID, SHA256: c.SHA256, Length: c.Length}
		switch c.Kind {
		case KindObject:
			x.Objects = append(x.Objects, xc)
		case KindCompact:
			x.Compacts = append(x.Compacts, xc)
		default:
			x.Sources = append(x.Sources, xc)
		}
	}
	b, err := xml.MarshalIndent(x, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header+indexComment), b...), '\n'), nil
}

func decodeIndex(b []byte) ([]Copy, error) {
	var x xmlIndex
	d := xml.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	for { // after the root element, only comments and blanks
		off := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
			continue
		case xml.CharData:
			if len(bytes.Trim(t, " \t\r\n")) == 0 {
				continue
			}
		}
		return nil, fmt.Errorf("offset %d: something after the root element <files>: an index has one root element", off)
	}
	if major, _, _ := strings.Cut(x.Version, "."); major != "1" {
		return nil, fmt.Errorf("version %q, this er reads version 1.x", x.Version)
	}
	var out []Copy
	for _, k := range []struct {
		kind, sub string
		list      []xmlCopy
	}{{KindObject, objectsSubdir, x.Objects}, {KindSource, sourcesSubdir, x.Sources}, {KindCompact, compactSubdir, x.Compacts}} {
		for i, xc := range k.list {
			c := Copy{Kind: k.kind, Path: string(xc.Path), File: xc.Copy, Size: xc.Size, Mtime: xc.Mtime, BuildID: xc.BuildID, SHA256: xc.SHA256}
			if k.kind == KindCompact {
				c.Length = xc.Length
			}
			if err := checkCopy(c, k.sub); err != nil {
				return nil, fmt.Errorf("%s %d (%q): %v", k.kind, i+1, c.Path, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// checkCopy checks an index entry: its copy must be sub/HASH/NAME with HASH the start of its SHA-256.
func checkCopy(c Copy, sub string) error {
	if len(c.SHA256) != 64 || strings.Trim(c.SHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("sha256 %q is not 64 lower-case hex digits", c.SHA256)
	}
	parts := strings.Split(c.File, "/")
	if len(parts) != 3 || parts[0] != sub || parts[1] != c.SHA256[:hashDirLength] || parts[2] == "" || parts[2] == "." || parts[2] == ".." {
		return fmt.Errorf("copy %q, want %s/%s/NAME", c.File, sub, c.SHA256[:hashDirLength])
	}
	if c.Size < 0 || c.Length < 0 {
		return fmt.Errorf("size %d, length %d", c.Size, c.Length)
	}
	return nil
}

// qstr is a string stored in XML exactly (experiment.QString).
type qstr = experiment.QString
