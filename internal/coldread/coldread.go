// Package coldread reads files past the page cache (O_DIRECT), so that a read leaves the cache as it found it.
package coldread

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is a file opened for reads that do not go through the page cache. er collect reads the load
// objects a target maps (their call frame information, when a stack first needs it) while the target
// runs: a page that er's read brought into the cache would have been a minor fault for the target
// where it would have been a major one, and the Text Page Fault metric would measure er.
//
// The reads are direct (O_DIRECT: from the disk into er's memory, in aligned chunks, of which the last
// few are kept), so no page is cached that was not, and none is dropped that was. A file system that
// does not take direct reads (tmpfs, which has no disk to read from, some FUSE file systems) gets plain
// reads: they warm the cache as any read does. A direct read costs a disk read even for pages that
// are cached: a table is read once per load object, when a stack first passes through it. And it
// writes back the file's dirty pages first, where there are some (a program run as soon as it was
// linked): writes the kernel would have made a little later.
type File struct {
	f      *os.File
	direct bool
	chunks [nChunks]chunk // the last chunks read, for the many small reads of an ELF file's headers
	next   int            // the chunk to reuse next
}

type chunk struct {
	off int64  // the file offset of data[0]
	n   int    // the bytes of data read (fewer than chunkBytes at the end of the file)
	buf []byte // chunkBytes, page-aligned; nil until first used
}

const (
	align      = 4096     // direct reads' alignment of offsets, lengths and buffers (a page is enough for every block size)
	chunkBytes = 64 << 10 // the unit of a small read
	nChunks    = 4
	largeRead  = 1 << 20 // a read at least this large goes directly into its own aligned buffer
)

// Open opens path for direct reads, or plain ones where its file system does not take them.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err == nil {
		return &File{f: f, direct: true}, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, err
	}
	if f, err = os.Open(path); err != nil {
		return nil, err
	}
	return &File{f: f}, nil
}

// Direct reports whether the reads bypass the page cache.
func (c *File) Direct() bool { return c.direct }

// ReadAt reads len(p) bytes at off, as io.ReaderAt.
func (c *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("coldread: negative offset")
	}
	if !c.direct {
		return c.f.ReadAt(p, off)
	}
	n, err := c.readAt(p, off)
	if errors.Is(err, unix.EINVAL) && n == 0 {
		// The file system opened the file for direct reads and refuses them: plain reads.
		c.direct = false
		return c.f.ReadAt(p, off)
	}
	return n, err
}

func (c *File) readAt(p []byte, off int64) (int, error) {
	if len(p) >= largeRead {
		return c.readLarge(p, off)
	}
	done := 0
	for done < len(p) {
		at := off + int64(done)
		ch, err := c.chunk(at &^ (chunkBytes - 1))
		if err != nil {
			return done, err
		}
		i := int(at - ch.off)
		if i >= ch.n {
			return done, io.EOF
		}
		done += copy(p[done:], ch.buf[i:ch.n])
	}
	return done, nil
}

// chunk returns the chunk at aligned offset off, read now unless it is one of the last read.
func (c *File) chunk(off int64) (*chunk, error) {
	for i := range c.chunks {
		if ch := &c.chunks[i]; ch.buf != nil && ch.off == off {
			return ch, nil
		}
	}
	ch := &c.chunks[c.next]
	c.next = (c.next + 1) % nChunks
	if ch.buf == nil {
		ch.buf = alignedBuf(chunkBytes)
	}
	ch.off, ch.n = off, 0
	n, err := c.readDirect(ch.buf, off)
	if err != nil {
		ch.buf, ch.off = nil, 0 // (not kept as a chunk of this offset)
		return nil, err
	}
	ch.n = n
	return ch, nil
}

// readLarge reads a large range through an aligned buffer of its own.
func (c *File) readLarge(p []byte, off int64) (int, error) {
	start := off &^ (align - 1)
	end := (off + int64(len(p)) + align - 1) &^ (align - 1)
	buf := alignedBuf(int(end - start))
	n, err := c.readDirect(buf, start)
	if err != nil {
		return 0, err
	}
	if int64(n) <= off-start {
		return 0, io.EOF
	}
	got := copy(p, buf[off-start:n])
	if got < len(p) {
		return got, io.EOF
	}
	return got, nil
}

// readDirect fills buf (aligned) from aligned offset off, to the end of the file at most.
func (c *File) readDirect(buf []byte, off int64) (int, error) {
	done := 0
	for done < len(buf) {
		n, err := unix.Pread(int(c.f.Fd()), buf[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, &os.PathError{Op: "read", Path: c.f.Name(), Err: err}
		}
		if n == 0 {
			break
		}
		done += n
		if n%align != 0 {
			break // the end of the file
		}
	}
	return done, nil
}

// alignedBuf returns n bytes whose first is page-aligned.
func alignedBuf(n int) []byte {
	b := make([]byte, n+align)
	skip := int(-uintptr(unsafe.Pointer(&b[0])) & (align - 1))
	return b[skip : skip+n : skip+n]
}

// Name is the file's name, as Open was given it.
func (c *File) Name() string { return c.f.Name() }

// Stat is the file's os.Stat.
func (c *File) Stat() (os.FileInfo, error) { return c.f.Stat() }

// Close closes the file.
func (c *File) Close() error { return c.f.Close() }

// Resident reports which pages of the file at path are in the page cache (mincore of a mapping of
// it, which touches none), for tests and measurements. The kernel tells it for a file the caller
// owns or may write, and to root; to others it says that every page is.
func Resident(path string) ([]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+align-1)/align)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return nil, &os.PathError{Op: "mincore", Path: path, Err: errno}
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out, nil
}

// Evict drops the file's pages from the page cache as far as the kernel will (pages that a process
// has mapped stay), after writing back those that are dirty: for tests of what reads bring in.
func Evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
