package coldread

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// evicted writes a file of n pages of random bytes and drops it from the page cache; it skips where
// the file system keeps files in memory (tmpfs) or the kernel does not say what is cached.
func evicted(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n*align)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "cold")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Evict(path); err != nil {
		t.Fatal(err)
	}
	res, err := Resident(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range res {
		if in {
			t.Skipf("page %d of %s stays cached after POSIX_FADV_DONTNEED (a file system in memory?)", i, path)
		}
	}
	return path, data
}

// TestReadLeavesCache: a file read through File, partly cached before, gives its bytes and leaves
// the cache as it was: the pages cached before still are, the others are not.
func TestReadLeavesCache(t *testing.T) {
	path, data := evicted(t, 64)
	// Pages 3 to 9 cached by a plain read, as the target's own use would (without readahead, which
	// would cache the whole file).
	f, _ := os.Open(path)
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
	if _, err := f.ReadAt(make([]byte, 7*align), 3*align); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)-100)
	if n, err := c.ReadAt(got, 50); err != nil || n != len(got) || !bytes.Equal(got, data[50:len(data)-50]) {
		t.Fatalf("ReadAt: %d bytes, %v; equal %v", n, err, bytes.Equal(got, data[50:len(data)-50]))
	}
	// Past the end: io.EOF with what there is.
	tail := make([]byte, 200)
	if n, err := c.ReadAt(tail, int64(len(data)-100)); n != 100 || err != io.EOF || !bytes.Equal(tail[:100], data[len(data)-100:]) {
		t.Errorf("ReadAt at the end: %d, %v", n, err)
	}
	direct := c.Direct()
	c.Close()
	res, err := Resident(path)
	if err != nil {
		t.Fatal(err)
	}
	var wrong []int
	for i, in := range res {
		if in != (i >= 3 && i < 10) {
			wrong = append(wrong, i)
		}
	}
	if len(wrong) > 0 {
		t.Errorf("pages whose caching changed (want 3 to 9 cached, no other): %v", wrong)
	}
	if !direct {
		t.Errorf("%s was read plainly, not directly", path)
	}
}

// TestReadSizes: reads of every size, small (through the kept chunks) and large (through a buffer of
// their own), at every alignment, across chunk boundaries and the end of the file, give the file's
// bytes, and io.EOF where they reach past its end.
func TestReadSizes(t *testing.T) {
	path, data := evicted(t, 700) // 2.7 MiB: more than a large read
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 300 {
		size := r.IntN(3 * largeRead / 2)
		if i%2 == 0 {
			size = r.IntN(3 * chunkBytes)
		}
		off := int64(r.IntN(len(data) + 100))
		got := make([]byte, size)
		n, err := c.ReadAt(got, off)
		want := []byte{}
		if off < int64(len(data)) {
			want = data[off:min(off+int64(size), int64(len(data)))]
		}
		wantErr := error(nil)
		if len(want) < size {
			wantErr = io.EOF
		}
		if n != len(want) || err != wantErr || !bytes.Equal(got[:n], want) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v (bytes equal: %v)", size, off, n, err, len(want), wantErr, bytes.Equal(got[:n], want))
		}
	}
}
